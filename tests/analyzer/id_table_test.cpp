// IdTable: entries by an id from the input cost memory by their number, never by the id's range,
// and read back the same whether they landed in the dense part or the sparse one.
#include "id_table.h"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

namespace shapetrace::analyzer {
namespace {

std::vector<std::pair<uint32_t, int>> entriesOf(const IdTable<int>& table) {
  std::vector<std::pair<uint32_t, int>> entries;
  table.forEach([&](uint32_t id, int value) { entries.emplace_back(id, value); });
  return entries;
}

TEST(IdTableTest, TheLargestIdCostsOneEntry) {
  IdTable<int> table;
  table[UINT32_MAX - 15] = 7;
  table[(uint32_t{1} << 24) - 1] = 8;
  EXPECT_EQ(table.size(), 2u);
  EXPECT_LT(table.memoryBytes(), 1024u);
  ASSERT_NE(table.find(UINT32_MAX - 15), nullptr);
  EXPECT_EQ(*table.find(UINT32_MAX - 15), 7);
  EXPECT_EQ(table.find(5), nullptr);
  EXPECT_EQ(entriesOf(table),
            (std::vector<std::pair<uint32_t, int>>{{(1u << 24) - 1, 8}, {UINT32_MAX - 15, 7}}));
}

TEST(IdTableTest, IdsSpreadApartStayProportionalToTheirNumber) {
  IdTable<int> table;
  // Each id doubles the last: a dense table would grow to the last one.
  for (uint32_t id = 1; id < (uint32_t{1} << 31); id *= 2)
    table[id] = 1;
  EXPECT_EQ(table.size(), 31u);
  EXPECT_LT(table.memoryBytes(), 4096 * sizeof(int) + 31 * 64);
}

TEST(IdTableTest, DenseIdsInAnyOrderReadBackInIdOrder) {
  IdTable<int> table;
  // Descending: the high ones first land in the sparse part, then move to the dense one.
  for (uint32_t id = 20000; id-- > 0;)
    table[id] = static_cast<int>(id) + 1;
  EXPECT_EQ(table.size(), 20000u);
  EXPECT_LT(table.memoryBytes(), 20000 * (sizeof(int) + 64));
  const auto entries = entriesOf(table);
  ASSERT_EQ(entries.size(), 20000u);
  for (uint32_t id = 0; id < 20000; ++id)
    ASSERT_EQ(entries[id], (std::pair<uint32_t, int>{id, static_cast<int>(id) + 1}));
  // Asking again adds nothing.
  table[19999] += 1;
  EXPECT_EQ(table.size(), 20000u);
  EXPECT_EQ(*table.find(19999), 20001);
}

} // namespace
} // namespace shapetrace::analyzer
