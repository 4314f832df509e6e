// The example's B+tree: a property test against std::map over random operations, split order,
// CLOCK eviction and page images.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>

#include "btree.h"

namespace kv {
namespace {

std::map<Key, std::string> contents(const BTree& tree) {
  std::map<Key, std::string> out;
  tree.scan(0, tree.size() + 1, [&](Key key, std::string_view value) {
    out.emplace(key, std::string(value));
  });
  return out;
}

TEST(BTree, MatchesStdMapOnRandomOperations) {
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    std::mt19937_64 rng(seed);
    BTree tree(/*leaf_capacity=*/4, /*fanout=*/4); // small nodes: many splits at every level
    std::map<Key, std::string> model;
    for (int step = 0; step < 20000; ++step) {
      Key key = rng() % 2000;
      switch (rng() % 4) {
      case 0:
      case 1: {
        std::string value(rng() % 40, static_cast<char>('a' + step % 26));
        bool inserted = tree.insert(key, value);
        EXPECT_EQ(inserted, model.find(key) == model.end());
        model[key] = value;
        break;
      }
      case 2:
        EXPECT_EQ(tree.erase(key), model.erase(key) == 1);
        break;
      case 3: {
        const std::string* found = tree.find(key);
        auto expected = model.find(key);
        ASSERT_EQ(found != nullptr, expected != model.end()) << "key " << key;
        if (found)
          EXPECT_EQ(*found, expected->second);
        break;
      }
      }
      if (step % 1000 == 0)
        ASSERT_EQ(tree.checkInvariants(), "") << "seed " << seed << " step " << step;
    }
    ASSERT_EQ(tree.checkInvariants(), "");
    EXPECT_EQ(tree.size(), model.size());
    EXPECT_EQ(contents(tree), model);
    EXPECT_GT(tree.counters().internal_splits, 0u);
    EXPECT_GE(tree.height(), 3u);
  }
}

TEST(BTree, ScanReturnsKeysInOrderFromTheStartKey) {
  BTree tree(4, 4);
  for (Key key = 100; key > 0; --key)
    tree.insert(key * 10, std::to_string(key));
  std::vector<Key> seen;
  std::size_t visited = tree.scan(155, 5, [&](Key key, std::string_view) { seen.push_back(key); });
  EXPECT_EQ(visited, 5u);
  EXPECT_EQ(seen, (std::vector<Key>{160, 170, 180, 190, 200}));
  EXPECT_EQ(tree.scan(995, 10, [](Key, std::string_view) {}), 1u); // only 1000 is left
}

TEST(BTree, SplitsKeepOrderAndCountEveryLevel) {
  BTree tree(4, 4);
  // Ascending inserts split the rightmost leaf every other insert.
  for (Key key = 1; key <= 64; ++key)
    tree.insert(key, "v");
  EXPECT_EQ(tree.checkInvariants(), "");
  EXPECT_EQ(tree.counters().leaf_splits, tree.leafCount() - 1);
  EXPECT_GT(tree.counters().internal_splits, 0u);
  EXPECT_EQ(tree.counters().root_splits, tree.height() - 1);
  Key expected = 1;
  tree.scan(0, 100, [&](Key key, std::string_view) { EXPECT_EQ(key, expected++); });
  EXPECT_EQ(expected, 65u);
}

TEST(BTree, ReplacingAValueAdjustsMemoryWithoutGrowing) {
  BTree tree;
  EXPECT_TRUE(tree.insert(7, std::string(100, 'x')));
  EXPECT_EQ(tree.memoryBytes(), BTree::entryCost(100));
  EXPECT_FALSE(tree.insert(7, std::string(10, 'y')));
  EXPECT_EQ(tree.size(), 1u);
  EXPECT_EQ(tree.memoryBytes(), BTree::entryCost(10));
  EXPECT_EQ(*tree.find(7), std::string(10, 'y'));
  EXPECT_TRUE(tree.erase(7));
  EXPECT_EQ(tree.memoryBytes(), 0u);
  EXPECT_FALSE(tree.erase(7));
}

TEST(BTree, ClockGivesReferencedEntriesASecondChance) {
  BTree tree(8, 8);
  for (Key key = 0; key < 100; ++key)
    tree.insert(key, std::string(52, 'v')); // each entry costs 100 bytes
  // A first sweep clears the reference bits inserts set; nothing is evicted yet.
  Key cursor = 0;
  SweepResult first = tree.sweepClock(&cursor, 1, 100);
  EXPECT_EQ(first.evicted, 0u);
  EXPECT_EQ(first.examined, 100u);
  // Touch the even keys: the next sweep must evict odd keys only.
  for (Key key = 0; key < 100; key += 2)
    ASSERT_NE(tree.find(key), nullptr);
  cursor = 0;
  SweepResult second = tree.sweepClock(&cursor, 10 * BTree::entryCost(52), 1000);
  EXPECT_EQ(second.evicted, 10u);
  EXPECT_EQ(second.freed_bytes, 10 * BTree::entryCost(52));
  for (Key key = 0; key < 100; key += 2)
    EXPECT_NE(tree.find(key), nullptr) << key;
  for (Key key = 1; key < 20; key += 2)
    EXPECT_EQ(tree.find(key), nullptr) << key;
  EXPECT_EQ(cursor, 20u); // the hand stops at the next entry to examine
  EXPECT_EQ(tree.size(), 90u);
  EXPECT_EQ(tree.counters().evicted_entries, 10u);
  EXPECT_EQ(tree.checkInvariants(), "");
}

TEST(BTree, ClockSweepStopsOnAnEmptiedTree) {
  BTree tree(4, 4);
  for (Key key = 0; key < 30; ++key)
    tree.insert(key, "v");
  Key cursor = 17;
  SweepResult sweep = tree.sweepClock(&cursor, std::size_t{1} << 40, std::size_t{1} << 40);
  EXPECT_EQ(sweep.evicted, 30u);
  EXPECT_EQ(tree.size(), 0u);
  EXPECT_EQ(tree.memoryBytes(), 0u);
  EXPECT_EQ(tree.checkInvariants(), "");
}

TEST(BTree, DirtyPagesCarryExactFencesAndAreTakenOnce) {
  BTree tree(4, 4);
  for (Key key = 10; key <= 200; key += 10)
    tree.insert(key, std::to_string(key));
  std::vector<PageImage> pages = tree.takeDirtyPages(false);
  ASSERT_EQ(pages.size(), tree.leafCount());
  EXPECT_EQ(tree.dirtyPages(), 0u);
  // The fences tile the whole key space, left to right, without gaps.
  EXPECT_EQ(pages.front().low, 0u);
  EXPECT_EQ(pages.back().high, std::numeric_limits<Key>::max());
  for (std::size_t i = 1; i < pages.size(); ++i)
    EXPECT_EQ(pages[i].low, pages[i - 1].high + 1);
  EXPECT_TRUE(tree.takeDirtyPages(false).empty());
  tree.erase(100);
  std::vector<PageImage> after = tree.takeDirtyPages(false);
  ASSERT_EQ(after.size(), 1u);
  EXPECT_LE(after[0].low, 100u);
  EXPECT_GE(after[0].high, 100u);
  for (const auto& [key, value] : after[0].entries)
    EXPECT_NE(key, 100u);
  EXPECT_EQ(tree.takeDirtyPages(true).size(), tree.leafCount());
}

TEST(BTree, RejectsNodesTooSmallToSplit) {
  EXPECT_THROW(BTree(3, 64), std::invalid_argument);
  EXPECT_THROW(BTree(64, 2), std::invalid_argument);
}

} // namespace
} // namespace kv
