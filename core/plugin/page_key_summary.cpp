#include "core/plugin/page_key_summary.h"

#include <algorithm>
#include <unordered_map>

#include "core/plugin/tensor_checks.h"

namespace drift {

using namespace tensor_checks;

std::vector<int32_t> filled_slots(const EngineKvAccess& kv, drift_seq_id_t seq, const drift_page_id_t* pages,
                                  int32_t num_pages) {
  const drift_page_id_t* table = nullptr;
  int64_t table_pages = 0, num_tokens = 0;
  if (drift_status_t status = kv.block_table(seq, &table, &table_pages, &num_tokens); status != DRIFT_OK)
    refuse(status, "sequence {}: no block table", seq);
  std::unordered_map<drift_page_id_t, int64_t> block_of;
  for (int64_t b = 0; b < table_pages; ++b) block_of.emplace(table[b], b);
  std::vector<int32_t> filled(num_pages);
  for (int32_t i = 0; i < num_pages; ++i) {
    auto it = block_of.find(pages[i]);
    if (it == block_of.end()) invalid("pages[{}] = {} is not in sequence {}'s block table", i, pages[i], seq);
    filled[i] = static_cast<int32_t>(std::clamp<int64_t>(num_tokens - it->second * kv.block_size, 0, kv.block_size));
    if (filled[i] == 0) invalid("pages[{}] = {} holds no KV yet", i, pages[i]);
  }
  return filled;
}

}  // namespace drift
