#pragma once
// ByteWriter / ByteReader: the plain little-endian encoding of what rank 0 sends the other ranks
// (the setup, each step's plan). Both ends speak the same protocol version (the hello checks it)
// on the same kind of machine (little-endian x86-64 / arm64), so values are written as they lie in
// memory; a reader that runs past its bytes throws DriftError.
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "core/error.h"

namespace drift {

class ByteWriter {
 public:
  template <typename T>
  void put(const T& value) {
    static_assert(std::is_trivially_copyable_v<T>);
    const auto* p = reinterpret_cast<const uint8_t*>(&value);
    bytes_.insert(bytes_.end(), p, p + sizeof(T));
  }
  template <typename T>
  void put(const std::vector<T>& values) {
    static_assert(std::is_trivially_copyable_v<T>);
    put<uint64_t>(values.size());
    const auto* p = reinterpret_cast<const uint8_t*>(values.data());
    bytes_.insert(bytes_.end(), p, p + values.size() * sizeof(T));
  }
  void put(const std::string& text) { put(std::vector<char>(text.begin(), text.end())); }
  std::vector<uint8_t>& bytes() { return bytes_; }

 private:
  std::vector<uint8_t> bytes_;
};

class ByteReader {
 public:
  explicit ByteReader(const std::vector<uint8_t>& bytes) : bytes_(bytes) {}
  template <typename T>
  T get() {
    static_assert(std::is_trivially_copyable_v<T>);
    T value;
    std::memcpy(&value, take(sizeof(T)), sizeof(T));
    return value;
  }
  template <typename T>
  std::vector<T> get_vector() {
    static_assert(std::is_trivially_copyable_v<T>);
    const auto n = get<uint64_t>();
    if (n > (bytes_.size() - at_) / sizeof(T)) fail("a tensor-parallel message is truncated (a list of {} items)", n);
    std::vector<T> values(n);
    if (n > 0) std::memcpy(values.data(), take(n * sizeof(T)), n * sizeof(T));
    return values;
  }
  std::string get_string() {
    const std::vector<char> chars = get_vector<char>();
    return std::string(chars.begin(), chars.end());
  }
  bool done() const { return at_ == bytes_.size(); }

 private:
  const uint8_t* take(size_t n) {
    if (n > bytes_.size() - at_) fail("a tensor-parallel message is truncated ({} bytes past its end)", n);
    const uint8_t* p = bytes_.data() + at_;
    at_ += n;
    return p;
  }
  const std::vector<uint8_t>& bytes_;
  size_t at_ = 0;
};

}  // namespace drift
