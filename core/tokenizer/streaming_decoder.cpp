// StreamingDecoder: each push decodes a short window of the most recent ids and emits the text
// beyond what was already emitted, holding back a truncated final character or trailing U+FFFD
// (a lossy decoder's rendering of an incomplete byte sequence) until more ids complete it.
//
// Why a window and not all ids: decoding everything on every token is O(n^2) over a long
// generation (sentencepiece decoding is not cheap). The window starts a few tokens back, so
// decoders that look at neighbours (SentencePiece's leading-space rule, byte-fallback runs)
// see the same context; its emitted part is re-measured each time the window moves, which is
// correct as long as decode(prefix) is a prefix of decode(whole) - tested for every tokenizer.
#include "core/tokenizer/streaming_decoder.h"

#include "core/tokenizer/tokenizer.h"
#include "core/tokenizer/utf8.h"

namespace drift {

namespace {
constexpr size_t kContextTokens = 4;
}

std::string StreamingDecoder::push(const std::vector<int32_t>& ids) {
  ids_.insert(ids_.end(), ids.begin(), ids.end());
  std::vector<int32_t> window(ids_.begin() + static_cast<std::ptrdiff_t>(window_begin_), ids_.end());
  std::string text = tokenizer_.decode(window);
  size_t stable = utf8::stable_prefix_length(text);
  std::string out;
  if (stable > emitted_bytes_) out = text.substr(emitted_bytes_, stable - emitted_bytes_);
  emitted_bytes_ = std::max(emitted_bytes_, stable);
  // Slide the window only when nothing is held back, so a pending character stays whole.
  if (stable == text.size() && ids_.size() > window_begin_ + 2 * kContextTokens) {
    window_begin_ = ids_.size() - kContextTokens;
    std::vector<int32_t> kept(ids_.begin() + static_cast<std::ptrdiff_t>(window_begin_), ids_.end());
    emitted_bytes_ = tokenizer_.decode(kept).size();
  }
  return out;
}

std::string StreamingDecoder::finish() {
  std::vector<int32_t> window(ids_.begin() + static_cast<std::ptrdiff_t>(window_begin_), ids_.end());
  std::string text = tokenizer_.decode(window);
  std::string out = text.size() > emitted_bytes_ ? text.substr(emitted_bytes_) : std::string();
  emitted_bytes_ = text.size();
  return out;
}

}  // namespace drift
