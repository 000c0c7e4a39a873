#pragma once
// ConstraintRegistry: the engine's TokenConstraints, one per distinct structured output (by its
// key), over the engine's vocabulary -- built from the tokenizer on first use -- so requests
// with the same schema share the grammar states and masks already computed. Engine thread only.
#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

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
  static constexpr size_t kCapacity = 64;  // constraints kept after their requests finish
  const Tokenizer& tokenizer_;
  int32_t vocab_size_;
  std::vector<int32_t> end_tokens_;
  std::shared_ptr<const VocabularyTrie> vocabulary_;
  std::list<std::string> order_;  // most recently used first
  std::unordered_map<std::string, std::pair<std::shared_ptr<TokenConstraint>, std::list<std::string>::iterator>>
      constraints_;
};

}  // namespace drift::grammar
