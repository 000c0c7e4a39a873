// The engine's update step: what a chunk's forward produced becomes committed output. A plain
// decode or a prefill's last chunk commits one sampled token; a verify chunk commits the accepted
// path and the bonus token, compacts the accepted nodes' KV behind the committed prefix and
// rewinds the rest. Either way the run is cut where the request must end, and nothing past the
// cut is committed, streamed or kept in KV. Then the next drafts are proposed.
#include <algorithm>

#include "core/engine.h"
#include "core/error.h"
#include "core/plugin/engine_plugins.h"

namespace drift {

// Appends one token to the output (and its text); the reason the request must end with it, if any.
// A token that ends the request as EOS or a stop id adds no text (as in vLLM): a chat model's
// end-of-turn marker, e.g. "<|im_end|>", is not part of the reply.
FinishReason Engine::append_output(Sequence& seq, int32_t token, const TokenLogprobs* logprobs) {
  seq.output.push_back(token);
  RequestOutput& out = output_for(seq);
  out.new_tokens.push_back(token);
  if (logprobs) out.logprobs.push_back(*logprobs);
  const auto& stops = seq.params.stop_token_ids;
  const bool is_eos = !seq.params.ignore_eos &&
                      std::find(options_.eos_ids.begin(), options_.eos_ids.end(), token) != options_.eos_ids.end();
  const bool stop_token = is_eos || std::find(stops.begin(), stops.end(), token) != stops.end();
  bool stop_string = false;
  if (auto text = texts_.find(seq.id); text != texts_.end() && !stop_token) {
    OutputText::Update update = text->second.push(token);
    out.text += update.text;
    seq.text += update.text;
    stop_string = update.stopped;
  }
  if (stop_token || stop_string) return FinishReason::Stop;
  if (static_cast<int64_t>(seq.output.size()) >= seq.params.max_new_tokens ||
      seq.total_len() >= options_.limits.max_seq_len)
    return FinishReason::Length;
  return FinishReason::None;
}

std::vector<int32_t> Engine::commit(Sequence& seq, const ScheduledChunk& chunk, const AcceptedPath& path,
                                    std::span<const TokenLogprobs> logprobs) {
  const bool decoding = !seq.output.empty();
  const auto drafted = static_cast<int64_t>(chunk.draft.size());
  // The cut: tokens in order until one ends the request.
  FinishReason reason = FinishReason::None;
  std::vector<int32_t> committed;
  for (size_t k = 0; k < path.tokens.size(); ++k) {
    committed.push_back(path.tokens[k]);
    const TokenLogprobs* token_logprobs = k < logprobs.size() ? &logprobs[k] : nullptr;
    if ((reason = append_output(seq, path.tokens[k], token_logprobs)) != FinishReason::None) break;
  }
  // KV: the root (and every chunk token before it) plus the accepted nodes whose tokens were
  // committed, in that order; the other tree slots are rewound.
  const int64_t first_node = chunk.start + chunk.count - drafted;
  const auto accepted =
      std::min<int64_t>(static_cast<int64_t>(path.nodes.size()), static_cast<int64_t>(committed.size()));
  if (drafted > 0) {
    std::vector<int64_t> kept;
    for (int64_t j = 0; j < accepted; ++j) kept.push_back(first_node + path.nodes[j]);
    kv_->compact(seq.kv, first_node, kept);
  }
  seq.num_computed = first_node + accepted;
  seq.stats.output_tokens = static_cast<int64_t>(seq.output.size());
  if (seq.output.size() == committed.size())
    seq.stats.ttft_ms = std::chrono::duration<double, std::milli>(Clock::now() - seq.arrival_time).count();
  record_speculation(seq, drafted, accepted, static_cast<int64_t>(committed.size()), decoding);
  record_draft_probs(seq, chunk.draft, {path.nodes.begin(), path.nodes.begin() + accepted});
  if (plugins_) {  // hook order: on_accept, on_rewind, on_pages_full -- before a finish frees the pages
    plugins_->committed(seq, committed, drafted - accepted);
    plugins_->offer_full_pages(seq);
  }
  if (reason != FinishReason::None) finish(seq, reason);
  return {path.nodes.begin(), path.nodes.begin() + accepted};
}

void Engine::record_speculation(Sequence& seq, int64_t drafted, int64_t accepted, int64_t committed, bool decoding) {
  for (SpeculationStats* s : {&seq.stats.speculation, &metrics_.speculation}) {
    s->draft_tokens += drafted;
    s->accepted_tokens += accepted;
    s->rewound_tokens += drafted - accepted;
    s->verify_steps += drafted > 0 ? 1 : 0;
    if (!decoding) continue;
    s->decode_steps++;
    s->decode_tokens += committed;
  }
  seq.stats.speculation.committed_per_step.push_back(static_cast<int32_t>(committed));
  if (decoding) metrics_.acceptance_histogram[static_cast<int32_t>(committed)]++;
}

void Engine::record_draft_probs(Sequence& seq, const DraftTree& draft, std::span<const int32_t> accepted) {
  if (draft.probs.empty()) return;
  for (SpeculationStats* s : {&seq.stats.speculation, &metrics_.speculation}) {
    s->nodes_with_prob += static_cast<int64_t>(draft.size());
    for (float p : draft.probs) s->draft_prob_sum += p;
    s->accepted_with_prob += static_cast<int64_t>(accepted.size());
    for (int32_t node : accepted) s->accepted_draft_prob_sum += draft.probs[node];
  }
}

namespace {

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

}  // namespace

// Deepest draft node worth verifying: one that, accepted, still leaves room for the bonus token
// under max_new_tokens and max_seq_len (and [speculative] max_depth).
int64_t Engine::draft_depth_limit(const Sequence& seq) const {
  const int64_t room = std::min(seq.params.max_new_tokens - static_cast<int64_t>(seq.output.size()),
                                options_.limits.max_seq_len - seq.total_len());
  const int64_t depth = room - 1;
  return options_.speculation.max_depth > 0 ? std::min(depth, options_.speculation.max_depth) : depth;
}

// Whether the request's provider can still draft for it. One that failed it (a [fallback] line
// disabled it) hands the request to the hybrid's fallback provider when that one can; with
// neither, the request decodes plainly from now on.
bool Engine::still_drafts(Sequence& seq) {
  const PluginHost& host = plugins_->host();
  if (host.draft_provider_usable(seq.draft_provider, seq.id)) return true;
  const std::string& fallback = options_.speculation.fallback_provider;
  if (seq.draft_provider.empty() && !fallback.empty() && host.draft_provider_usable(fallback, seq.id)) {
    seq.draft_provider = fallback;
    return true;
  }
  seq.speculate = false;
  return false;
}

// End of a step: each running sequence that is decoding and still speculates gets a draft from
// its provider, verified in the next step. A provider that fails or proposes an invalid tree is
// disabled for the request (one [fallback] line); the request goes on without drafts.
void Engine::propose_drafts() {
  if (!plugins_) return;
  std::vector<Sequence*> seqs;
  std::vector<DraftRequest> requests;
  for (Sequence* seq : scheduler_->running()) {
    if (!seq->speculate || seq->total_len() - seq->num_computed != 1 || draft_depth_limit(*seq) <= 0) continue;
    if (!still_drafts(*seq)) continue;
    seqs.push_back(seq);
    requests.push_back({seq->id, static_cast<int32_t>(options_.speculation.max_draft_tokens), seq->draft_provider});
  }
  if (requests.empty()) return;
  std::vector<DraftTree> trees = plugins_->propose(metrics_.steps, requests);
  std::vector<int32_t> depth_limits(requests.size());
  std::vector<std::string> drafted_by(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    depth_limits[i] = static_cast<int32_t>(draft_depth_limit(*seqs[i]));
    trees[i] = limit_depth(trees[i], depth_limits[i]);  // before judging it: what would be verified
    drafted_by[i] = requests[i].provider.empty() ? plugins_->host().draft_provider_name() : requests[i].provider;
  }
  fall_back_where_weak(requests, depth_limits, trees, drafted_by);
  for (size_t i = 0; i < seqs.size(); ++i) {
    seqs[i]->draft = std::move(trees[i]);
    if (!seqs[i]->draft.empty()) metrics_.drafts_by_provider[drafted_by[i]]++;
  }
}

// Hybrid drafting: each tree of [speculative]'s provider that expects fewer than fallback_below
// accepted tokens (the sum of its nodes' path probabilities; a tree without probabilities counts
// every node as certain) is replaced by the fallback provider's tree, when it has one.
void Engine::fall_back_where_weak(std::span<const DraftRequest> requests, std::span<const int32_t> depth_limits,
                                  std::vector<DraftTree>& trees, std::vector<std::string>& drafted_by) {
  const std::string& fallback = options_.speculation.fallback_provider;
  if (fallback.empty()) return;
  std::vector<size_t> weak;
  std::vector<DraftRequest> again;
  for (size_t i = 0; i < requests.size(); ++i)
    if (requests[i].provider.empty() && expected_accepted(trees[i]) < options_.speculation.fallback_below) {
      weak.push_back(i);
      again.push_back({requests[i].seq, requests[i].budget, fallback});
    }
  if (again.empty()) return;
  std::vector<DraftTree> other = plugins_->propose(metrics_.steps, again);
  for (size_t k = 0; k < weak.size(); ++k)
    if (DraftTree limited = limit_depth(other[k], depth_limits[weak[k]]); !limited.empty()) {
      trees[weak[k]] = std::move(limited);
      drafted_by[weak[k]] = fallback;
    }
}

}  // namespace drift
