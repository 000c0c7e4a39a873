// The prefix cache's page index on its own: chains match only the same tokens under the same
// salt and model identity; a hash that collides for everything still never returns a page for
// other tokens; eviction takes least-recently-used leaves first, never a page a sequence reads,
// never the node being extended, and a parent only once its children are gone.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "page_index.h"

namespace drift::prefix_cache {
namespace {

using ::testing::ElementsAre;
using Tokens = std::vector<Token>;

constexpr int64_t kBlock = 4;

auto nothing_in_use = [](PageId) { return false; };

// Inserts `tokens`' full blocks as a chain on pages first_page, first_page + 1, ...
std::vector<NodeId> insert_chain(PageIndex& index, const Tokens& tokens, const std::string& salt, PageId first_page) {
  std::vector<NodeId> nodes;
  NodeId parent = kRoot;
  for (size_t b = 0; b + kBlock <= tokens.size(); b += kBlock) {
    const std::span<const Token> block(tokens.data() + b, kBlock);
    parent = index.insert(parent, block, salt, first_page + static_cast<PageId>(b / kBlock));
    nodes.push_back(parent);
  }
  return nodes;
}

std::vector<PageId> pages_of(const PageIndex& index, const std::vector<NodeId>& nodes) {
  std::vector<PageId> pages;
  for (NodeId n : nodes) pages.push_back(index.page(n));
  return pages;
}

TEST(PageIndex, MatchesTheLongestCachedChainOfFullBlocks) {
  PageIndex index(kBlock, 7);
  insert_chain(index, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, "", 20);
  EXPECT_THAT(pages_of(index, index.walk(Tokens{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}, "", 8)),
              ElementsAre(20, 21, 22));
  EXPECT_THAT(pages_of(index, index.walk(Tokens{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, "", 2)), ElementsAre(20, 21));
  EXPECT_THAT(pages_of(index, index.walk(Tokens{1, 2, 3, 4, 5, 6, 7, 0, 9, 10, 11, 12}, "", 8)), ElementsAre(20));
  EXPECT_THAT(pages_of(index, index.walk(Tokens{1, 2, 3, 4, 5, 6, 7}, "", 8)), ElementsAre(20))
      << "partial blocks never match";
  EXPECT_TRUE(index.walk(Tokens{0, 2, 3, 4, 5, 6, 7, 8}, "", 8).empty());
  // A block is keyed by its whole prefix: block 1's tokens after another block 0 are a miss.
  EXPECT_TRUE(index.walk(Tokens{5, 6, 7, 8}, "", 8).empty());
}

TEST(PageIndex, SaltsAndModelIdentitiesNeverShareAPage) {
  PageIndex index(kBlock, 7);
  const Tokens prompt = {1, 2, 3, 4, 5, 6, 7, 8};
  insert_chain(index, prompt, "tenant-a", 30);
  EXPECT_EQ(index.walk(prompt, "tenant-a", 8).size(), 2u);
  EXPECT_TRUE(index.walk(prompt, "tenant-b", 8).empty());
  EXPECT_TRUE(index.walk(prompt, "", 8).empty());
  insert_chain(index, prompt, "tenant-b", 40);  // the same tokens cached twice, once per salt
  EXPECT_THAT(pages_of(index, index.walk(prompt, "tenant-b", 8)), ElementsAre(40, 41));
  EXPECT_THAT(pages_of(index, index.walk(prompt, "tenant-a", 8)), ElementsAre(30, 31));
}

// Every key equal: lookups must still separate chains by parent, tokens and salt.
TEST(PageIndex, ACollidingHashNeverReturnsAPageForOtherTokens) {
  PageIndex index(kBlock, 7, [](uint64_t, std::span<const Token>, uint64_t) { return uint64_t{42}; });
  insert_chain(index, {1, 2, 3, 4, 5, 6, 7, 8}, "", 10);
  insert_chain(index, {9, 9, 9, 9, 5, 6, 7, 8}, "", 20);
  insert_chain(index, {1, 2, 3, 4}, "x", 30);
  EXPECT_THAT(pages_of(index, index.walk(Tokens{1, 2, 3, 4, 5, 6, 7, 8}, "", 8)), ElementsAre(10, 11));
  EXPECT_THAT(pages_of(index, index.walk(Tokens{9, 9, 9, 9, 5, 6, 7, 8}, "", 8)), ElementsAre(20, 21));
  EXPECT_THAT(pages_of(index, index.walk(Tokens{1, 2, 3, 4}, "x", 8)), ElementsAre(30));
  EXPECT_TRUE(index.walk(Tokens{1, 2, 3, 5}, "", 8).empty());
  EXPECT_TRUE(index.walk(Tokens{9, 9, 9, 9, 5, 6, 7, 9}, "", 8).size() == 1);
}

TEST(PageIndex, EvictsLeastRecentlyUsedLeavesFirst) {
  PageIndex index(kBlock, 7);
  const std::vector<NodeId> a = insert_chain(index, {1, 1, 1, 1, 2, 2, 2, 2}, "", 10);  // pages 10, 11
  const std::vector<NodeId> b = insert_chain(index, {3, 3, 3, 3, 4, 4, 4, 4}, "", 20);  // pages 20, 21
  index.touch(a);  // a is now the more recent chain
  // Leaves go before their parents, the older chain first; a parent is a leaf once its child is gone.
  EXPECT_THAT(index.evict(1, nothing_in_use), ElementsAre(21));
  EXPECT_THAT(index.evict(2, nothing_in_use), ElementsAre(20, 11));
  EXPECT_THAT(index.evict(5, nothing_in_use), ElementsAre(10));
  EXPECT_EQ(index.size(), 0);
}

TEST(PageIndex, NeverEvictsPagesInUseOrTheNodeBeingExtended) {
  PageIndex index(kBlock, 7);
  const std::vector<NodeId> a = insert_chain(index, {1, 1, 1, 1, 2, 2, 2, 2}, "", 10);
  const std::vector<NodeId> b = insert_chain(index, {3, 3, 3, 3}, "", 20);
  auto page_11_in_use = [](PageId p) { return p == 11; };
  EXPECT_THAT(index.evict(10, page_11_in_use, b.back()), ElementsAre()) << "10 has a child, 11 is read, 20 is kept";
  EXPECT_THAT(index.evict(10, page_11_in_use), ElementsAre(20));
  EXPECT_THAT(index.evict(10, nothing_in_use), ElementsAre(11, 10));
}

TEST(PageIndex, ChildFindsAnExistingPageForTheSameBlock) {
  PageIndex index(kBlock, 7);
  const std::vector<NodeId> a = insert_chain(index, {1, 2, 3, 4, 5, 6, 7, 8}, "", 10);
  const Tokens block = {5, 6, 7, 8};
  EXPECT_EQ(index.child(a[0], block, ""), a[1]);
  EXPECT_FALSE(index.child(kRoot, block, ""));
  EXPECT_FALSE(index.child(a[0], block, "other"));
  EXPECT_FALSE(index.child(a[0], Tokens{5, 6, 7}, "")) << "only full blocks";
}

TEST(PageIndex, DifferentModelIdentitiesKeyDifferently) {
  // Two indexes with different identities give different keys for the same chain: the chain
  // hash is seeded with it (checked through the hash function the index calls).
  std::vector<uint64_t> seeds;
  auto recording_hash = [&](uint64_t parent, std::span<const Token> tokens, uint64_t seed) {
    seeds.push_back(seed);
    return xxh3_chain_hash(parent, tokens, seed);
  };
  PageIndex first(kBlock, 1, recording_hash), second(kBlock, 2, recording_hash);
  insert_chain(first, {1, 2, 3, 4}, "", 0);
  insert_chain(second, {1, 2, 3, 4}, "", 0);
  ASSERT_EQ(seeds.size(), 2u);
  EXPECT_NE(seeds[0], seeds[1]);
}

}  // namespace
}  // namespace drift::prefix_cache
