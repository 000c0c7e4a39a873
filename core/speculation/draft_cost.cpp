#include "core/speculation/draft_cost.h"

#include <algorithm>
#include <cmath>

namespace drift::speculation {

void DraftCost::observe(int64_t deepest, int64_t total, double seconds) {
  if (deepest <= 0 || total <= 0 || !(seconds >= 0.0)) return;
  const std::array<double, 3> x = {1.0, static_cast<double>(deepest), static_cast<double>(total)};
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) xtx_[i][j] = xtx_[i][j] * decay_ + x[i] * x[j];
    xty_[i] = xty_[i] * decay_ + x[i] * seconds;
  }
  weight_ = weight_ * decay_ + 1.0;
  fitted_ = false;
}

// Solves (X'X + ridge) c = X'y by Gaussian elimination with partial pivoting, then drops any
// negative coefficient and refits the rest (a cost never falls with more drafting).
void DraftCost::fit() const {
  fitted_ = true;
  coef_ = {0.0, 0.0, 0.0};
  if (weight_ <= 0.0) return;
  std::array<bool, 3> active = {true, true, true};
  for (int round = 0; round < 3; ++round) {
    double a[3][4] = {};
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 3; ++j) a[i][j] = active[i] && active[j] ? xtx_[i][j] : (i == j ? 1.0 : 0.0);
      a[i][i] += 1e-9 * (1.0 + std::abs(xtx_[i][i]));  // ridge: collinear features (batch 1) stay solvable
      a[i][3] = active[i] ? xty_[i] : 0.0;
    }
    for (int col = 0; col < 3; ++col) {
      int pivot = col;
      for (int r = col + 1; r < 3; ++r)
        if (std::abs(a[r][col]) > std::abs(a[pivot][col])) pivot = r;
      std::swap(a[col], a[pivot]);
      if (std::abs(a[col][col]) < 1e-300) continue;
      for (int r = 0; r < 3; ++r) {
        if (r == col) continue;
        const double f = a[r][col] / a[col][col];
        for (int k = col; k < 4; ++k) a[r][k] -= f * a[col][k];
      }
    }
    bool negative = false;
    for (int i = 0; i < 3; ++i) {
      coef_[i] = active[i] && std::abs(a[i][i]) > 1e-300 ? a[i][3] / a[i][i] : 0.0;
      if (active[i] && coef_[i] < 0.0) {
        active[i] = false;
        negative = true;
      }
    }
    if (!negative) return;
  }
  for (double& c : coef_) c = std::max(c, 0.0);
}

double DraftCost::predict(int64_t deepest, int64_t total) const {
  if (deepest <= 0 || total <= 0) return 0.0;
  if (!fitted_) fit();
  return coef_[0] + coef_[1] * static_cast<double>(deepest) + coef_[2] * static_cast<double>(total);
}

}  // namespace drift::speculation
