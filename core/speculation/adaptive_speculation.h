#pragma once
// AdaptiveSpeculation: the state adaptive speculation keeps across steps (one per engine) and the
// budgets it hands the draft providers. The speculator reports what it measures -- every forward's
// rows and time, every drafting round's budgets and time, every verification's drafted depth and
// accepted tokens -- and asks, at the end of each step, for the next budgets (DraftBudgetPolicy).
// It also counts the budgets it chose, for metrics and `drift bench`.
#include <cstdint>
#include <map>
#include <span>
#include <unordered_map>
#include <vector>

#include "core/speculation/acceptance_rates.h"
#include "core/speculation/draft_budget_policy.h"
#include "core/speculation/draft_cost.h"
#include "core/speculation/step_time_curve.h"

namespace drift::speculation {

class AdaptiveSpeculation {
 public:
  // max_depth: the deepest budget any request may get (the acceptance tracked per request).
  explicit AdaptiveSpeculation(int32_t max_depth, DraftBudgetOptions options = {});

  void observe_forward(int64_t rows, double seconds) { step_time_.observe(rows, seconds); }
  void observe_drafting(int64_t deepest, int64_t total, double seconds) {
    draft_cost_.observe(deepest, total, seconds);
  }
  void observe_verification(uint64_t seq, int32_t drafted_depth, int32_t accepted);

  // The next step's budgets for `seqs` (caps: each one's configured budget, already limited to
  // what it can still commit). base_rows / base_tokens / following_seconds: as
  // DraftBudgetPolicy::choose. Requests not in `seqs` are forgotten (finished or no longer
  // speculating). A step where following does not pay counts as kept at 0 for retirement.
  std::vector<int32_t> budgets(std::span<const uint64_t> seqs, std::span<const int32_t> caps, int64_t base_rows,
                               int64_t base_tokens, double following_seconds = 0.0);

  // Whether the policy has kept `seq` at 0 for retire_after steps in a row (probes aside): the
  // caller may stop its provider from following it (PluginHost::retire_draft_provider).
  bool retired(uint64_t seq) const;
  // Whether the policy has drafted for `seq` for its expected gain (not probes, with the following
  // paid for) for retire_after steps in a row: its provider pays for it (ProviderRetirements::paid).
  bool pays(uint64_t seq) const;

  // How often each budget was chosen (0 = a request kept from drafting that step).
  const std::map<int32_t, int64_t>& chosen() const { return chosen_; }

 private:
  struct RequestState {
    explicit RequestState(const AcceptanceRates& population) : rates(population, AcceptancePrior{}) {}
    AcceptanceRates rates;
    int32_t steps_without_draft = 0;
    int32_t kept_at_zero = 0;  // the policy's own zeros in a row (probes do not count)
    int32_t paying = 0;        // steps in a row drafted for gain, following paid for
  };
  RequestState& state(uint64_t seq);

  int32_t max_depth_;
  DraftBudgetOptions options_;
  DraftBudgetPolicy policy_;
  StepTimeCurve step_time_;
  DraftCost draft_cost_;
  std::unordered_map<uint64_t, RequestState> requests_;
  // Every request's verifications together (slow decay): where a new request's rates start.
  AcceptanceRates population_;
  std::map<int32_t, int64_t> chosen_;
};

}  // namespace drift::speculation
