#include "ngram_matcher.h"

#include <algorithm>
#include <map>
#include <utility>

namespace drift::ngram {
namespace {

struct Candidate {
  int64_t n;     // matched suffix length, capped at max_ngram
  size_t start;  // where its continuation begins; larger = more recent
};

// Better = longer match, then more recent: the total order the proposals are ranked by.
bool better(const Candidate& a, const Candidate& b) { return a.n != b.n ? a.n > b.n : a.start > b.start; }

// Calls visit(n, start) for every earlier occurrence, most recent first: n tokens ending just
// before `start` equal the sequence's last n tokens (n capped at `cap`). This is the Z-function
// of the reversed sequence: reusing earlier lengths keeps it O(len) even on repetitive text,
// where comparing each position afresh would cost O(len * max_ngram). visit returns false to stop.
template <typename Visit>
void for_each_occurrence(std::span<const int32_t> tokens, int64_t cap, Visit visit) {
  const size_t len = tokens.size();
  const size_t limit = static_cast<size_t>(std::clamp<int64_t>(cap, 0, static_cast<int64_t>(len)));
  const auto rev = [&](size_t i) { return tokens[len - 1 - i]; };  // the sequence read backwards
  std::vector<size_t> z(len, 0);
  size_t box_begin = 0, box_end = 0;  // the rightmost window of rev known to equal its start
  for (size_t k = 1; k < len; ++k) {
    size_t n = k < box_end ? std::min(box_end - k, z[k - box_begin]) : 0;
    while (n < limit && k + n < len && rev(n) == rev(k + n)) ++n;
    if (k + n > box_end) box_begin = k, box_end = k + n;
    z[k] = n;
    if (!visit(static_cast<int64_t>(n), len - k)) return;
  }
}

// Appends the continuation at `start` below the root, reusing nodes that already hold the same
// token under the same parent; false once the budget is full.
bool insert(std::span<const int32_t> tokens, size_t start, int64_t depth, int64_t budget,
            std::map<std::pair<int32_t, int32_t>, int32_t>& nodes, Draft& draft) {
  int32_t parent = -1;
  for (int64_t d = 0; d < depth && start + d < tokens.size(); ++d) {
    const std::pair<int32_t, int32_t> key{parent, tokens[start + d]};
    auto it = nodes.find(key);
    if (it == nodes.end()) {
      if (static_cast<int64_t>(draft.tokens.size()) >= budget) return false;
      it = nodes.emplace(key, static_cast<int32_t>(draft.tokens.size())).first;
      draft.tokens.push_back(key.second);
      draft.parents.push_back(parent);  // an existing node, so parents[i] < i
    }
    parent = it->second;
  }
  return true;
}

}  // namespace

std::vector<size_t> find_matches(std::span<const int32_t> tokens, const Settings& s) {
  const auto wanted = static_cast<size_t>(std::max<int64_t>(s.max_matches, 1));
  std::vector<Candidate> found;
  size_t longest = 0;
  for_each_occurrence(tokens, s.max_ngram, [&](int64_t n, size_t start) {
    if (n < s.min_ngram) return true;
    found.push_back({n, start});
    // `wanted` matches of the greatest length are the answer: everything after them is older.
    return !(n == s.max_ngram && ++longest == wanted);
  });
  const size_t keep = std::min(wanted, found.size());
  std::partial_sort(found.begin(), found.begin() + static_cast<std::ptrdiff_t>(keep), found.end(), better);
  std::vector<size_t> starts;
  for (size_t i = 0; i < keep; ++i) starts.push_back(found[i].start);
  return starts;
}

Draft propose(std::span<const int32_t> tokens, const Settings& s, int64_t budget) {
  Draft draft;
  if (budget <= 0) return draft;
  const int64_t depth = s.max_depth > 0 ? std::min(s.max_depth, budget) : budget;
  std::map<std::pair<int32_t, int32_t>, int32_t> nodes;  // (parent, token) -> node
  for (size_t start : find_matches(tokens, s))
    if (!insert(tokens, start, depth, budget, nodes, draft)) break;
  return draft;
}

}  // namespace drift::ngram
