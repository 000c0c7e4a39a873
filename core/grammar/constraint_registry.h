#pragma once
// ConstraintRegistry: the engine's TokenConstraints, one per distinct structured output (by its
// key), over the engine's vocabulary -- built from the tokenizer on first use -- so requests
// with the same schema share the grammar states and masks already computed. Engine thread only.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/grammar/lru_map.h"
#include "core/grammar/structured_output.h"
#include "core/grammar/token_constraint.h"

namespace drift {
class Tokenizer;
}

namespace drift::grammar {

class ConstraintRegistry {
 public:
  // end_tokens: the model's end-of-sequence ids (allowed where a grammar may end).
  ConstraintRegistry(const Tokenizer& tokenizer, int32_t vocab_size, std::vector<int32_t> end_tokens);

  std::shared_ptr<TokenConstraint> constraint(const StructuredOutput& output);
  const VocabularyTrie& vocabulary();

 private:
  const Tokenizer& tokenizer_;
  int32_t vocab_size_;
  std::vector<int32_t> end_tokens_;
  std::shared_ptr<const VocabularyTrie> vocabulary_;
  // Kept after their requests finish (a request still using one keeps its shared_ptr).
  LruMap<std::shared_ptr<TokenConstraint>> constraints_{64};
};

}  // namespace drift::grammar
