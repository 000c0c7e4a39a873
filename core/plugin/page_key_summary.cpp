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
  // The usual request is a run of consecutive blocks (SpecPV summarises new blocks as they fill):
  // found with one scan; any other set goes through a map of the whole table.
  std::vector<int64_t> blocks(num_pages, -1);
  if (num_pages > 0) {
    const drift_page_id_t* first = std::find(table, table + table_pages, pages[0]);
    const int64_t start = first - table;
    for (int32_t i = 0; i < num_pages && start + i < table_pages && table[start + i] == pages[i]; ++i)
      blocks[i] = start + i;
  }
  if (num_pages > 0 && blocks.back() < 0) {
    std::unordered_map<drift_page_id_t, int64_t> block_of;
    for (int64_t b = 0; b < table_pages; ++b) block_of.emplace(table[b], b);
    for (int32_t i = 0; i < num_pages; ++i) {
      auto it = block_of.find(pages[i]);
      blocks[i] = it == block_of.end() ? -1 : it->second;
    }
  }
  std::vector<int32_t> filled(num_pages);
  for (int32_t i = 0; i < num_pages; ++i) {
    if (blocks[i] < 0) invalid("pages[{}] = {} is not in sequence {}'s block table", i, pages[i], seq);
    filled[i] = static_cast<int32_t>(std::clamp<int64_t>(num_tokens - blocks[i] * kv.block_size, 0, kv.block_size));
    if (filled[i] == 0) invalid("pages[{}] = {} holds no KV yet", i, pages[i]);
  }
  return filled;
}

}  // namespace drift
