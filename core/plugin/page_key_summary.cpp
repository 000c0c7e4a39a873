#include "core/plugin/page_key_summary.h"

#include <algorithm>

#include "core/plugin/page_block_index.h"
#include "core/plugin/tensor_checks.h"

namespace drift {

using namespace tensor_checks;

std::vector<int32_t> filled_slots(const EngineKvAccess& kv, drift_seq_id_t seq, const drift_page_id_t* pages,
                                  int32_t num_pages) {
  const drift_page_id_t* table = nullptr;
  int64_t table_pages = 0, num_tokens = 0;
  if (drift_status_t status = kv.block_table(seq, &table, &table_pages, &num_tokens); status != DRIFT_OK)
    refuse(status, "sequence {}: no block table", seq);
  const PageBlockIndex index(std::span<const int32_t>(table, static_cast<size_t>(std::max<int64_t>(table_pages, 0))));
  std::vector<int32_t> filled(num_pages);
  for (int32_t i = 0; i < num_pages; ++i) {
    const int64_t block = index.block_of(pages[i]);
    if (block < 0) invalid("pages[{}] = {} is not in sequence {}'s block table", i, pages[i], seq);
    filled[i] = static_cast<int32_t>(std::clamp<int64_t>(num_tokens - block * kv.block_size, 0, kv.block_size));
    if (filled[i] == 0) invalid("pages[{}] = {} holds no KV yet", i, pages[i]);
  }
  return filled;
}

}  // namespace drift
