// The CPU backend's ops that serve only the plugin compute services (drift/plugin.h): SwiGLU on
// separate tensors, softmax at a temperature, top-k, page key summaries and page scores, in fp32.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/cpu_backend.h"
#include "kernels/cpu/activation.h"
#include "kernels/cpu/page_scores.h"

namespace drift {

void CpuBackend::silu_mul_pair(const Tensor& gate, const Tensor& up, Tensor& out) {
  // The fused kernel's formula (kernels/cpu/activation.cpp), elementwise, so in place is safe.
  const float* g = gate.as<float>();
  const float* u = up.as<float>();
  float* o = out.as<float>();
  for (int64_t i = 0; i < gate.numel(); ++i) o[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
}

void CpuBackend::softmax(const Tensor& x, float temperature, Tensor& out) {
  const int64_t cols = x.ndim() == 0 ? 1 : x.dim(x.ndim() - 1);
  const float* in = x.as<float>();
  float* o = out.as<float>();
  for (int64_t i = 0; i < x.numel(); ++i) o[i] = in[i] / temperature;
  cpu::softmax(o, x.numel() / cols, cols);
}

void CpuBackend::top_k(const Tensor& x, int32_t k, Tensor& values, Tensor& indices) {
  const int64_t rows = x.dim(0), v = x.dim(1);
  // Descending by value, ties by lowest index; NaN ranks below every number (a total order, as
  // std::partial_sort requires).
  std::vector<int32_t> order(v);
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = x.as<float>() + r * v;
    std::iota(order.begin(), order.end(), 0);
    auto before = [row](int32_t a, int32_t b) {
      const float va = row[a], vb = row[b];
      const bool na = std::isnan(va), nb = std::isnan(vb);
      if (na != nb) return nb;
      if (!na && va != vb) return va > vb;
      return a < b;
    };
    std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
    for (int32_t j = 0; j < k; ++j) {
      values.as<float>()[r * k + j] = row[order[j]];
      indices.as<int32_t>()[r * k + j] = order[j];
    }
  }
}

void CpuBackend::key_summary(const Tensor& keys, std::span<const int32_t> pages, std::span<const int32_t> filled,
                             int64_t block_size, Tensor& kmax, Tensor& kmin) {
  const int64_t row = keys.dim(1) * keys.dim(2);
  for (size_t i = 0; i < pages.size(); ++i) {
    float* hi = kmax.as<float>() + i * row;
    float* lo = kmin.as<float>() + i * row;
    const float* first = keys.as<float>() + static_cast<int64_t>(pages[i]) * block_size * row;
    std::copy(first, first + row, hi);
    std::copy(first, first + row, lo);
    for (int64_t slot = 1; slot < filled[i]; ++slot)
      for (int64_t j = 0; j < row; ++j) {
        hi[j] = std::max(hi[j], first[slot * row + j]);
        lo[j] = std::min(lo[j], first[slot * row + j]);
      }
  }
}

void CpuBackend::page_scores(const Tensor& q, const Tensor& kmax, const Tensor& kmin, Tensor& out) {
  cpu::page_scores(q.as<float>(), kmax.as<float>(), kmin.as<float>(), out.as<float>(), q.dim(0), q.dim(1), kmax.dim(1),
                   q.dim(2), kmax.dim(0));
}

}  // namespace drift
