#include "support/chi_square.h"

#include <boost/math/distributions/chi_squared.hpp>
#include <limits>

namespace drift::test {
namespace {

double upper_tail(double statistic, int64_t dof) {
  if (dof <= 0) return 1.0;
  if (!(statistic < std::numeric_limits<double>::infinity())) return 0.0;
  return boost::math::cdf(boost::math::complement(boost::math::chi_squared(static_cast<double>(dof)), statistic));
}

}  // namespace

ChiSquare two_sample_chi_square(const std::map<std::vector<int32_t>, int64_t>& a,
                                const std::map<std::vector<int32_t>, int64_t>& b) {
  std::map<std::vector<int32_t>, std::pair<int64_t, int64_t>> both;
  for (const auto& [k, n] : a) both[k].first += n;
  for (const auto& [k, n] : b) both[k].second += n;
  ChiSquare r;
  std::pair<int64_t, int64_t> pooled{0, 0};
  int64_t categories = 0;
  auto add = [&](std::pair<int64_t, int64_t> c) {
    const double d = static_cast<double>(c.first - c.second);
    r.statistic += d * d / static_cast<double>(c.first + c.second);
    ++categories;
  };
  for (const auto& [k, c] : both) {
    if (c.first + c.second < 10) {
      pooled.first += c.first;
      pooled.second += c.second;
    } else {
      add(c);
    }
  }
  if (pooled.first + pooled.second > 0) add(pooled);
  r.dof = categories - 1;
  r.p_value = upper_tail(r.statistic, r.dof);
  return r;
}

ChiSquare one_sample_chi_square(const std::map<int32_t, int64_t>& counts, const std::map<int32_t, double>& expected) {
  int64_t total = 0;
  for (const auto& [k, n] : counts) total += n;
  ChiSquare r;
  for (const auto& [k, n] : counts)
    if (!expected.contains(k) || expected.at(k) <= 0.0) {  // drawn although impossible
      r.statistic = std::numeric_limits<double>::infinity();
      r.dof = 1;
      r.p_value = 0.0;
      return r;
    }
  double pooled_expected = 0.0;
  int64_t pooled_count = 0, categories = 0;
  for (const auto& [k, p] : expected) {
    const double e = p * static_cast<double>(total);
    const int64_t n = counts.contains(k) ? counts.at(k) : 0;
    if (e < 5.0) {
      pooled_expected += e;
      pooled_count += n;
      continue;
    }
    r.statistic += (static_cast<double>(n) - e) * (static_cast<double>(n) - e) / e;
    ++categories;
  }
  if (pooled_expected > 0.0) {
    r.statistic += (static_cast<double>(pooled_count) - pooled_expected) *
                   (static_cast<double>(pooled_count) - pooled_expected) / pooled_expected;
    ++categories;
  }
  r.dof = categories - 1;
  r.p_value = upper_tail(r.statistic, r.dof);
  return r;
}

}  // namespace drift::test
