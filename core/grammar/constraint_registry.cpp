#include "core/grammar/constraint_registry.h"

#include "core/tokenizer/tokenizer.h"

namespace drift::grammar {

ConstraintRegistry::ConstraintRegistry(const Tokenizer& tokenizer, int32_t vocab_size, std::vector<int32_t> end_tokens)
    : tokenizer_(tokenizer), vocab_size_(vocab_size), end_tokens_(std::move(end_tokens)) {}

const VocabularyTrie& ConstraintRegistry::vocabulary() {
  if (!vocabulary_) {
    // The model's vocabulary may be larger than the tokenizer's (padding rows): those ids are
    // never text.
    std::vector<std::optional<std::string>> bytes(static_cast<size_t>(vocab_size_));
    for (int32_t id = 0; id < vocab_size_; ++id) bytes[id] = tokenizer_.token_bytes(id);
    vocabulary_ = std::make_shared<const VocabularyTrie>(bytes);
  }
  return *vocabulary_;
}

std::shared_ptr<TokenConstraint> ConstraintRegistry::constraint(const StructuredOutput& output) {
  if (auto* known = constraints_.find(output.key)) return *known;
  vocabulary();
  auto made = std::make_shared<TokenConstraint>(*output.grammar, vocabulary_, end_tokens_);
  constraints_.add(output.key, made);
  return made;
}

}  // namespace drift::grammar
