#pragma once
#include <cstdint>

namespace drift::cpu {

// y[t, o] = sum_i x[t, i] * w[o, i] (+ bias[o]): a linear layer with PyTorch's [out, in] weight
// layout. `bias` may be null. Rows of y are independent of each other (see dot.h).
void linear(const float* x, const float* w, const float* bias, float* y, int64_t rows,
            int64_t in_features, int64_t out_features);

}  // namespace drift::cpu
