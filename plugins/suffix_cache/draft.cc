#include "draft.h"

#include <algorithm>
#include <cmath>
#include <queue>

namespace suffix {
namespace {

// A possible next draft token: where it leads, its probability given its parent, its path's.
// Only tokens whose path probability stays >= min_token_prob are candidates (SuffixDecoding's
// tau bounds the whole path, as in ArcticInference); along an edge the path does not change.
struct Candidate {
  Position next;
  int32_t token = 0;
  float prob = 0.0f;
  double path = 0.0;
  int32_t parent = -1;
  bool operator<(const Candidate& o) const { return path < o.path; }  // max-heap by path
};

// What may follow `at` (the next label token, or the children in count order), best first.
template <typename Emit>
void continuations(Position at, double path, int32_t parent, int32_t limit, const DraftParams& p, Emit emit) {
  if (!at.at_end()) {
    emit(Candidate{{at.node, at.offset + 1}, at.node->label[at.offset], 1.0f, path, parent});
    return;
  }
  const int64_t total = at.node->continuations();
  if (total == 0) return;
  int32_t emitted = 0;
  for (const auto& owned : at.node->children) {
    const Node* child = owned.get();
    if (emitted == limit) break;
    const double prob = static_cast<double>(child->count) / static_cast<double>(total);
    if (path * prob < p.min_token_prob) break;  // children are in count order: the rest are rarer
    emit(Candidate{{child, 1}, child->label.front(), static_cast<float>(prob), path * prob, parent});
    ++emitted;
  }
}

void add(Draft& d, const Candidate& c) {
  d.tokens.push_back(c.token);
  d.parents.push_back(c.parent);
  d.probs.push_back(c.prob);
  d.score += c.path;
}

Draft chain_from(Position at, int32_t limit, const DraftParams& p) {
  Draft d;
  double path = 1.0;
  while (static_cast<int32_t>(d.tokens.size()) < limit) {
    bool found = false;
    Candidate best;
    continuations(at, path, static_cast<int32_t>(d.tokens.size()) - 1, 1, p, [&](const Candidate& c) {
      best = c;
      found = true;
    });
    if (!found) break;
    add(d, best);
    path = best.path;
    at = best.next;
  }
  return d;
}

Draft tree_from(Position at, int32_t limit, const DraftParams& p) {
  Draft d;
  std::priority_queue<Candidate> frontier;
  continuations(at, 1.0, -1, limit, p, [&](const Candidate& c) { frontier.push(c); });
  while (!frontier.empty() && static_cast<int32_t>(d.tokens.size()) < limit) {
    const Candidate c = frontier.top();
    frontier.pop();
    const auto index = static_cast<int32_t>(d.tokens.size());
    add(d, c);
    continuations(c.next, c.path, index, limit, p, [&](const Candidate& n) { frontier.push(n); });
  }
  return d;
}

}  // namespace

Draft draft_from(Position at, int32_t limit, const DraftParams& params) {
  if (!at.valid() || limit <= 0) return {};
  return params.tree ? tree_from(at, limit, params) : chain_from(at, limit, params);
}

// Longest match first: a draft's score is at most its limit, and limits shrink with the match,
// so once the best score reaches the current limit no shorter match can beat it (ties go to the
// longer match, which was seen first) -- the same answer as trying every length.
Draft best_draft(const std::vector<Position>& matches, const DraftParams& params, int32_t budget) {
  Draft best;
  for (size_t i = matches.size(); i-- > 0;) {
    if (!matches[i].valid()) continue;
    const auto length = static_cast<int32_t>(i + 1);
    const double allowed = std::floor(params.alpha * length + params.beta);
    const auto limit = static_cast<int32_t>(
        std::min<double>({static_cast<double>(params.max_spec_tokens), static_cast<double>(budget), allowed}));
    if (limit <= 0 || best.score >= limit) break;
    Draft d = draft_from(matches[i], limit, params);
    d.match_length = length;
    if (!d.empty() && d.score > best.score) best = std::move(d);
  }
  return best;
}

}  // namespace suffix
