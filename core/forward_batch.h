#pragma once
// ForwardBatch: one ragged forward of the target model — prefill chunks, decode tokens and
// (later) tree-verification nodes of many sequences, laid out token by token.
#include <cstdint>
#include <vector>

#include "core/backend.h"

namespace drift {

struct ForwardBatch {
  std::vector<int32_t> tokens;       // [T] token ids
  std::vector<int32_t> positions;    // [T] rope positions
  AttentionMetadata attention;       // per-token sequence, visible length, KV slot; block tables
  std::vector<int32_t> logit_rows;   // tokens whose next-token logits are returned, in order

  int64_t num_tokens() const { return static_cast<int64_t>(tokens.size()); }
};

// What runs a ForwardBatch: the real ModelRunner, or a fake in scheduler tests.
class ModelExecutor {
 public:
  virtual ~ModelExecutor() = default;
  virtual int64_t vocab_size() const = 0;
  // Host fp32 logits [logit_rows.size(), vocab].
  virtual Tensor forward(const ForwardBatch& batch) = 0;
  // Copies the KV contents of one page to another (copy-on-write support).
  virtual void copy_page(int32_t src, int32_t dst) = 0;
};

}  // namespace drift
