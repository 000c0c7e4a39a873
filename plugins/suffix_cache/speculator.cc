#include "speculator.h"

#include <algorithm>
#include <cstdio>

namespace suffix {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int64_t kOwn = 0;  // a request's own tree holds one sequence

}  // namespace

Speculator::Speculator(Settings settings) : settings_(settings), global_(settings.max_depth) {}

void Speculator::start(int64_t seq, std::span<const int32_t> tokens, bool resumed) {
  const auto begin = Clock::now();
  auto tree = std::make_unique<SuffixTree>(settings_.max_depth);
  tree->extend(kOwn, tokens);
  requests_[seq] = std::move(tree);
  // A resumed request's response so far is in the global tree already (unless evicted).
  if (!resumed) remember_response(seq);
  stats_.update_time += Clock::now() - begin;
  stats_.updated_tokens += static_cast<int64_t>(tokens.size());
}

void Speculator::remember_response(int64_t seq) {
  if (settings_.max_cached_requests == 0 || in_global_.count(seq)) return;
  global_order_.push_back(seq);
  in_global_.insert(seq);
  while (static_cast<int64_t>(global_order_.size()) > settings_.max_cached_requests) {
    global_.remove(global_order_.front());
    in_global_.erase(global_order_.front());
    global_order_.pop_front();
    stats_.evicted_requests++;
  }
}

void Speculator::accept(int64_t seq, std::span<const int32_t> tokens) {
  const auto begin = Clock::now();
  const auto it = requests_.find(seq);
  const bool in_global = in_global_.count(seq) > 0;
  if (it == requests_.end() && !in_global) return;  // not a request it drafts for
  if (it != requests_.end()) it->second->extend(kOwn, tokens);
  if (in_global) global_.extend(seq, tokens);
  stats_.update_time += Clock::now() - begin;
  stats_.updated_tokens += static_cast<int64_t>(tokens.size());
}

void Speculator::finish(int64_t seq) { requests_.erase(seq); }

Draft Speculator::propose(int64_t seq, int32_t budget) {
  const auto begin = Clock::now();
  Draft best;
  auto it = requests_.find(seq);
  if (it != requests_.end()) {
    const SuffixTree& own = *it->second;
    best = best_draft(own.own_suffix_ends(kOwn), settings_.draft, budget);
    bool global = false;
    // A draft scoring its whole budget cannot be beaten (ties stay with the request's own tree).
    const int32_t most = std::min(settings_.draft.max_spec_tokens, budget);
    const std::vector<int32_t>* own_tokens = own.tokens(kOwn);  // none yet: an empty prompt
    if (own_tokens && global_.num_sequences() > 0 && best.score < most) {
      const std::vector<int32_t>& context = *own_tokens;
      std::vector<Position> matches(static_cast<size_t>(settings_.max_depth - 1));
      for (size_t length = 1; length <= matches.size() && length <= context.size(); ++length) {
        matches[length - 1] = global_.find(std::span(context).last(length));
        if (!matches[length - 1].valid()) break;  // a longer suffix cannot match either
      }
      Draft other = best_draft(matches, settings_.draft, budget);
      if (other.score > best.score) {
        best = std::move(other);
        global = true;
      }
    }
    (best.empty() ? stats_.empty : global ? stats_.from_global : stats_.from_request)++;
    stats_.drafted_tokens += static_cast<int64_t>(best.tokens.size());
  }
  stats_.proposals++;
  stats_.propose_time += Clock::now() - begin;
  return best;
}

std::string Speculator::stats_json() const {
  const double propose_us =
      stats_.proposals ? std::chrono::duration<double, std::micro>(stats_.propose_time).count() / stats_.proposals : 0;
  const double update_us = stats_.updated_tokens
                               ? std::chrono::duration<double, std::micro>(stats_.update_time).count() /
                                     static_cast<double>(stats_.updated_tokens)
                               : 0;
  char text[512];
  std::snprintf(text, sizeof text,
                "{\"proposals\":%lld,\"speculate_us_per_proposal\":%.3f,\"updated_tokens\":%lld,"
                "\"update_us_per_token\":%.3f,\"drafts_from_request_tree\":%lld,\"drafts_from_global_tree\":%lld,"
                "\"no_draft\":%lld,\"drafted_tokens\":%lld,\"global_requests\":%zu,\"global_nodes\":%lld,"
                "\"evicted_requests\":%lld}",
                static_cast<long long>(stats_.proposals), propose_us, static_cast<long long>(stats_.updated_tokens),
                update_us, static_cast<long long>(stats_.from_request), static_cast<long long>(stats_.from_global),
                static_cast<long long>(stats_.empty), static_cast<long long>(stats_.drafted_tokens),
                global_.num_sequences(), static_cast<long long>(global_.num_nodes()),
                static_cast<long long>(stats_.evicted_requests));
  return text;
}

}  // namespace suffix
