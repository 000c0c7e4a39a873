#pragma once
// Speculator: the one owner of drafting in an engine step. It decides which requests speculate
// and with which provider, asks the verification policy for each verify tree's KV view, accepts
// each verified tree against the target's picks, counts what was drafted, accepted and rewound,
// and -- at the end of the step -- asks the draft providers for the next trees, fitted to what
// each request can still commit (with the hybrid's fallback where a tree scores low). The tree
// it proposes waits in Sequence::draft until the scheduler fits it into the next step's budget
// and pages (Scheduler::schedule_drafts), and is verified there as lookahead tokens.
// Without plugins (no draft provider, no verification policy) it proposes nothing, every view
// is full, and a step is exactly the plain engine's.
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/draft_timing.h"
#include "core/forward_batch.h"
#include "core/kv_cache_manager.h"
#include "core/plugin/plugin_types.h"
#include "core/scheduler.h"
#include "core/sequence.h"
#include "core/speculation/acceptance.h"
#include "core/speculation/adaptive_speculation.h"
#include "core/speculation/kv_view_batch.h"
#include "core/speculation/provider_retirements.h"
#include "core/speculation/speculation_options.h"
#include "core/speculation/verification_metrics.h"

namespace drift {

class EnginePlugins;

// The engine's figures the speculator keeps up to date (EngineMetrics' speculation fields).
struct SpeculatorMetrics {
  SpeculationStats& totals;                          // summed over requests
  std::map<int32_t, int64_t>& acceptance_histogram;  // tokens committed per decode step -> steps
  std::map<std::string, int64_t>& drafts_by_provider;
  VerificationMetrics& verification;
  DraftTiming& draft_timing;
  std::map<int32_t, int64_t>& draft_budgets;  // adaptive speculation's chosen budgets -> times
  int64_t& retired_requests;                  // requests adaptive speculation stopped drafting for (at admission too)
};

class Speculator {
 public:
  Speculator(SpeculationOptions options, int64_t max_seq_len, const KVCacheManager& kv, SpeculatorMetrics metrics);

  // The plugins to draft with and verify through (Engine::enable_plugins); `shape` is the model's
  // layers and kv heads, for partial views.
  void attach(EnginePlugins* plugins, const KvViewShape& shape);
  const SpeculationOptions& options() const { return options_; }
  void set_acceptance_rule(AcceptanceRule rule);

  // ---- Admission -------------------------------------------------------------------------
  // Why the request's `speculative` choice cannot be honoured ("" when it can).
  std::string check_request(const Sequence& seq) const;
  // Whether the request speculates, with which provider, and the draft room the capacity policy
  // reserves for it.
  void start(Sequence& seq) const;
  // At admission (before the plugins hear of the request): adaptive speculation starts it without
  // its provider when that provider's last requests were all retired (ProviderRetirements).
  void admit(Sequence& seq);

  // ---- Verification ------------------------------------------------------------------------
  // The verification policy's views, one per chunk of `scheduled` (empty: every chunk attends
  // fully), then laid into the forward batch built from the same schedule.
  std::vector<KvView> choose_views(int64_t step, const SchedulerOutput& scheduled);
  void apply_views(ForwardBatch& batch, const SchedulerOutput& scheduled, std::span<const KvView> views);
  void record_verification(std::span<const KvView> views, const SchedulerOutput& scheduled, double forward_seconds);
  // A step's time from its forward to its last commit (what a step of `rows` rows costs beside
  // drafting: the forward, the picks, acceptance, KV rewinds), for adaptive speculation.
  void record_step_time(int64_t rows, double seconds);
  // Whether acceptance reads the logits on the host (a custom rule) instead of the picks.
  bool needs_logits() const { return options_.custom_acceptance; }
  // The path a chunk commits: its tree (empty for plain decoding) walked with the rows' picks, or
  // with the custom rule over `logits` (the chunk's rows, root first).
  AcceptedPath accept(const ScheduledChunk& chunk, std::span<const int32_t> picks, const float* logits,
                      int64_t vocab) const;
  // What a chunk's commit kept: `accepted` draft nodes of `drafted`, `committed` tokens.
  void record_commit(Sequence& seq, const DraftTree& draft, std::span<const int32_t> accepted, int64_t committed,
                     bool decoding);

  // ---- Drafting ------------------------------------------------------------------------------
  // End of a step: each running sequence that decodes and still speculates gets its next tree in
  // Sequence::draft. A provider that fails or proposes an invalid tree is disabled for the
  // request (one [fallback] line); the request goes on without drafts.
  void draft_next(int64_t step, std::span<Sequence* const> running);

 private:
  static DraftTree fit_to_request(const DraftTree& tree, Sequence& seq, int32_t max_depth);
  bool still_drafts(Sequence& seq);
  int64_t depth_limit(const Sequence& seq) const;
  const std::string& provider_of(const Sequence& seq) const;
  double following_seconds();
  std::vector<DraftTree> propose(int64_t step, std::span<const DraftRequest> requests);
  // The budgets of the next trees: [speculative] max_draft_tokens each, or adaptive speculation's.
  std::vector<int32_t> budgets(std::span<Sequence* const> drafting, std::span<Sequence* const> running);
  void fall_back_where_weak(int64_t step, std::span<const DraftRequest> requests, std::span<const int32_t> depth_limits,
                            std::vector<DraftTree>& trees, std::vector<std::string>& drafted_by);

  SpeculationOptions options_;
  int64_t max_seq_len_ = 0;
  const KVCacheManager& kv_;
  SpeculatorMetrics metrics_;
  EnginePlugins* plugins_ = nullptr;  // null: nothing drafts, every view is full
  KvViewShape view_shape_;
  std::optional<speculation::AdaptiveSpeculation> adaptive_;  // with options_.adaptive
  speculation::ProviderRetirements retirements_;              // adaptive speculation's, across requests
  double step_seconds_ = 0.0;                                 // record_step_time's sum
  int64_t steps_ = 0;                                         // record_step_time's calls
  // The providers' forward-hook seconds a step (following_seconds()), and where it was last read.
  double following_seconds_ = 0.0, hook_seconds_seen_ = 0.0;
  int64_t steps_seen_ = 0;
};

}  // namespace drift
