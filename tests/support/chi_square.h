#pragma once
// Chi-square tests for the sampling suites: two samples against each other (plain against
// speculative sampling), and one sample against exact probabilities (a masked distribution).
#include <cstdint>
#include <map>
#include <vector>

namespace drift::test {

struct ChiSquare {
  double statistic = 0;
  int64_t dof = 0;
  double p_value = 1;
};

// Two samples of equal size over the same categories; categories with fewer than 10 draws in
// both samples together are pooled.
ChiSquare two_sample_chi_square(const std::map<std::vector<int32_t>, int64_t>& a,
                                const std::map<std::vector<int32_t>, int64_t>& b);

// Draw counts per category against each category's probability (`expected` sums to 1 over every
// category that can occur; a drawn category missing from it has probability 0, which rejects).
// Categories expected fewer than 5 times are pooled.
ChiSquare one_sample_chi_square(const std::map<int32_t, int64_t>& counts, const std::map<int32_t, double>& expected);

}  // namespace drift::test
