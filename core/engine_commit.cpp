// The engine's update step: what a chunk's forward produced becomes committed output. A plain
// decode or a prefill's last chunk commits one sampled token; a verify chunk commits the accepted
// path and the bonus token, compacts the accepted nodes' KV behind the committed prefix and
// rewinds the rest. Either way the run is cut where the request must end, and nothing past the
// cut is committed, streamed or kept in KV. What speculation drafted and kept is counted by the
// Speculator (core/speculation/speculator.h), which also proposes the next drafts.
#include <algorithm>

#include "core/engine.h"
#include "core/error.h"
#include "core/grammar/constraint_registry.h"
#include "core/plugin/engine_plugins.h"

namespace drift {

// Appends one token to the output (and its text); the reason the request must end with it, if any.
// A token that ends the request as EOS or a stop id adds no text (as in vLLM): a chat model's
// end-of-turn marker, e.g. "<|im_end|>", is not part of the reply.
FinishReason Engine::append_output(Sequence& seq, int32_t token, const TokenLogprobs* logprobs) {
  seq.output.push_back(token);
  if (seq.grammar) seq.grammar_state = seq.grammar->advance(seq.grammar_state, token);
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
  // The request's next mask, computed by a worker while the rest of the step and the next
  // schedule run (a request that just ended needs none; a cached one needs no worker woken).
  if (seq.grammar && reason == FinishReason::None && !seq.grammar->has_mask(seq.grammar_state))
    grammars_->workers().compute_now(seq.grammar, std::span(&seq.grammar_state, 1));
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
  speculator_->record_commit(seq, chunk.draft, {path.nodes.begin(), path.nodes.begin() + accepted},
                             static_cast<int64_t>(committed.size()), decoding);
  if (plugins_) {  // hook order: on_accept, on_rewind, on_pages_full -- before a finish frees the pages
    plugins_->committed(seq, committed, drafted - accepted);
    plugins_->offer_full_pages(seq);
  }
  if (reason != FinishReason::None) finish(seq, reason);
  return {path.nodes.begin(), path.nodes.begin() + accepted};
}

}  // namespace drift
