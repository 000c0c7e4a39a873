#pragma once
// ConstraintRegistry: the engine's TokenConstraints, one per distinct structured output (by its
// key), over the engine's vocabulary -- built from the tokenizer in the background from
// construction on (vocabulary() waits for it) -- so requests
// with the same schema share the grammar states and masks already computed; and the mask workers
// that compute their masks ahead (mask_workers.h), exploring each new grammar's likeliest states
// from the moment it is compiled, before its first request's prefill is done
// (mask_exploration.h). Called from the engine thread only.
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
  // threads computing masks ahead (0: none, every mask computed when the engine asks for it);
  // explored_masks: at most this many of a new grammar's masks explored (-1: kExploredMasks).
  ConstraintRegistry(const Tokenizer& tokenizer, int32_t vocab_size, std::vector<int32_t> end_tokens,
                     int mask_workers = 0, int explored_masks = -1);

  std::shared_ptr<TokenConstraint> constraint(const StructuredOutput& output);
  const VocabularyTrie& vocabulary();
  MaskWorkers& workers() { return workers_; }

  // How many states of a new grammar the workers explore: at most explored_masks, and no more than
  // kExploredBytes of masks, nor past kCachedBytes for all the registry's grammars together (so a
  // server seeing a new tool schema in every request does not fill its memory with masks).
  size_t exploration_budget(size_t mask_bytes);
  static constexpr size_t kExploredMasks = TokenConstraint::kMaxCachedMasks / 4;
  static constexpr size_t kExploredBytes = size_t{16} << 20;
  static constexpr size_t kCachedBytes = size_t{256} << 20;

 private:
  const Tokenizer& tokenizer_;
  int32_t vocab_size_;
  std::vector<int32_t> end_tokens_;
  size_t explored_masks_;
  std::future<std::shared_ptr<const VocabularyTrie>> building_;  // until vocabulary() takes it
  std::shared_ptr<const VocabularyTrie> vocabulary_;
  // Kept after their requests finish (a request still using one keeps its shared_ptr), each with
  // the masks its exploration was given.
  struct Entry {
    std::shared_ptr<TokenConstraint> constraint;
    size_t explored = 0;
  };
  LruMap<Entry> constraints_{64};
  MaskWorkers workers_;  // last: stopped before the constraints go (its jobs hold their own references)
};

}  // namespace drift::grammar
