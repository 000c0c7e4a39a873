#include "ngram_matcher.h"

#include <algorithm>

namespace drift::ngram {

std::vector<size_t> find_matches(std::span<const int32_t> tokens, const Settings& s) {
  std::vector<size_t> starts;
  const size_t len = tokens.size();
  const auto wanted = static_cast<size_t>(std::max<int64_t>(s.max_matches, 1));
  for (int64_t n = std::min<int64_t>(s.max_ngram, static_cast<int64_t>(len) - 1); n >= s.min_ngram; --n) {
    const std::span<const int32_t> suffix = tokens.subspan(len - n);
    // Most recent first; an occurrence must leave at least one token after it.
    for (size_t i = len - n; i-- > 0;) {
      if (!std::equal(suffix.begin(), suffix.end(), tokens.begin() + i)) continue;
      const size_t start = i + n;
      if (std::find(starts.begin(), starts.end(), start) == starts.end()) starts.push_back(start);
      if (starts.size() == wanted) return starts;
    }
  }
  return starts;
}

Draft propose(std::span<const int32_t> tokens, const Settings& s, int64_t budget) {
  Draft draft;
  const int64_t depth = s.max_depth > 0 ? std::min(s.max_depth, budget) : budget;
  for (size_t start : find_matches(tokens, s)) {
    int32_t parent = -1;
    for (int64_t d = 0; d < depth && start + d < tokens.size(); ++d) {
      const int32_t token = tokens[start + d];
      int32_t node = -1;  // an existing child of `parent` with this token: shared prefix
      for (size_t i = 0; i < draft.tokens.size() && node < 0; ++i)
        if (draft.parents[i] == parent && draft.tokens[i] == token) node = static_cast<int32_t>(i);
      if (node < 0) {
        if (static_cast<int64_t>(draft.tokens.size()) == budget) return draft;
        node = static_cast<int32_t>(draft.tokens.size());
        draft.tokens.push_back(token);
        draft.parents.push_back(parent);
      }
      parent = node;
    }
  }
  return draft;
}

}  // namespace drift::ngram
