// Interning of shapes and exact-sequence DAG nodes: ids, depth (Def. 5.2), canonical child sets.
#include "shape_table.h"
#include "trace_builder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

namespace shapetrace::analyzer {
namespace {

using testing::shape;

TEST(ShapeTableTest, NullIsIdZeroWithDepthZero) {
  ShapeTable table;
  EXPECT_EQ(table.size(), 1u);
  EXPECT_EQ(table.depth(kNullShape), 0u);
  EXPECT_FALSE(table.isLeaf(kNullShape));
}

TEST(ShapeTableTest, DepthFollowsDefinition52) {
  ShapeTable table;
  const ShapeId leaf = shape(table, 7);
  EXPECT_EQ(leaf, 1u);
  EXPECT_EQ(table.depth(leaf), 1u); // [f,{null}]
  EXPECT_TRUE(table.isLeaf(leaf));
  const ShapeId two = shape(table, 8, {leaf});
  EXPECT_EQ(table.depth(two), 2u);
  const ShapeId mixed = shape(table, 9, {leaf, two, shape(table, 3)});
  EXPECT_EQ(table.depth(mixed), 3u);
  EXPECT_FALSE(table.isLeaf(mixed));
}

TEST(ShapeTableTest, ChildSetsIgnoreOrderRepeatsAndNull) {
  ShapeTable table;
  const ShapeId a = shape(table, 1), b = shape(table, 2);
  const ShapeId s1 = shape(table, 5, {a, b, a, a});
  const ShapeId s2 = shape(table, 5, {b, kNullShape, a});
  EXPECT_EQ(s1, s2);
  EXPECT_NE(s1, shape(table, 6, {a, b}));
  EXPECT_NE(s1, shape(table, 5, {a}));
  EXPECT_EQ(table.size(), 6u);
  ASSERT_EQ(table.children(s1).size(), 2u);
  EXPECT_EQ(table.children(s1)[0], a);
  EXPECT_EQ(table.children(s1)[1], b);
  EXPECT_EQ(table.function(s1), 5u);
}

TEST(ShapeTableTest, SequencesKeepOrderAndRepeats) {
  ShapeTable dag;
  const ShapeId a = dag.intern(1, {}), b = dag.intern(2, {});
  const std::vector<ShapeId> ab{a, b}, ba{b, a}, aab{a, a, b};
  const ShapeId n1 = dag.intern(5, ab);
  EXPECT_NE(n1, dag.intern(5, ba));
  EXPECT_NE(n1, dag.intern(5, aab));
  EXPECT_EQ(n1, dag.intern(5, ab));
  EXPECT_EQ(dag.find(5, ab), n1);
  const std::vector<ShapeId> bb{b, b};
  EXPECT_EQ(dag.find(5, bb), kNullShape);
}

TEST(ShapeTableTest, ManyShapesSurviveRehashing) {
  ShapeTable table;
  std::vector<ShapeId> ids;
  for (uint32_t f = 0; f < 5000; ++f)
    ids.push_back(shape(table, f % 50, f < 50 ? std::vector<ShapeId>{} : std::vector<ShapeId>{ids[f % 50], ids[f / 50]}));
  for (uint32_t f = 0; f < 5000; ++f) {
    const ShapeId again =
        shape(table, f % 50, f < 50 ? std::vector<ShapeId>{} : std::vector<ShapeId>{ids[f % 50], ids[f / 50]});
    ASSERT_EQ(again, ids[f]);
  }
}

// The merge reserves room for a thread's DAG, then interns it: nothing may move or grow meanwhile,
// and every node keeps the hash it was interned with (the DAG's Merkle hash is the caller's).
TEST(ShapeTableTest, ReservedRoomTakesTheNodesWithoutGrowing) {
  ShapeTable table;
  const ShapeId leaf = table.intern(7, {});
  table.reserve(1000, 2000);
  const size_t reserved = table.memoryBytes();
  std::vector<ShapeId> ids;
  for (uint32_t i = 0; i < 1000; ++i) {
    const std::vector<ShapeId> children{leaf, i == 0 ? leaf : ids.back()};
    const uint64_t hash = 0x9E3779B97F4A7C15ull * (i + 1); // any hash, as long as it is the key's
    ids.push_back(table.intern(ShapeTable::Key{i % 13, children, hash}));
    ASSERT_EQ(table.hash(ids.back()), hash);
  }
  EXPECT_EQ(table.memoryBytes(), reserved);
  EXPECT_EQ(table.childIds(), 2000u);
  for (uint32_t i = 0; i < 1000; ++i) {
    const std::vector<ShapeId> children{leaf, i == 0 ? leaf : ids[i - 1]};
    ASSERT_EQ(table.find(ShapeTable::Key{i % 13, children, 0x9E3779B97F4A7C15ull * (i + 1)}), ids[i]);
  }
}

TEST(ShapeTableTest, CanonicalizeSortsDedupsAndDropsNull) {
  std::vector<ShapeId> v{5, 0, 3, 5, 1, 3, 0};
  const size_t n = canonicalizeChildSet(v);
  ASSERT_EQ(n, 3u);
  EXPECT_EQ((std::vector<ShapeId>(v.begin(), v.begin() + 3)), (std::vector<ShapeId>{1, 3, 5}));
}

TEST(ShapeTableTest, SortDistinctOfLongAndShortListsIsTheSortedSet) {
  // Long lists go through the hash set first, short ones are sorted directly: the same result.
  for (const size_t length : {size_t{7}, size_t{255}, size_t{256}, size_t{100'000}}) {
    std::vector<uint32_t> values;
    for (size_t i = 0; i < length; ++i)
      values.push_back(static_cast<uint32_t>((i * 7919) % 97) | (i % 2 ? 0x80000000u : 0u));
    std::vector<uint32_t> expected = values;
    std::sort(expected.begin(), expected.end());
    expected.erase(std::unique(expected.begin(), expected.end()), expected.end());
    const size_t n = sortDistinct(values);
    ASSERT_EQ(std::vector<uint32_t>(values.begin(), values.begin() + static_cast<ptrdiff_t>(n)),
              expected)
        << length;
  }
}

} // namespace
} // namespace shapetrace::analyzer
