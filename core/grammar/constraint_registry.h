#pragma once
// ConstraintRegistry: the engine's TokenConstraints, one per distinct structured output (by its
// key), over the engine's vocabulary -- built from the tokenizer in the background from
// construction on (vocabulary() waits for it) -- so requests
// with the same schema share the grammar states and masks already computed; and the mask workers
// that compute their masks ahead (mask_workers.h). Called from the engine thread only.
#include <cstdint>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "core/grammar/lru_map.h"
#include "core/grammar/mask_workers.h"
#include "core/grammar/structured_output.h"
#include "core/grammar/token_constraint.h"

namespace drift {
class Tokenizer;
}

namespace drift::grammar {

class ConstraintRegistry {
 public:
  // end_tokens: the model's end-of-sequence ids (allowed where a grammar may end); mask_workers:
  // threads computing masks ahead (0: none, every mask computed when the engine asks for it).
  ConstraintRegistry(const Tokenizer& tokenizer, int32_t vocab_size, std::vector<int32_t> end_tokens,
                     int mask_workers = 0);

  std::shared_ptr<TokenConstraint> constraint(const StructuredOutput& output);
  const VocabularyTrie& vocabulary();
  MaskWorkers& workers() { return workers_; }

 private:
  const Tokenizer& tokenizer_;
  int32_t vocab_size_;
  std::vector<int32_t> end_tokens_;
  std::future<std::shared_ptr<const VocabularyTrie>> building_;  // until vocabulary() takes it
  std::shared_ptr<const VocabularyTrie> vocabulary_;
  // Kept after their requests finish (a request still using one keeps its shared_ptr).
  LruMap<std::shared_ptr<TokenConstraint>> constraints_{64};
  MaskWorkers workers_;  // last: stopped before the constraints go (its jobs hold their own references)
};

}  // namespace drift::grammar
