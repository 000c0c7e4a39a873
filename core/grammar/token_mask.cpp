#include "core/grammar/token_mask.h"

#include <algorithm>
#include <limits>

namespace drift::grammar {

void apply_token_mask(float* row, int64_t vocab, const TokenMask& mask) {
  const auto covered = std::min<int64_t>(vocab, static_cast<int64_t>(mask.words.size()) * 32);
  for (int64_t id = 0; id < covered; ++id)
    if (!mask.allows(static_cast<int32_t>(id))) row[id] = -std::numeric_limits<float>::infinity();
  for (int64_t id = covered; id < vocab; ++id) row[id] = -std::numeric_limits<float>::infinity();
}

}  // namespace drift::grammar
