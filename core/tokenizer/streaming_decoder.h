#pragma once
// StreamingDecoder: turns a growing id sequence into text increments. Every increment is valid
// UTF-8 and is never taken back: text that later ids could still change (an incomplete
// character, a byte-fallback run that is still open) is held until they settle it, and the
// increments plus finish() add up to exactly decode(all ids).
#include <cstdint>
#include <string>
#include <vector>

namespace drift {

class Tokenizer;

class StreamingDecoder {
 public:
  explicit StreamingDecoder(const Tokenizer& tokenizer) : tokenizer_(tokenizer) {}
  // Appends ids and returns the newly settled text (possibly empty).
  std::string push(const std::vector<int32_t>& ids);
  // Text still held back at the end of the stream (e.g. a truncated character), flushed as-is.
  std::string finish();

 private:
  std::vector<int32_t> window() const;
  size_t settled_length(const std::vector<int32_t>& window, const std::string& text, size_t unsettled_ids) const;
  void slide_window();

  const Tokenizer& tokenizer_;
  std::vector<int32_t> ids_;
  size_t window_begin_ = 0;   // first id of the decode window (see streaming_decoder.cpp)
  size_t emitted_bytes_ = 0;  // bytes of decode(window) already returned
};

}  // namespace drift
