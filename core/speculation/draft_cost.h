#pragma once
// DraftCost: the drafting time a step pays (the host's own timing of the providers' hooks), as
// a function of what was asked: seconds ~ fixed + per_depth * deepest budget + per_node * total
// budget. A draft model's forwards run once per depth for the whole batch (the per-depth term); a
// lookup provider costs per node or nothing. The three coefficients are fitted by decayed least
// squares over the steps that drafted (small ridge, clamped at zero), so the model follows the
// provider and the load it actually runs.
#include <array>
#include <cstdint>

namespace drift::speculation {

class DraftCost {
 public:
  explicit DraftCost(double decay = 0.95) : decay_(decay) {}

  // A step that asked for drafts with these budgets took `seconds` of drafting.
  void observe(int64_t deepest, int64_t total, double seconds);
  // Predicted drafting seconds (0 when nothing is drafted or nothing was observed yet).
  double predict(int64_t deepest, int64_t total) const;

 private:
  void fit() const;

  double decay_;
  std::array<std::array<double, 3>, 3> xtx_{};  // decayed sums over observations, x = (1, deepest, total)
  std::array<double, 3> xty_{};
  double weight_ = 0.0;
  mutable bool fitted_ = false;
  mutable std::array<double, 3> coef_{};
};

}  // namespace drift::speculation
