#include "core/tokenizer/split_pattern.h"

#include <algorithm>

#include "core/error.h"

namespace drift {
namespace {

struct Span {
  size_t begin, end;
  bool is_match;
};

// All of `text` as alternating gaps and matches, like HF's Pattern::find_matches.
std::vector<Span> spans_of(std::string_view text, const Regex& pattern, bool invert) {
  std::vector<Span> spans;
  size_t prev = 0;
  for (auto [begin, end] : pattern.find_all(text)) {
    if (prev != begin) spans.push_back({prev, begin, invert});
    spans.push_back({begin, end, !invert});
    prev = end;
  }
  if (prev != text.size()) spans.push_back({prev, text.size(), invert});
  return spans;
}

// Port of HF's fold over matches for each behaviour: a delimiter joins its neighbour when it is
// not itself next to another delimiter.
std::vector<Span> apply_behavior(std::vector<Span> spans, SplitBehavior behavior) {
  std::vector<Span> out;
  bool previous_match = false;
  switch (behavior) {
    case SplitBehavior::kIsolated:
      return spans;
    case SplitBehavior::kRemoved:
      std::erase_if(spans, [](const Span& s) { return s.is_match; });
      return spans;
    case SplitBehavior::kMergedWithPrevious:
      for (const Span& s : spans) {
        if (s.is_match && !previous_match && !out.empty()) out.back().end = s.end;
        else out.push_back(s);
        previous_match = s.is_match;
      }
      return out;
    case SplitBehavior::kMergedWithNext:
      for (auto it = spans.rbegin(); it != spans.rend(); ++it) {
        if (it->is_match && !previous_match && !out.empty()) out.back().begin = it->begin;
        else out.push_back(*it);
        previous_match = it->is_match;
      }
      std::reverse(out.begin(), out.end());
      return out;
    case SplitBehavior::kContiguous:
      for (const Span& s : spans) {
        if (s.is_match == previous_match && !out.empty()) out.back().end = s.end;
        else out.push_back(s);
        previous_match = s.is_match;
      }
      return out;
  }
  return spans;
}

}  // namespace

SplitBehavior parse_split_behavior(const std::string& name, const std::string& field) {
  if (name == "Removed") return SplitBehavior::kRemoved;
  if (name == "Isolated") return SplitBehavior::kIsolated;
  if (name == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (name == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (name == "Contiguous") return SplitBehavior::kContiguous;
  fail("{} '{}' is not one of Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous",
       field, name);
}

std::vector<std::pair<size_t, size_t>> split_by_pattern(std::string_view text, const Regex& pattern,
                                                        SplitBehavior behavior, bool invert) {
  std::vector<std::pair<size_t, size_t>> pieces;
  for (const Span& s : apply_behavior(spans_of(text, pattern, invert), behavior))
    if (s.end > s.begin) pieces.emplace_back(s.begin, s.end);
  return pieces;
}

}  // namespace drift
