// StreamingDecoder: each push decodes a short window of the most recent ids and emits the part
// of its text that is settled and not yet emitted. Settled means no later id can change it:
//  - not a truncated final character, nor trailing U+FFFD (a lossy decoder's rendering of an
//    incomplete byte sequence, which more bytes may complete);
//  - not the text of the ids the tokenizer reports as unsettled (an open ByteFallback run,
//    which HF renders as U+FFFD per byte once any byte of it turns out invalid).
// So decode(ids so far) may change later, but only beyond what was emitted.
//
// Why a window and not all ids: decoding everything on every token is O(n^2) over a long
// generation (sentencepiece decoding is not cheap). The window moves only when all of its text
// is settled and emitted, to a start a few tokens back whose text is not empty: decoders treat
// the start of the text specially (SentencePiece and HF's Strip decoder drop the leading space
// of the first visible token), and a non-empty context keeps that rule away from the ids still
// to come. The new window's text is then taken as already emitted.
#include "core/tokenizer/streaming_decoder.h"

#include <algorithm>

#include "core/tokenizer/tokenizer.h"
#include "core/tokenizer/utf8.h"

namespace drift {

namespace {
constexpr size_t kContextTokens = 4;

size_t common_prefix_length(std::string_view a, std::string_view b) {
  auto [end_a, end_b] = std::mismatch(a.begin(), a.end(), b.begin(), b.end());
  return static_cast<size_t>(end_a - a.begin());
}
}  // namespace

std::vector<int32_t> StreamingDecoder::window() const {
  return {ids_.begin() + static_cast<std::ptrdiff_t>(window_begin_), ids_.end()};
}

// Bytes at the start of `text` = decode(window) that no later id can change.
size_t StreamingDecoder::settled_length(const std::vector<int32_t>& window, const std::string& text,
                                        size_t unsettled_ids) const {
  size_t settled = utf8::stable_prefix_length(text);
  if (unsettled_ids == 0) return settled;
  // Only the text before the unsettled ids counts, cut to whole characters. Comparing with the
  // full text (rather than trusting the length) keeps the cut inside what both decodes agree on.
  const std::vector<int32_t> before(window.begin(), window.end() - static_cast<std::ptrdiff_t>(unsettled_ids));
  const std::string before_text = tokenizer_.decode(before);
  const size_t agreed = common_prefix_length(text, before_text);
  return std::min(settled, utf8::stable_prefix_length(std::string_view(text).substr(0, agreed)));
}

std::string StreamingDecoder::push(const std::vector<int32_t>& ids) {
  ids_.insert(ids_.end(), ids.begin(), ids.end());
  const std::vector<int32_t> current = window();
  const std::string text = tokenizer_.decode(current);
  const size_t unsettled_ids = tokenizer_.unsettled_tail_length(current);
  const size_t settled = settled_length(current, text, unsettled_ids);
  std::string out;
  if (settled > emitted_bytes_) {
    out = text.substr(emitted_bytes_, settled - emitted_bytes_);
    emitted_bytes_ = settled;
  }
  if (unsettled_ids == 0 && settled == text.size()) slide_window();
  return out;
}

// Called when everything decoded so far is settled and emitted.
void StreamingDecoder::slide_window() {
  if (ids_.size() < window_begin_ + 2 * kContextTokens) return;
  const size_t begin = ids_.size() - kContextTokens;
  const std::string context = tokenizer_.decode({ids_.begin() + static_cast<std::ptrdiff_t>(begin), ids_.end()});
  // Empty: e.g. only control tokens; not settled: it starts inside a character. Either way,
  // try again after the next push.
  if (context.empty() || utf8::stable_prefix_length(context) != context.size()) return;
  window_begin_ = begin;
  emitted_bytes_ = context.size();
}

std::string StreamingDecoder::finish() {
  const std::string text = tokenizer_.decode(window());
  std::string out = text.size() > emitted_bytes_ ? text.substr(emitted_bytes_) : std::string();
  emitted_bytes_ = std::max(emitted_bytes_, text.size());
  return out;
}

}  // namespace drift
