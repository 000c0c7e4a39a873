#pragma once
#include <cstdint>

namespace drift::cpu {

// y[r] = x[r] / sqrt(mean(x[r]^2) + eps) * weight, for `rows` rows of `dim` floats.
// Accumulates the mean square in double so the result matches an fp32 reference closely.
void rms_norm(const float* x, const float* weight, float* y, int64_t rows, int64_t dim, float eps);

}  // namespace drift::cpu
