#pragma once
// Logits shaping on the device (core/logit_adjustments.h's arithmetic): each entry adjusts one
// logit of one row in place. Entries of a row name distinct tokens.
#include <cuda_runtime.h>

#include <cstdint>

namespace drift::cuda {

struct LogitAdjustmentEntry {
  int32_t row = 0, token = 0;
  float before = 0.0f, positive_divisor = 1.0f, negative_factor = 1.0f, after = 0.0f;
};

// logits [rows, vocab] fp32; entries (device memory) with token in [0, vocab).
void adjust_logits(float* logits, int64_t vocab, const LogitAdjustmentEntry* entries, int64_t count,
                   cudaStream_t stream);

// Structured output's token masks: for each of `count` masked rows, rows[i] is the logit row and
// masks + i * words its bit mask (bit t % 32 of word t / 32 set: token t allowed); every other
// logit of the row becomes -infinity. Device memory; words * 32 >= vocab.
void mask_logits(float* logits, int64_t vocab, const int32_t* rows, const uint32_t* masks, int64_t words, int64_t count,
                 cudaStream_t stream);

}  // namespace drift::cuda
