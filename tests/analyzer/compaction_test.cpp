// Reiss & Renieris' N-level call compaction and interval compaction on calls whose times are
// known: every tuple's count, sum and sum of squares, and every interval's inclusive and exclusive
// time, computed here by hand; intervals added in front for a thread that began earlier, and
// coarsened in pairs when the run outgrows them.
#include "summaries/compaction.h"

#include <gtest/gtest.h>

#include <map>

namespace shapetrace::analyzer::summaries {
namespace {

TEST(NLevelCompactionTest, TuplesOfTheCallAndItsInnermostCallers) {
  // main(0..100) { a(10..30) { b(12..20) }, a(40..50), b(60..64) }
  NLevelCompaction n(2);
  n.enter(0);
  n.enter(1);
  n.enter(2);
  n.exit(8, true);
  n.exit(20, true);
  n.enter(1);
  n.exit(10, true);
  n.enter(2);
  n.exit(4, true);
  n.exit(100, true);
  std::map<std::vector<uint32_t>, NLevelCompaction::Entry> by_tuple;
  for (const auto& e : n.entries())
    by_tuple[e.tuple] = e;
  ASSERT_EQ(by_tuple.size(), 6u); // main; a, main>a; b, a>b, main>b
  EXPECT_EQ(by_tuple[{1}].count, 2u);
  EXPECT_EQ(by_tuple[{1}].sum_ns, 30u);
  EXPECT_EQ(by_tuple[{1}].sum_squares, 500u);
  EXPECT_DOUBLE_EQ(by_tuple[{1}].mean(), 15.0);
  EXPECT_DOUBLE_EQ(by_tuple[{1}].sd(), 5.0);
  EXPECT_EQ(by_tuple[(std::vector<uint32_t>{0, 1})].count, 2u);
  EXPECT_EQ(by_tuple[(std::vector<uint32_t>{1, 2})].sum_ns, 8u);
  EXPECT_EQ(by_tuple[(std::vector<uint32_t>{0, 2})].sum_ns, 4u);
  EXPECT_EQ(by_tuple[{2}].count, 2u);
  EXPECT_EQ(by_tuple[{0}].sum_ns, 100u);
  // Unmeasured calls are counted, not timed; tuples by total time.
  n.enter(0);
  n.exit(999, false);
  EXPECT_EQ(n.entries().front().tuple, std::vector<uint32_t>{0});
  EXPECT_EQ(n.entries().front().count, 2u);
  EXPECT_EQ(n.entries().front().measured, 1u);
  EXPECT_THROW(NLevelCompaction(0), std::invalid_argument);
}

TEST(IntervalCompactionTest, InclusiveAndExclusiveTimePerInterval) {
  // f(0..100) { g(20..60) { f(30..40) } }: with 128 intervals of 1 ns (the first at 0, the width
  // doubles to fit), f is on the stack 100 ns (its recursion counted once) and on top 60 ns.
  IntervalCompaction c(128);
  c.enter(0, 0);
  c.enter(1, 20);
  c.enter(0, 30);
  c.exit(0, 40);
  c.exit(1, 60);
  c.exit(0, 100);
  EXPECT_EQ(c.startNs(), 0u);
  EXPECT_EQ(c.widthNs(), 1u);
  uint64_t incl[2] = {0, 0}, excl[2] = {0, 0}, calls[2] = {0, 0};
  for (size_t i = 0; i < c.count(); ++i)
    for (const auto& [f, cell] : c.interval(i)) {
      incl[f] += cell.inclusive_ns;
      excl[f] += cell.exclusive_ns;
      calls[f] += cell.calls;
    }
  EXPECT_EQ(incl[0], 100u);
  EXPECT_EQ(excl[0], 70u); // 0..20, 30..40, 60..100
  EXPECT_EQ(incl[1], 40u);
  EXPECT_EQ(excl[1], 30u);
  EXPECT_EQ(calls[0], 2u);
  EXPECT_EQ(calls[1], 1u);
}

TEST(IntervalCompactionTest, CoarsensAndGrowsInFront) {
  IntervalCompaction c(4);
  c.enter(7, 1000);
  c.exit(7, 1010); // fits in 4 intervals once they are 4 ns wide
  EXPECT_EQ(c.widthNs(), 4u);
  EXPECT_LE(c.count(), 4u);
  // A sequence that began earlier (another thread): intervals added in front, then coarsened.
  c.reset(1010);
  c.enter(7, 990);
  c.exit(7, 995);
  EXPECT_LE(c.startNs(), 990u);
  EXPECT_LE(c.count(), 4u);
  uint64_t inclusive = 0;
  for (size_t i = 0; i < c.count(); ++i)
    for (const auto& [f, cell] : c.interval(i))
      inclusive += cell.inclusive_ns;
  EXPECT_EQ(inclusive, 15u);
  // The intervals cover the calls.
  EXPECT_GE(c.startNs() + c.count() * c.widthNs(), 1010u);
}

// A crafted input: a sequence 2^60 ns before the first. The intervals in front are worked out
// at once, not made one by one (2^60 of them before).
TEST(IntervalCompactionTest, ASequenceFarEarlierCostsNoMoreIntervals) {
  IntervalCompaction c(4);
  c.enter(7, uint64_t{1} << 60);
  c.exit(7, (uint64_t{1} << 60) + 8);
  c.reset((uint64_t{1} << 60) + 8);
  c.enter(8, 0);
  c.exit(8, 4);
  EXPECT_EQ(c.startNs(), 0u);
  EXPECT_EQ(c.widthNs(), uint64_t{1} << 59);
  ASSERT_EQ(c.count(), 3u);
  EXPECT_EQ(c.interval(0).at(8).inclusive_ns, 4u);
  EXPECT_EQ(c.interval(2).at(7).inclusive_ns, 8u);
}

} // namespace
} // namespace shapetrace::analyzer::summaries
