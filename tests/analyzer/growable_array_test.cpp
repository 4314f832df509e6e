// GrowableArray: grows by realloc keeping its elements, new elements are zero (also after a
// shrink), copies and moves are deep and leave no aliasing.
#include "growable_array.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace shapetrace::analyzer {
namespace {

TEST(GrowableArrayTest, GrowsKeepingElementsAndZeroesNewOnes) {
  GrowableArray<uint64_t> a;
  for (uint64_t i = 0; i < 3'000'000; ++i) // past glibc's mmap threshold: grown by mremap
    a.push_back(i * 7);
  ASSERT_EQ(a.size(), 3'000'000u);
  for (uint64_t i = 0; i < a.size(); i += 999)
    ASSERT_EQ(a[i], i * 7);
  a.resize(10);
  a.resize(20); // the elements 10..19 held values before the shrink: they are zero again
  for (size_t i = 10; i < 20; ++i)
    EXPECT_EQ(a[i], 0u);
  EXPECT_EQ(a[9], 63u);
}

TEST(GrowableArrayTest, CopiesAreDeepAndMovesEmptyTheSource) {
  GrowableArray<uint32_t> a;
  a.resize(5);
  a[4] = 44;
  GrowableArray<uint32_t> copy = a;
  copy[4] = 1;
  EXPECT_EQ(a[4], 44u);
  GrowableArray<uint32_t> moved = std::move(a);
  EXPECT_EQ(moved[4], 44u);
  EXPECT_TRUE(a.empty()); // NOLINT(bugprone-use-after-move): the moved-from state is specified
  a = copy;
  EXPECT_EQ(a.size(), 5u);
  EXPECT_EQ(a[4], 1u);
}

} // namespace
} // namespace shapetrace::analyzer
