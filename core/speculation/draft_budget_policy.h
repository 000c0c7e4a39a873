#pragma once
// DraftBudgetPolicy: adaptive speculation. Each step it chooses every speculating request's draft
// budget (drift_draft_tree_t::budget: draft rows; 0 = no draft this step) to maximise what the
// step commits per second:
//
//   rate = (decode rows + sum of E_r(b_r)) / (T(base rows + sum of b_r) + D(max b_r, sum of b_r))
//
// with E_r the tokens request r's drafts are expected to add at budget b (AcceptanceRates, its
// acceptance so far), T the forward time the engine measured for that many rows (StepTimeCurve)
// and D the drafting time (DraftCost). Since every E_r is concave, the best allocation of a total
// budget takes the largest marginal gains first; the policy walks the total upward for each
// possible deepest budget and keeps the best rate. A request the policy keeps at 0 is still
// given a small probe budget every probe_interval steps, so a request whose text turns
// predictable is noticed (the probes cost about 1/probe_interval of a verify row).
//
// The budget is read as a depth (a chain's length): for tree providers, whose b nodes span fewer
// depths, E is an optimistic estimate and the rows are counted exactly.
#include <cstdint>
#include <vector>

#include "core/speculation/acceptance_rates.h"
#include "core/speculation/draft_cost.h"
#include "core/speculation/step_time_curve.h"

namespace drift::speculation {

struct DraftBudgetOptions {
  int32_t probe_interval = 32;  // steps without a draft before a probe
  int32_t probe_budget = 2;
  // Steps in a row the policy keeps a request at 0 (probes aside) before AdaptiveSpeculation
  // calls it retired: its provider's per-step cost (a draft model following the target) is then
  // no longer worth paying for it.
  int32_t retire_after = 24;
};

// What the policy needs of one request this step.
struct BudgetRequest {
  const AcceptanceRates* rates = nullptr;
  int32_t max_budget = 0;           // the configured budget (the fixed setting)
  int32_t steps_without_draft = 0;  // since its last draft (the caller counts)
};

struct BudgetChoice {
  std::vector<int32_t> budgets;  // per request, in order
  std::vector<bool> probes;      // per request: its budget is a probe (the policy itself chose 0)
  double predicted_rate = 0.0;   // committed tokens per second the choice expects (0: no timing yet)
  // Whether speculating beats decoding without the providers once their per-step work (following
  // every forward, whatever the budgets) is counted: false when the best rate, paying it, is below
  // plain decoding's. A step where it does not pay is one the requests were kept from drafting.
  bool following_pays = true;
};

class DraftBudgetPolicy {
 public:
  explicit DraftBudgetPolicy(DraftBudgetOptions options = {}) : options_(options) {}

  // base_rows: the step's forward rows without drafts (one per decoding request, plus prefill
  // rows); base_tokens: the tokens it commits without drafts (one per decoding request, whether
  // it speculates or not); following_seconds: the providers' per-step work while they follow the
  // requests (draft models' forward hooks), paid at any budget. Until the curve has seen a
  // forward the configured budgets are used.
  BudgetChoice choose(int64_t base_rows, int64_t base_tokens, const std::vector<BudgetRequest>& requests,
                      const StepTimeCurve& step_time, const DraftCost& draft_cost,
                      double following_seconds = 0.0) const;

 private:
  DraftBudgetOptions options_;
};

}  // namespace drift::speculation
