// KVCacheManager::check_integrity() must be able to fail: each test damages one invariant
// through a test-only peer (a friend of the manager, outside its public API) and expects the
// matching error — ref counts, retains, the free list and block tables.
#include <gtest/gtest.h>

#include <functional>

#include "core/error.h"
#include "core/kv_cache_manager.h"
#include "core/kv_cache_manager_state.h"

namespace drift {

class KVCacheManagerTestPeer {
 public:
  using State = KVCacheManager::Impl;
  static State& state(KVCacheManager& kv) { return *kv.impl_; }
};

namespace {

// 8 pages of 4 tokens: sequence 0 holds pages 0-2 (10 tokens), page 3 is retained by a cache
// manager after its sequence went away, pages 4-7 are free.
struct DamagedCache {
  KVCacheManager kv{8, 4};
  SeqHandle seq = kv.create_sequence();
  DamagedCache() {
    kv.append(seq, 10);
    const SeqHandle cached = kv.create_sequence();
    kv.append(cached, 4);
    kv.retain_page(kv.block_table(cached)[0]);
    kv.free(cached);
  }
  KVCacheManagerTestPeer::State& state() { return KVCacheManagerTestPeer::state(kv); }
};

struct Damage {
  const char* name;
  std::function<void(DamagedCache&)> apply;
  const char* expected;
};

// Applies each damage to a fresh, intact cache and expects check_integrity to name it.
void expect_reported(const std::vector<Damage>& damages) {
  for (const Damage& damage : damages) {
    SCOPED_TRACE(damage.name);
    DamagedCache cache;
    ASSERT_NO_THROW(cache.kv.check_integrity());
    damage.apply(cache);
    try {
      cache.kv.check_integrity();
      ADD_FAILURE() << "damage went unnoticed";
    } catch (const DriftError& e) {
      EXPECT_NE(std::string(e.what()).find(damage.expected), std::string::npos) << e.what();
    }
  }
}

TEST(KVCacheIntegrityTest, RefCountDamageIsReported) {
  expect_reported({
      {"ref_count_too_high", [](DamagedCache& c) { c.state().refs[1]++; },
       "page 1 has ref count 2 but 1 block-table entries and 0 retains"},
      {"retain_lost", [](DamagedCache& c) { c.state().retains[3] = 0; },
       "page 3 has ref count 1 but 0 block-table entries and 0 retains"},
      {"negative_retain", [](DamagedCache& c) { c.state().retains[3] = -1; }, "page 3 has negative retain count -1"},
  });
}

TEST(KVCacheIntegrityTest, FreeListDamageIsReported) {
  expect_reported({
      {"free_page_listed_twice", [](DamagedCache& c) { c.state().free_list.push_back(c.state().free_list.back()); },
       "is on the free list twice"},
      {"used_page_on_free_list", [](DamagedCache& c) { c.state().free_list.push_back(2); },
       "page 2 is on the free list with ref count 1"},
      {"free_page_missing_from_list", [](DamagedCache& c) { std::erase(c.state().free_list, 6); },
       "page 6 has ref count 0 but is not on the free list"},
      {"free_list_id_out_of_range", [](DamagedCache& c) { c.state().free_list.push_back(8); },
       "free list holds page id 8 out of range"},
  });
}

TEST(KVCacheIntegrityTest, BlockTableDamageIsReported) {
  expect_reported({
      {"more_pages_than_length_needs", [](DamagedCache& c) { c.state().seqs[c.seq].length = 8; },
       "sequence 0 of length 8 has 3 pages, needs exactly 2"},
      {"negative_length", [](DamagedCache& c) { c.state().seqs[c.seq].length = -1; },
       "sequence 0 has negative length -1"},
      {"page_named_twice", [](DamagedCache& c) { c.state().seqs[c.seq].pages[2] = 0; }, "sequence 0 names page 0 twice"},
      {"page_id_out_of_range", [](DamagedCache& c) { c.state().seqs[c.seq].pages[1] = 99; },
       "sequence 0 names page id 99 out of range"},
  });
}

}  // namespace
}  // namespace drift
