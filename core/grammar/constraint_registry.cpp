#include "core/grammar/constraint_registry.h"

#include <algorithm>
#include <system_error>

#include "core/tokenizer/tokenizer.h"

namespace drift::grammar {

ConstraintRegistry::ConstraintRegistry(const Tokenizer& tokenizer, int32_t vocab_size, std::vector<int32_t> end_tokens,
                                       int mask_workers, int explored_masks)
    : tokenizer_(tokenizer),
      vocab_size_(vocab_size),
      end_tokens_(std::move(end_tokens)),
      explored_masks_(explored_masks < 0 ? kExploredMasks : std::min(kExploredMasks, size_t(explored_masks))),
      workers_(mask_workers) {
  const auto build = [this] {
    // The model's vocabulary may be larger than the tokenizer's (padding rows): those ids are
    // never text.
    std::vector<std::optional<std::string>> bytes(static_cast<size_t>(vocab_size_));
    for (int32_t id = 0; id < vocab_size_; ++id) bytes[id] = tokenizer_.token_bytes(id);
    return std::make_shared<const VocabularyTrie>(bytes);
  };
  // Tokenizer::token_bytes only reads the tokenizer's tables: safe beside the engine's encoding.
  // Without a thread to spare, the first request with a format builds it.
  try {
    building_ = std::async(std::launch::async, build);
  } catch (const std::system_error&) {
    building_ = std::async(std::launch::deferred, build);
  }
}

const VocabularyTrie& ConstraintRegistry::vocabulary() {
  if (!vocabulary_) {
    if (!building_.valid()) throw GrammarError("the vocabulary trie could not be built");
    vocabulary_ = building_.get();  // rethrows what the build threw, once
  }
  return *vocabulary_;
}

std::shared_ptr<TokenConstraint> ConstraintRegistry::constraint(const StructuredOutput& output) {
  if (auto* known = constraints_.find(output.key)) return known->constraint;
  vocabulary();
  auto made = std::make_shared<TokenConstraint>(*output.grammar, vocabulary_, end_tokens_);
  const size_t budget = exploration_budget(made->mask_bytes());
  constraints_.add(output.key, Entry{made, budget});
  workers_.explore(made, budget);
  return made;
}

size_t ConstraintRegistry::exploration_budget(size_t mask_bytes) {
  if (workers_.threads() == 0) return 0;  // nobody would explore
  // Each cached grammar's masks, or what its exploration may still compute when more: several
  // schemas compiled in one step must not each count on the room none has filled yet.
  size_t held = 0;
  constraints_.for_each(
      [&](const Entry& e) { held += std::max(e.constraint->cached_masks(), e.explored) * mask_bytes; });
  const size_t room = held < kCachedBytes ? kCachedBytes - held : 0;
  return std::min({explored_masks_, kExploredBytes / mask_bytes, room / mask_bytes});
}

}  // namespace drift::grammar
