// PairMap: every pair keeps the value it was first given, through growth and colliding keys, and
// absent pairs are absent; checked against std::map on keys built to share hash slots.
#include "pair_map.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <random>

namespace shapetrace::analyzer {
namespace {

TEST(PairMapTest, EmptyMapFindsNothing) {
  const PairMap map;
  EXPECT_EQ(map.find(0, 0), PairMap::kAbsent);
  EXPECT_EQ(map.size(), 0u);
}

TEST(PairMapTest, FirstValueStaysAndTheOrderOfThePairMatters) {
  PairMap map;
  EXPECT_EQ(map.tryEmplace(1, 2, 10), std::make_pair(10u, true));
  EXPECT_EQ(map.tryEmplace(1, 2, 11), std::make_pair(10u, false));
  EXPECT_EQ(map.tryEmplace(2, 1, 12), std::make_pair(12u, true));
  EXPECT_EQ(map.find(1, 2), 10u);
  EXPECT_EQ(map.find(2, 1), 12u);
  EXPECT_EQ(map.find(1, 1), PairMap::kAbsent);
  EXPECT_EQ(map.size(), 2u);
}

TEST(PairMapTest, AgreesWithStdMapThroughGrowth) {
  PairMap map;
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> truth;
  std::mt19937 random(7);
  // Few parents, many functions, and the extremes of both ids: dense clusters of keys.
  std::uniform_int_distribution<uint32_t> parent(0, 40), function(0, 5000);
  for (uint32_t i = 0; i < 200'000; ++i) {
    uint32_t a = parent(random), b = function(random);
    if (i % 1000 == 0) a = UINT32_MAX - 1, b = i;
    const auto [it, added] = truth.try_emplace({a, b}, i);
    EXPECT_EQ(map.tryEmplace(a, b, i), std::make_pair(it->second, added));
  }
  ASSERT_EQ(map.size(), truth.size());
  for (const auto& [key, value] : truth)
    ASSERT_EQ(map.find(key.first, key.second), value);
  for (uint32_t b = 5001; b < 6000; ++b)
    ASSERT_EQ(map.find(3, b), PairMap::kAbsent);
}

} // namespace
} // namespace shapetrace::analyzer
