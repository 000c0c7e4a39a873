#pragma once
// AcceptanceRates: one request's acceptance so far, as per-depth rates: a_k, the chance that the
// draft token at depth k is accepted once the tokens above it were. A verification that drafted
// to depth D and accepted L tokens says depths 1..L succeeded and, when L < D, that depth L + 1
// failed; deeper depths were never tried. The tokens a step commits with drafts down to depth d
// are then expected to be 1 + E(d), E(d) = sum over k <= d of a_1 ... a_k: concave in d (each
// term is the one before it times a rate <= 1), which is what lets DraftBudgetPolicy allocate
// draft rows greedily.
//
// The estimates start from an optimistic prior (so a new request is given drafts to learn from)
// and decay (so they follow the text: a request that starts copying its prompt gains, one that
// stops loses).
#include <cstdint>
#include <vector>

namespace drift::speculation {

struct AcceptancePrior {
  double rate = 0.6;    // prior mean of every a_k
  double weight = 2.0;  // in observations
  double decay = 0.95;  // weight of the past per observation of a depth (~20 steps)
};

class AcceptanceRates {
 public:
  AcceptanceRates(int32_t max_depth, AcceptancePrior prior = {});
  // A request's rates starting from what the engine saw of the others: prior means per depth from
  // `population` (weight prior.weight), so a new request does not pay for an optimistic start.
  AcceptanceRates(const AcceptanceRates& population, AcceptancePrior prior);

  // A verification of a draft `drafted_depth` deep that accepted `accepted` of its tokens.
  void observe(int32_t drafted_depth, int32_t accepted);
  double rate(int32_t depth) const;  // a_depth, depth in [1, max_depth]
  // g(depth) = a_1 ... a_depth: the expected tokens the depth-th draft token adds (E's increment).
  double gain(int32_t depth) const;
  double expected_accepted(int32_t depth) const;  // E(depth)
  int32_t max_depth() const { return static_cast<int32_t>(success_.size()); }
  int64_t observations() const { return observations_; }

 private:
  AcceptancePrior prior_;
  std::vector<double> prior_rate_;        // per depth (index depth - 1)
  std::vector<double> success_, trials_;  // decayed counts per depth (index depth - 1)
  int64_t observations_ = 0;
};

}  // namespace drift::speculation
