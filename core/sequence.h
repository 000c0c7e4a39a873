#pragma once
// Sequence: one request's state inside the engine — its tokens, how many have KV in the cache,
// its scheduling status and its statistics.
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/kv_cache_manager.h"
#include "core/sampling_params.h"
#include "core/speculation/draft_tree.h"

namespace drift {
namespace grammar {
class TokenConstraint;
}

enum class SequenceStatus { Waiting, Running, Finished };
enum class FinishReason { None, Length, Stop, Abort, Error };
const char* finish_reason_name(FinishReason reason);  // "length" | "stop" | "abort" | "error"

using Clock = std::chrono::steady_clock;

// Speculative decoding's effect on one request (or, summed, the engine). Invariant:
// draft_tokens == accepted_tokens + rewound_tokens.
struct SpeculationStats {
  int64_t draft_tokens = 0;     // draft nodes verified by the target
  int64_t accepted_tokens = 0;  // of them, committed
  int64_t rewound_tokens = 0;   // of them, discarded (KV rewound)
  int64_t verify_steps = 0;     // steps that verified a non-empty draft
  int64_t decode_steps = 0;     // target forwards that produced output after the prompt was in
  int64_t decode_tokens = 0;    // tokens those steps committed
  // Draft probabilities, when the provider gives them (reported only: they never change what is
  // accepted): their sums over the verified nodes that had one, and over the accepted ones.
  int64_t nodes_with_prob = 0, accepted_with_prob = 0;
  double draft_prob_sum = 0.0, accepted_draft_prob_sum = 0.0;
  // Tokens committed by each step that produced output, the prompt's last chunk included (their
  // sum is the output length); the decode steps' histogram is the acceptance-length distribution.
  std::vector<int32_t> committed_per_step;
  double mean_draft_prob() const { return nodes_with_prob > 0 ? draft_prob_sum / static_cast<double>(nodes_with_prob) : 0.0; }
  double mean_accepted_draft_prob() const {
    return accepted_with_prob > 0 ? accepted_draft_prob_sum / static_cast<double>(accepted_with_prob) : 0.0;
  }
  double acceptance_length() const {  // tokens committed per target forward while decoding
    return decode_steps > 0 ? static_cast<double>(decode_tokens) / static_cast<double>(decode_steps) : 0.0;
  }
};

struct RequestStats {
  int64_t prompt_tokens = 0;
  int64_t output_tokens = 0;
  int64_t steps = 0;            // engine steps that computed tokens of this request
  int64_t preemptions = 0;
  int64_t recomputed_tokens = 0;  // KV recomputed after preemption
  int64_t cached_tokens = 0;    // KV adopted from a cache manager at admission (summed over re-admissions)
  int64_t shared_tokens = 0;    // prompt KV adopted from a parallel sample's sibling (core/parallel_samples.h)
  double ttft_ms = 0.0;         // arrival -> first output token
  double latency_ms = 0.0;      // arrival -> finish
  uint64_t seed = 0;
  SpeculationStats speculation;
};

struct Sequence {
  int64_t id = 0;
  std::vector<int32_t> prompt;
  std::vector<int32_t> output;
  SamplingParams params;
  uint64_t seed = 0;
  SequenceStatus status = SequenceStatus::Waiting;
  FinishReason finish_reason = FinishReason::None;
  std::string error;
  std::string text;             // output text emitted so far (engines with a tokenizer)
  int64_t num_computed = 0;     // leading tokens whose K/V are in the cache
  SeqHandle kv = -1;            // KV manager handle while admitted
  int64_t arrival = 0;          // admission order key (FIFO fairness)
  // Parallel samples (n > 1, core/parallel_samples.h): the samples of one prompt share this id
  // (their first's) and the prompt's KV pages; -1 for a request on its own.
  int64_t sample_group = -1;
  Clock::time_point arrival_time = Clock::now();
  RequestStats stats;
  // Speculation, set by the Speculator (core/speculation/speculator.h): the draft provider's entry
  // name ("" = [speculative]'s), whether this request speculates at all, the draft proposed at
  // the end of the last step (the scheduler moves it into the next step's chunk as lookahead
  // tokens, fitted to the budget and pages), and the draft slots the capacity policy promises
  // beside the worst case.
  std::string draft_provider;
  bool speculate = false;
  DraftTree draft;
  int64_t draft_room = 0;
  // Structured output: the request's grammar over the vocabulary (shared by requests with the
  // same one) and the state its committed output has reached. Drafts never move it: a draft
  // node's state is computed from it, so a rewind has nothing to undo.
  std::shared_ptr<grammar::TokenConstraint> grammar;
  int32_t grammar_state = 0;  // a grammar::StateId

  int64_t total_len() const { return static_cast<int64_t>(prompt.size() + output.size()); }
  int32_t token_at(int64_t i) const {
    return i < static_cast<int64_t>(prompt.size()) ? prompt[i] : output[i - prompt.size()];
  }
  bool finished() const { return status == SequenceStatus::Finished; }
};

}  // namespace drift
