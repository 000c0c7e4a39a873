#include "core/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_input.h"
#include "core/text_file.h"

namespace drift {

// Tensors are exposed zero-copy and the format is little-endian, so a big-endian host would
// need byte swapping everywhere; we do not support one.
static_assert(std::endian::native == std::endian::little, "safetensors I/O assumes little-endian");

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr size_t kHeaderLengthBytes = 8;
// Guards against absurd header lengths before we try to parse them (the reference
// implementation uses the same 100 MB limit).
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

const char* safetensors_dtype_name(DType dtype) {
  switch (dtype) {
    case DType::F32: return "F32";
    case DType::F16: return "F16";
    case DType::BF16: return "BF16";
    case DType::I32: return "I32";
    case DType::I64:
      return "I64";
    case DType::Bool:
      return "BOOL";
    case DType::U8:
      return "U8";
  }
  return "?";
}

DType parse_dtype(const std::string& s, const std::string& tensor, const std::string& file) {
  if (s == "F32") return DType::F32;
  if (s == "F16") return DType::F16;
  if (s == "BF16") return DType::BF16;
  if (s == "I32") return DType::I32;
  if (s == "I64") return DType::I64;
  if (s == "BOOL") return DType::Bool;
  if (s == "U8") return DType::U8;
  fail("safetensors file '{}': tensor '{}' has unsupported dtype '{}' (supported: F32, F16, BF16, I32, I64, BOOL, U8)",
       file, tensor, s);
}

std::vector<int64_t> parse_shape(const json& j, const std::string& tensor, const std::string& file) {
  if (!j.is_array()) fail("safetensors file '{}': tensor '{}' has a non-array shape {}", file, tensor, j.dump());
  std::vector<int64_t> shape;
  for (const json& d : j) {
    if (!d.is_number_integer() || d.get<int64_t>() < 0)
      fail("safetensors file '{}': tensor '{}' has an invalid dimension {} in shape {}", file, tensor,
           d.dump(), j.dump());
    shape.push_back(d.get<int64_t>());
  }
  return shape;
}

// numel * element size, or nullopt-like failure when it overflows (a hostile header could
// otherwise wrap around and pass the size check).
size_t checked_nbytes(const std::vector<int64_t>& shape, DType dtype, const std::string& tensor,
                      const std::string& file) {
  size_t n = dtype_size(dtype);
  for (int64_t d : shape) {
    if (__builtin_mul_overflow(n, static_cast<size_t>(d), &n))
      fail("safetensors file '{}': tensor '{}' shape [{}] overflows", file, tensor, fmt::join(shape, ", "));
  }
  return n;
}

// Parses one header entry and checks it against the data region [data, data + data_size).
TensorInfo parse_entry(const std::string& name, const json& entry, const uint8_t* data, size_t data_size,
                       const std::string& file) {
  if (!entry.is_object()) fail("safetensors file '{}': entry for tensor '{}' is not an object", file, name);
  for (const char* key : {"dtype", "shape", "data_offsets"})
    if (!entry.contains(key)) fail("safetensors file '{}': tensor '{}' has no '{}'", file, name, key);
  if (!entry["dtype"].is_string())
    fail("safetensors file '{}': tensor '{}' has a non-string dtype {}", file, name, entry["dtype"].dump());

  TensorInfo info;
  info.name = name;
  info.file = file;
  info.dtype = parse_dtype(entry["dtype"].get<std::string>(), name, file);
  info.shape = parse_shape(entry["shape"], name, file);

  const json& offsets = entry["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
      !offsets[1].is_number_unsigned())
    fail("safetensors file '{}': tensor '{}' has invalid data_offsets {}", file, name, offsets.dump());
  uint64_t begin = offsets[0].get<uint64_t>(), end = offsets[1].get<uint64_t>();
  if (begin > end)
    fail("safetensors file '{}': tensor '{}' data_offsets [{}, {}] are reversed", file, name, begin, end);
  if (end > data_size)
    fail("safetensors file '{}': tensor '{}' data_offsets [{}, {}] extend beyond the data section "
         "({} bytes); the file is truncated or corrupt",
         file, name, begin, end, data_size);
  size_t expected = checked_nbytes(info.shape, info.dtype, name, file);
  if (end - begin != expected)
    fail("safetensors file '{}': tensor '{}' holds {} bytes but {} [{}] needs {}", file, name, end - begin,
         safetensors_dtype_name(info.dtype), fmt::join(info.shape, ", "), expected);
  info.data = data + begin;
  info.nbytes = expected;
  return info;
}

std::map<std::string, std::string> parse_metadata(const json& j, const std::string& file) {
  if (!j.is_object()) fail("safetensors file '{}': __metadata__ is not an object", file);
  std::map<std::string, std::string> out;
  // The format says string -> string; other writers sometimes store numbers, which we keep as
  // their JSON text rather than rejecting an otherwise valid checkpoint.
  for (const auto& [k, v] : j.items()) out[k] = v.is_string() ? v.get<std::string>() : v.dump();
  return out;
}

// The tensors must tile the data section: sorted by offset each starts where the previous one
// ended, the first at 0 and the last at the end. This rules out overlapping tensors (one write
// would change another) and hidden bytes (polyglot files), as the reference reader does.
void check_tiling(const std::map<std::string, TensorInfo>& tensors, const uint8_t* data, size_t data_size,
                  const std::string& file) {
  std::vector<const TensorInfo*> sorted;
  for (const auto& [name, info] : tensors) sorted.push_back(&info);
  std::sort(sorted.begin(), sorted.end(), [](const TensorInfo* a, const TensorInfo* b) {
    return std::pair(a->data, a->nbytes) < std::pair(b->data, b->nbytes);
  });
  size_t expected = 0;
  const TensorInfo* previous = nullptr;
  for (const TensorInfo* info : sorted) {
    const size_t begin = static_cast<size_t>(static_cast<const uint8_t*>(info->data) - data);
    if (begin < expected)
      fail("safetensors file '{}': tensor '{}' (data_offsets [{}, {}]) overlaps tensor '{}' (which ends at {})", file,
           info->name, begin, begin + info->nbytes, previous->name, expected);
    if (begin > expected)
      fail("safetensors file '{}': bytes [{}, {}) of the data section belong to no tensor (before tensor '{}')", file,
           expected, begin, info->name);
    expected = begin + info->nbytes;
    previous = info;
  }
  if (expected != data_size)
    fail("safetensors file '{}': bytes [{}, {}) at the end of the data section belong to no tensor", file, expected,
         data_size);
}

// Unmaps on scope exit unless released: the constructor may throw after mapping.
struct MappingGuard {
  void* addr;
  size_t size;
  ~MappingGuard() {
    if (addr) munmap(addr, size);
  }
};

}  // namespace

SafetensorsHeader parse_safetensors_buffer(const uint8_t* bytes, size_t size, const std::string& path) {
  if (size < kHeaderLengthBytes)
    fail("safetensors file '{}' is too small ({} bytes) to hold the 8-byte header length", path, size);
  uint64_t header_len = 0;
  std::memcpy(&header_len, bytes, sizeof(header_len));
  if (header_len > size - kHeaderLengthBytes)
    fail("safetensors file '{}': header length {} exceeds the file size ({} bytes); truncated or not a "
         "safetensors file",
         path, header_len, size);
  if (header_len > kMaxHeaderBytes)
    fail("safetensors file '{}': header length {} exceeds the {} byte limit", path, header_len, kMaxHeaderBytes);
  const uint8_t* header_begin = bytes + kHeaderLengthBytes;
  if (header_len == 0 || header_begin[0] != '{')
    fail("safetensors file '{}': the JSON header must start with '{{'", path);
  json header = parse_json_input(std::string_view(reinterpret_cast<const char*>(header_begin), header_len),
                                 fmt::format("safetensors file '{}': JSON header", path));
  if (!header.is_object()) fail("safetensors file '{}': JSON header is not an object", path);

  const uint8_t* data = header_begin + header_len;
  const size_t data_size = size - kHeaderLengthBytes - header_len;
  SafetensorsHeader out;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      out.metadata = parse_metadata(entry, path);
      continue;
    }
    out.tensors.emplace(name, parse_entry(name, entry, data, data_size, path));
  }
  check_tiling(out.tensors, data, data_size, path);
  return out;
}

SafetensorsFile::SafetensorsFile(const std::string& path) : path_(path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail("cannot open safetensors file '{}': {}", path, std::strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    fail("cannot stat safetensors file '{}': {}", path, std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    fail("safetensors file '{}' is not a regular file", path);
  }
  size_t size = static_cast<size_t>(st.st_size);
  if (size < kHeaderLengthBytes) {
    ::close(fd);
    fail("safetensors file '{}' is too small ({} bytes) to hold the 8-byte header length", path, size);
  }
  void* addr = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  int map_err = errno;
  ::close(fd);  // the mapping stays valid without the descriptor
  if (addr == MAP_FAILED) fail("cannot mmap safetensors file '{}': {}", path, std::strerror(map_err));
  MappingGuard guard{addr, size};
  SafetensorsHeader header = parse_safetensors_buffer(static_cast<const uint8_t*>(addr), size, path);
  tensors_ = std::move(header.tensors);
  metadata_ = std::move(header.metadata);
  mapping_ = addr;
  mapping_size_ = size;
  guard.addr = nullptr;
}

SafetensorsFile::~SafetensorsFile() {
  if (mapping_) munmap(mapping_, mapping_size_);
}

namespace {

// A shard path is followed only if it stays inside the checkpoint folder by its spelling: a
// relative path with no ".." step. (Symbolic links inside the folder are followed, as in the
// Hugging Face cache, whose snapshot files link into its blob store.)
bool stays_inside_folder(const std::string& shard) {
  const fs::path path(shard);
  if (shard.empty() || shard.find('\0') != std::string::npos) return false;
  if (path.is_absolute() || path.has_root_name() || path.has_root_directory()) return false;
  for (const fs::path& part : path)
    if (part == "..") return false;
  return path.has_filename();
}

}  // namespace

// model.safetensors.index.json: {"weight_map": {"tensor": "shard file", ...}, ...}.
std::map<std::string, std::string> parse_safetensors_index(const std::string& json_text,
                                                           const std::string& index_path) {
  json j = parse_json_input(json_text, fmt::format("safetensors index '{}'", index_path));
  if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
    fail("safetensors index '{}' has no 'weight_map' object", index_path);
  std::map<std::string, std::string> map;
  for (const auto& [name, shard] : j["weight_map"].items()) {
    if (!shard.is_string())
      fail("safetensors index '{}': tensor '{}' maps to a non-string {}", index_path, name, shard.dump());
    if (!stays_inside_folder(shard.get<std::string>()))
      fail("safetensors index '{}': tensor '{}' maps to '{}', which is not a file inside the checkpoint folder",
           index_path, name, shard.get<std::string>());
    map[name] = shard.get<std::string>();
  }
  return map;
}

SafetensorsCheckpoint::SafetensorsCheckpoint(const std::string& dir_or_file) {
  fs::path root(dir_or_file);
  std::error_code ec;
  if (!fs::exists(root, ec)) fail("checkpoint path '{}' does not exist", dir_or_file);

  std::map<std::string, std::string> weight_map;  // empty unless sharded
  fs::path index_path = root / "model.safetensors.index.json";
  if (!fs::is_directory(root, ec)) {
    files_.push_back(std::make_unique<SafetensorsFile>(root.string()));
    description_ = root.string();
  } else if (fs::exists(index_path, ec)) {
    weight_map = parse_safetensors_index(read_text_file(index_path.string(), "safetensors index"), index_path.string());
    // Open shards in the order first named so messages and names() are deterministic.
    std::set<std::string> seen;
    std::vector<std::string> shard_paths;
    for (const auto& [name, shard] : weight_map) {
      if (!seen.insert(shard).second) continue;
      fs::path shard_path = root / shard;
      if (!fs::exists(shard_path, ec))
        fail("shard '{}' named by '{}' (for tensor '{}') does not exist", shard_path.string(),
             index_path.string(), name);
      files_.push_back(std::make_unique<SafetensorsFile>(shard_path.string()));
      shard_paths.push_back(shard_path.string());
    }
    description_ = fmt::format("{} (shards: {})", index_path.string(), fmt::join(shard_paths, ", "));
  } else if (fs::exists(root / "model.safetensors", ec)) {
    files_.push_back(std::make_unique<SafetensorsFile>((root / "model.safetensors").string()));
    description_ = (root / "model.safetensors").string();
  } else {
    fail("checkpoint directory '{}' has neither model.safetensors nor model.safetensors.index.json", dir_or_file);
  }

  for (const auto& file : files_) {
    for (const auto& [name, info] : file->tensors()) {
      auto [it, inserted] = index_.emplace(name, &info);
      if (!inserted)
        fail("tensor '{}' appears in both '{}' and '{}'", name, it->second->file, file->path());
    }
  }
  // The index is a promise about where each tensor lives; a stale one means a mixed-up download.
  for (const auto& [name, shard] : weight_map) {
    auto it = index_.find(name);
    std::string shard_path = (root / shard).string();
    if (it == index_.end() || it->second->file != shard_path)
      fail("tensor '{}' named by '{}' is missing from shard '{}'", name, index_path.string(), shard_path);
  }
}

bool SafetensorsCheckpoint::contains(const std::string& name) const { return index_.count(name) != 0; }

const TensorInfo& SafetensorsCheckpoint::get(const std::string& name) const {
  auto it = index_.find(name);
  if (it == index_.end()) fail("tensor '{}' not found in {}", name, description_);
  return *it->second;
}

std::vector<std::string> SafetensorsCheckpoint::names() const {
  std::vector<std::string> out;
  out.reserve(index_.size());
  for (const auto& [name, info] : index_) out.push_back(name);
  return out;
}

namespace {

// IEEE 754 binary16 -> binary32; exact for every input (subnormals, infinities, NaN payloads).
float f16_to_f32(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else if (exp != 0) {
    bits = sign | ((exp - 15 + 127) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;
  } else {
    // Subnormal: normalise the mantissa; binary32 has the range to represent it exactly.
    int shift = std::countl_zero(mant) - 21;  // leading zeros within the 10-bit field, +1
    mant = (mant << shift) & 0x3ff;
    bits = sign | (static_cast<uint32_t>(127 - 15 - shift + 1) << 23) | (mant << 13);
  }
  return std::bit_cast<float>(bits);
}

// bfloat16 is the top half of a binary32.
float bf16_to_f32(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

}  // namespace

Tensor to_f32(const TensorInfo& info) {
  Tensor out = Tensor::zeros(info.shape, DType::F32);
  float* dst = out.as<float>();
  size_t n = static_cast<size_t>(out.numel());
  const auto* src = static_cast<const uint8_t*>(info.data);
  switch (info.dtype) {
    case DType::F32:
      std::memcpy(dst, src, n * sizeof(float));
      break;
    case DType::F16:
    case DType::BF16:
      // memcpy per element: mapped data is only guaranteed byte-aligned.
      for (size_t i = 0; i < n; ++i) {
        uint16_t v;
        std::memcpy(&v, src + 2 * i, 2);
        dst[i] = info.dtype == DType::F16 ? f16_to_f32(v) : bf16_to_f32(v);
      }
      break;
    default:
      fail("tensor '{}' in '{}' has dtype {}; only float32, float16 and bfloat16 convert to float32", info.name,
           info.file, dtype_name(info.dtype));
  }
  return out;
}

Tensor to_i32(const TensorInfo& info) {
  Tensor out = Tensor::zeros(info.shape, DType::I32);
  auto* dst = out.as<int32_t>();
  const auto n = static_cast<size_t>(out.numel());
  const auto* src = static_cast<const uint8_t*>(info.data);
  switch (info.dtype) {
    case DType::I32:
      std::memcpy(dst, src, n * sizeof(int32_t));
      break;
    case DType::I64:
      for (size_t i = 0; i < n; ++i) {
        int64_t v;
        std::memcpy(&v, src + 8 * i, 8);  // mapped data is only guaranteed byte-aligned
        if (v < INT32_MIN || v > INT32_MAX)
          fail("tensor '{}' in '{}': element {} = {} does not fit in int32", info.name, info.file, i, v);
        dst[i] = static_cast<int32_t>(v);
      }
      break;
    case DType::Bool:
      for (size_t i = 0; i < n; ++i) dst[i] = src[i] != 0 ? 1 : 0;
      break;
    default:
      fail("tensor '{}' in '{}' has dtype {}; only int32, int64 and bool convert to int32", info.name, info.file,
           dtype_name(info.dtype));
  }
  return out;
}

bool is_integer_dtype(DType dtype) { return dtype == DType::I32 || dtype == DType::I64 || dtype == DType::Bool; }

void write_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  json header = json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  size_t offset = 0;
  for (const auto& [name, t] : tensors) {
    if (name == "__metadata__" || header.contains(name))
      fail("write_safetensors '{}': duplicate or reserved tensor name '{}'", path, name);
    if (t.empty() || t.device() != Device::CPU)
      fail("write_safetensors '{}': tensor '{}' is not in host memory", path, name);
    header[name] = {{"dtype", safetensors_dtype_name(t.dtype())},
                    {"shape", t.shape()},
                    {"data_offsets", {offset, offset + t.nbytes()}}};
    offset += t.nbytes();
  }
  std::string text = header.dump();
  // Padding the header with spaces keeps the data section 8-byte aligned (allowed by the format).
  text.append((8 - text.size() % 8) % 8, ' ');
  uint64_t header_len = text.size();

  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) fail("cannot create safetensors file '{}': {}", path, std::strerror(errno));
  out.write(reinterpret_cast<const char*>(&header_len), sizeof(header_len));
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  for (const auto& [name, t] : tensors)
    out.write(static_cast<const char*>(t.data()), static_cast<std::streamsize>(t.nbytes()));
  out.close();
  if (!out) fail("failed writing safetensors file '{}'", path);
}

}  // namespace drift
