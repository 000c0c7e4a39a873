#include "core/speculation/speculator.h"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "core/capacity_policy.h"
#include "core/plugin/engine_plugins.h"
#include "core/speculation/grammar_drafts.h"

namespace drift {
namespace {

// The tokens a tree expects to have accepted: the sum of its nodes' path probabilities (a tree
// without probabilities counts every node as certain).
double expected_accepted(const DraftTree& tree) {
  if (tree.probs.empty()) return static_cast<double>(tree.size());
  std::vector<double> path(tree.size());
  double sum = 0.0;
  for (size_t i = 0; i < tree.size(); ++i) {
    path[i] = tree.probs[i] * (tree.parents[i] < 0 ? 1.0 : path[tree.parents[i]]);
    sum += path[i];
  }
  return sum;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

Speculator::Speculator(SpeculationOptions options, int64_t max_seq_len, const KVCacheManager& kv,
                       SpeculatorMetrics metrics)
    : options_(std::move(options)), max_seq_len_(max_seq_len), kv_(kv), metrics_(metrics) {
  if (options_.adaptive && options_.max_draft_tokens > 0)
    adaptive_.emplace(static_cast<int32_t>(options_.max_draft_tokens));
}

void Speculator::attach(EnginePlugins* plugins, const KvViewShape& shape) {
  plugins_ = plugins;
  view_shape_ = shape;
  if (plugins_) plugins_->set_admission_check([this](Sequence& seq) { admit(seq); });
}

void Speculator::set_acceptance_rule(AcceptanceRule rule) {
  options_.acceptance = std::move(rule);
  options_.custom_acceptance = true;
}

// ---- Admission ------------------------------------------------------------------------------

std::string Speculator::check_request(const Sequence& seq) const {
  const std::string& provider = seq.params.speculative;
  if (provider.empty() || provider == "off" || (plugins_ && plugins_->host().is_draft_provider(provider))) return "";
  return fmt::format(
      "speculative = \"{}\" is not a configured draft provider (give \"off\" or a [[plugins]] "
      "entry that is a draft provider)",
      provider);
}

// The draft room is max_draft_tokens, clamped so that the request still fits the whole pool.
void Speculator::start(Sequence& seq) const {
  const std::string& choice = seq.params.speculative;
  seq.draft_provider = choice == "off" ? "" : choice;
  seq.speculate = choice != "off" && plugins_ && options_.max_draft_tokens > 0 &&
                  plugins_->host().is_draft_provider(seq.draft_provider);
  if (!seq.speculate) return;
  const int64_t capacity = kv_.num_pages() * kv_.block_size();
  const int64_t worst = worst_case_pages(seq, max_seq_len_, kv_) * kv_.block_size();
  seq.draft_room = std::clamp<int64_t>(capacity - worst, 0, options_.max_draft_tokens);
}

void Speculator::admit(Sequence& seq) {
  if (!adaptive_ || !seq.speculate || retirements_.admit(provider_of(seq))) return;
  seq.speculate = false;  // its provider never follows it; the draft room stays reserved (harmless)
  metrics_.retired_requests++;
}

const std::string& Speculator::provider_of(const Sequence& seq) const {
  return seq.draft_provider.empty() ? plugins_->host().draft_provider_name() : seq.draft_provider;
}

// ---- Verification -----------------------------------------------------------------------------

// Sequences verifying a tree ask the policy, unless their request asked for full verification.
std::vector<KvView> Speculator::choose_views(int64_t step, const SchedulerOutput& scheduled) {
  if (!plugins_) return {};
  std::vector<KvViewRequest> requests;
  std::vector<size_t> chunk_of;
  for (size_t c = 0; c < scheduled.chunks.size(); ++c) {
    const ScheduledChunk& chunk = scheduled.chunks[c];
    if (chunk.draft.empty() || chunk.seq->params.full_verification) continue;
    const std::vector<PageId>& table = kv_.block_table(chunk.seq->kv);
    // A verify chunk's root (its first token) is the last committed token: its page and the ones
    // after it receive the tree's KV and are always attended.
    requests.push_back({chunk.seq->id, std::span<const int32_t>(table), chunk.start / kv_.block_size()});
    chunk_of.push_back(c);
  }
  std::vector<KvView> views(scheduled.chunks.size());
  if (requests.empty()) return views;
  std::vector<KvView> chosen = plugins_->host().choose_kv_view(StepInfo{step, plugins_->stream()}, requests);
  for (size_t i = 0; i < chosen.size(); ++i) views[chunk_of[i]] = std::move(chosen[i]);
  return views;
}

void Speculator::apply_views(ForwardBatch& batch, const SchedulerOutput& scheduled, std::span<const KvView> views) {
  if (views.empty() || !plugins_) return;
  plugins_->queries_kept(apply_kv_views(batch, scheduled, views, view_shape_));
}

void Speculator::record_verification(std::span<const KvView> views, const SchedulerOutput& scheduled,
                                     double forward_seconds) {
  VerificationMetrics& m = metrics_.verification;
  bool verifies = false, partial = false;
  for (size_t c = 0; c < scheduled.chunks.size(); ++c) {
    const ScheduledChunk& chunk = scheduled.chunks[c];
    if (chunk.draft.empty()) continue;
    verifies = true;
    if (c >= views.size() || views[c].full) {
      m.full_views++;
      continue;
    }
    partial = true;
    m.partial_views++;
    const auto table = static_cast<int64_t>(kv_.block_table(chunk.seq->kv).size());
    int64_t listed = 0;
    for (const auto& list : views[c].lists) listed += static_cast<int64_t>(list.size());
    m.partial_pages_attended +=
        listed / static_cast<int64_t>(views[c].lists.size()) + table - chunk.start / kv_.block_size();
    m.partial_context_pages += table;
  }
  if (!verifies) return;
  (partial ? m.partial_verify_steps : m.full_verify_steps)++;
  (partial ? m.partial_verify_seconds : m.full_verify_seconds) += forward_seconds;
}

void Speculator::record_step_time(int64_t rows, double seconds) {
  step_seconds_ += seconds;
  ++steps_;
  if (adaptive_) adaptive_->observe_forward(rows, seconds);
}

// With an empty draft the walk takes the one token plain decoding samples.
AcceptedPath Speculator::accept(const ScheduledChunk& chunk, std::span<const int32_t> picks, const float* logits,
                                int64_t vocab) const {
  if (!logits) return accept_picked(chunk.draft, picks);
  const Sequence& seq = *chunk.seq;
  return options_.acceptance(chunk.draft, logits, vocab, seq.params, seq.seed, seq.output.size());
}

void Speculator::record_commit(Sequence& seq, const DraftTree& draft, std::span<const int32_t> accepted,
                               int64_t committed, bool decoding) {
  const auto drafted = static_cast<int64_t>(draft.size());
  const auto kept = static_cast<int64_t>(accepted.size());
  if (adaptive_ && drafted > 0) {
    const std::vector<int32_t> depths = draft.depths();
    adaptive_->observe_verification(seq.id, *std::max_element(depths.begin(), depths.end()),
                                    static_cast<int32_t>(kept));
  }
  for (SpeculationStats* s : {&seq.stats.speculation, &metrics_.totals}) {
    s->draft_tokens += drafted;
    s->accepted_tokens += kept;
    s->rewound_tokens += drafted - kept;
    s->verify_steps += drafted > 0 ? 1 : 0;
    if (decoding) {
      s->decode_steps++;
      s->decode_tokens += committed;
    }
    if (draft.probs.empty()) continue;  // draft probabilities: reported, never used to accept
    s->nodes_with_prob += drafted;
    for (float p : draft.probs) s->draft_prob_sum += p;
    s->accepted_with_prob += kept;
    for (int32_t node : accepted) s->accepted_draft_prob_sum += draft.probs[node];
  }
  seq.stats.speculation.committed_per_step.push_back(static_cast<int32_t>(committed));
  if (decoding) metrics_.acceptance_histogram[static_cast<int32_t>(committed)]++;
}

// ---- Drafting ---------------------------------------------------------------------------------

// A draft cut to what the request can still commit and, under a structured output, to what its
// grammar allows (the target could never pick a node outside it).
DraftTree Speculator::fit_to_request(const DraftTree& tree, Sequence& seq, int32_t max_depth) {
  DraftTree fitted = limit_depth(tree, max_depth);
  if (seq.grammar) fitted = cut_to_grammar(fitted, *seq.grammar, seq.grammar_state);
  return fitted;
}

void Speculator::draft_next(int64_t step, std::span<Sequence* const> running) {
  if (!plugins_) return;
  std::vector<Sequence*> candidates;
  for (Sequence* seq : running) {
    if (!seq->speculate || seq->total_len() - seq->num_computed != 1 || depth_limit(*seq) <= 0) continue;
    if (!still_drafts(*seq)) continue;
    candidates.push_back(seq);
  }
  if (candidates.empty()) return;
  // Each request's budget is decided here, in one place; one given 0 drafts nothing this step and
  // is not asked (nor handed to the hybrid's fallback).
  const std::vector<int32_t> budget = budgets(candidates, running);
  std::vector<Sequence*> seqs;
  std::vector<DraftRequest> requests;
  int32_t deepest = 0;
  int64_t total = 0;
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (budget[i] <= 0) {
      candidates[i]->draft = {};  // a tree of an earlier step the scheduler did not take is stale
      continue;
    }
    seqs.push_back(candidates[i]);
    requests.push_back({candidates[i]->id, budget[i], candidates[i]->draft_provider});
    deepest = std::max(deepest, budget[i]);
    total += budget[i];
  }
  if (requests.empty()) return;
  const auto start = std::chrono::steady_clock::now();
  std::vector<DraftTree> trees = propose(step, requests);
  std::vector<int32_t> depth_limits(requests.size());
  std::vector<std::string> drafted_by(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    depth_limits[i] = static_cast<int32_t>(depth_limit(*seqs[i]));
    trees[i] = fit_to_request(trees[i], *seqs[i], depth_limits[i]);  // before judging it: what would be verified
    drafted_by[i] = requests[i].provider.empty() ? plugins_->host().draft_provider_name() : requests[i].provider;
  }
  fall_back_where_weak(step, requests, depth_limits, trees, drafted_by);
  if (adaptive_) adaptive_->observe_drafting(deepest, total, seconds_since(start));  // the fallback's too
  for (size_t i = 0; i < seqs.size(); ++i) {
    seqs[i]->draft = fit_to_request(trees[i], *seqs[i], depth_limits[i]);  // the fallback's trees too
    if (!seqs[i]->draft.empty()) metrics_.drafts_by_provider[drafted_by[i]]++;
  }
}

// Fixed: max_draft_tokens each. Adaptive: AdaptiveSpeculation's choice, capped at what each
// request can still commit; the next forward's base is one row (and one token) per decoding request.
std::vector<int32_t> Speculator::budgets(std::span<Sequence* const> drafting, std::span<Sequence* const> running) {
  const auto fixed = static_cast<int32_t>(options_.max_draft_tokens);
  if (!adaptive_) return std::vector<int32_t>(drafting.size(), fixed);
  std::vector<uint64_t> ids;
  std::vector<int32_t> caps;
  for (const Sequence* seq : drafting) {
    ids.push_back(seq->id);
    caps.push_back(static_cast<int32_t>(std::min<int64_t>(fixed, depth_limit(*seq))));
  }
  const auto decoding = static_cast<int64_t>(std::count_if(
      running.begin(), running.end(), [](const Sequence* s) { return s->total_len() - s->num_computed == 1; }));
  std::vector<int32_t> chosen = adaptive_->budgets(ids, caps, decoding, decoding, following_seconds());
  for (int32_t b : chosen) metrics_.draft_budgets[b]++;
  // A request the policy has long kept from drafting stops paying for its provider's per-step
  // work (a draft model following every forward), where that work is a visible share of a step.
  constexpr double kVisibleShare = 0.03;
  const bool following_costs = metrics_.draft_timing.forward_hook_seconds > kVisibleShare * step_seconds_;
  for (size_t i = 0; i < drafting.size(); ++i) {
    if (following_costs && adaptive_->retired(drafting[i]->id)) {
      plugins_->host().retire_draft_provider(drafting[i]->draft_provider, drafting[i]->id);
      retirements_.retired(provider_of(*drafting[i]));
      drafting[i]->speculate = false;
      chosen[i] = 0;
      metrics_.retired_requests++;
    } else if (adaptive_->pays(drafting[i]->id)) {
      retirements_.paid(provider_of(*drafting[i]));
    }
  }
  return chosen;
}

// What the draft providers' forward hooks (a draft model following every forward) cost a step
// while they follow requests: the steps since the last call, smoothed (a prefill's extension is a
// one-step spike). Steps where nothing was followed (every request retired) leave it as it was:
// it is the price of following again.
double Speculator::following_seconds() {
  const double hooks = metrics_.draft_timing.forward_hook_seconds;
  if (steps_ > steps_seen_ && hooks > hook_seconds_seen_) {
    const double per_step = (hooks - hook_seconds_seen_) / static_cast<double>(steps_ - steps_seen_);
    following_seconds_ = steps_seen_ == 0 ? per_step : 0.9 * following_seconds_ + 0.1 * per_step;
  }
  hook_seconds_seen_ = hooks;
  steps_seen_ = steps_;
  return following_seconds_;
}

// Deepest draft node worth verifying: one that, accepted, still leaves room for the bonus token
// under max_new_tokens and max_seq_len (and [speculative] max_depth).
int64_t Speculator::depth_limit(const Sequence& seq) const {
  const int64_t room =
      std::min(seq.params.max_new_tokens - static_cast<int64_t>(seq.output.size()), max_seq_len_ - seq.total_len());
  const int64_t depth = room - 1;
  return options_.max_depth > 0 ? std::min(depth, options_.max_depth) : depth;
}

// Whether the request's provider can still draft for it. One that failed it (a [fallback] line
// disabled it) hands the request to the hybrid's fallback provider when that one can; with
// neither, the request decodes plainly from now on.
bool Speculator::still_drafts(Sequence& seq) {
  const PluginHost& host = plugins_->host();
  if (host.draft_provider_usable(seq.draft_provider, seq.id)) return true;
  const std::string& fallback = options_.fallback_provider;
  if (seq.draft_provider.empty() && !fallback.empty() && host.draft_provider_usable(fallback, seq.id)) {
    seq.draft_provider = fallback;
    return true;
  }
  seq.speculate = false;
  return false;
}

// One batch call per provider (PluginHost::propose), timed by the host: the step's drafting cost.
std::vector<DraftTree> Speculator::propose(int64_t step, std::span<const DraftRequest> requests) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<DraftTree> trees = plugins_->host().propose(StepInfo{step, plugins_->stream()}, requests);
  metrics_.draft_timing.propose_seconds += seconds_since(start);
  metrics_.draft_timing.propose_calls++;
  return trees;
}

// Hybrid drafting: each tree of [speculative]'s provider that expects fewer than fallback_below
// accepted tokens is replaced by the fallback provider's tree, when it has one.
void Speculator::fall_back_where_weak(int64_t step, std::span<const DraftRequest> requests,
                                      std::span<const int32_t> depth_limits, std::vector<DraftTree>& trees,
                                      std::vector<std::string>& drafted_by) {
  const std::string& fallback = options_.fallback_provider;
  if (fallback.empty()) return;
  std::vector<size_t> weak;
  std::vector<DraftRequest> again;
  for (size_t i = 0; i < requests.size(); ++i)
    if (requests[i].provider.empty() && expected_accepted(trees[i]) < options_.fallback_below) {
      weak.push_back(i);
      again.push_back({requests[i].seq, requests[i].budget, fallback});
    }
  if (again.empty()) return;
  std::vector<DraftTree> other = propose(step, again);
  for (size_t k = 0; k < weak.size(); ++k)
    if (DraftTree limited = limit_depth(other[k], depth_limits[weak[k]]); !limited.empty()) {
      trees[weak[k]] = std::move(limited);
      drafted_by[weak[k]] = fallback;
    }
}

}  // namespace drift
