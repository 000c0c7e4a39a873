#include "server/prompt_bound.h"

#include <algorithm>
#include <limits>

namespace drift::server {

size_t prompt_byte_bound(const Tokenizer& tokenizer, int64_t max_seq_len) {
  size_t longest = 0;
  for (int32_t id = 0; id < tokenizer.vocab_size(); ++id) longest = std::max(longest, tokenizer.decode({id}).size());
  const size_t per_token = (longest + 1) * 4;
  const auto tokens = static_cast<size_t>(std::max<int64_t>(max_seq_len, 1));
  if (tokens > std::numeric_limits<size_t>::max() / per_token) return 0;  // no useful bound
  return tokens * per_token;
}

}  // namespace drift::server
