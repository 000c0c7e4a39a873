// OutputText: stop strings on the streamed text. Only the held-back tail (shorter than the
// longest stop string) plus the newly settled text is searched per token, so a long generation
// costs linear time. Text is emitted up to the longest suffix that could still begin a stop
// string; a stop string can therefore never start inside text already emitted.
#include "core/tokenizer/output_text.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/tokenizer/utf8.h"

namespace drift {
namespace {

constexpr size_t kMaxStopStrings = 16;
constexpr size_t kMaxStopBytes = 256;

// Length of the longest suffix of `text` that is a proper prefix of some stop string.
size_t partial_stop_suffix(const std::string& text, const std::vector<std::string>& stops) {
  size_t best = 0;
  for (const std::string& stop : stops)
    for (size_t n = std::min(text.size(), stop.size() - 1); n > best; --n)
      if (text.compare(text.size() - n, n, stop, 0, n) == 0) {
        best = n;
        break;
      }
  return best;
}

}  // namespace

std::string validate_stop_strings(const std::vector<std::string>& stops) {
  if (stops.size() > kMaxStopStrings)
    return fmt::format("{} stop strings given; at most {} are allowed", stops.size(), kMaxStopStrings);
  for (size_t i = 0; i < stops.size(); ++i) {
    if (stops[i].empty()) return fmt::format("stop string {} is empty", i);
    if (stops[i].size() > kMaxStopBytes)
      return fmt::format("stop string {} has {} bytes; at most {} are allowed", i, stops[i].size(), kMaxStopBytes);
    if (utf8::first_invalid(stops[i]) != stops[i].size()) return fmt::format("stop string {} is not valid UTF-8", i);
  }
  return "";
}

OutputText::OutputText(const Tokenizer& tokenizer, std::vector<std::string> stop_strings, bool include_stop)
    : decoder_(tokenizer), stops_(std::move(stop_strings)), include_stop_(include_stop) {}

std::string OutputText::emit(size_t length) {
  std::string out = pending_.substr(0, length);
  pending_.erase(0, length);
  emitted_ += out;
  return out;
}

// pending_ is short: the held-back tail (a proper prefix of a stop string, which contains none)
// and the new text. Without include_stop the text ends before the earliest stop string, so no
// part of any is emitted. With it the text ends after the stop string that completes first, as
// if the new text had arrived one character at a time (one token can complete several).
size_t OutputText::stop_cut() const {
  size_t cut = std::string::npos;
  for (const std::string& stop : stops_)
    if (const size_t at = pending_.find(stop); at != std::string::npos)
      cut = std::min(cut, include_stop_ ? at + stop.size() : at);
  return cut;
}

OutputText::Update OutputText::push(int32_t token) {
  Update update;
  if (stopped_) return update;
  pending_ += decoder_.push({token});
  if (stops_.empty()) {
    update.text = emit(pending_.size());
    return update;
  }
  if (const size_t cut = stop_cut(); cut != std::string::npos) {
    update.text = emit(cut);
    update.stopped = stopped_ = true;
    pending_.clear();
    return update;
  }
  update.text = emit(pending_.size() - partial_stop_suffix(pending_, stops_));
  return update;
}

std::string OutputText::finish() {
  if (stopped_) return "";
  pending_ += decoder_.finish();
  return emit(pending_.size());
}

}  // namespace drift
