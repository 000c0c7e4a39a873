#pragma once
// StreamingDecoder: turns a growing id sequence into text increments without ever emitting a
// broken UTF-8 sequence (bytes of an incomplete character are held until it completes).
#include <cstdint>
#include <string>
#include <vector>

namespace drift {

class Tokenizer;

class StreamingDecoder {
 public:
  explicit StreamingDecoder(const Tokenizer& tokenizer) : tokenizer_(tokenizer) {}
  // Appends ids and returns the newly completed text (possibly empty).
  std::string push(const std::vector<int32_t>& ids);
  // Text still held back at the end of the stream (e.g. a truncated character), flushed as-is.
  std::string finish();

 private:
  const Tokenizer& tokenizer_;
  std::vector<int32_t> ids_;
  size_t window_begin_ = 0;   // first id of the decode window (see streaming_decoder.cpp)
  size_t emitted_bytes_ = 0;  // bytes of decode(window) already returned
};

}  // namespace drift
