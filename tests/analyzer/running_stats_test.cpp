// Welford moments against a two-pass computation, exact merging, and quantile accuracy.
#include "running_stats.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

namespace shapetrace::analyzer {
namespace {

struct TwoPass {
  double mean = 0, variance = 0;
};
TwoPass twoPass(const std::vector<uint64_t>& values) {
  TwoPass r;
  for (uint64_t v : values)
    r.mean += static_cast<double>(v);
  r.mean /= static_cast<double>(values.size());
  for (uint64_t v : values)
    r.variance += (static_cast<double>(v) - r.mean) * (static_cast<double>(v) - r.mean);
  r.variance /= static_cast<double>(values.size());
  return r;
}

std::vector<uint64_t> sample(uint64_t seed, size_t n, uint64_t base) {
  std::mt19937_64 rng(seed);
  std::lognormal_distribution<double> dist(6.0, 1.0);
  std::vector<uint64_t> v;
  for (size_t i = 0; i < n; ++i)
    v.push_back(base + static_cast<uint64_t>(dist(rng)));
  return v;
}

TEST(MomentsTest, WelfordMatchesTwoPass) {
  // A large offset with a small spread is where the naive sum-of-squares formula fails.
  for (uint64_t base : {uint64_t{0}, uint64_t{1'000'000'000'000}}) {
    const auto values = sample(base + 1, 100000, base);
    Moments m;
    for (uint64_t v : values)
      m.add(v);
    const TwoPass expected = twoPass(values);
    EXPECT_EQ(m.count(), values.size());
    EXPECT_NEAR(m.mean(), expected.mean, 1e-9 * expected.mean);
    EXPECT_NEAR(m.variance(), expected.variance, 1e-7 * expected.variance);
    EXPECT_EQ(m.min(), *std::min_element(values.begin(), values.end()));
    EXPECT_EQ(m.max(), *std::max_element(values.begin(), values.end()));
    unsigned __int128 sum = 0;
    for (uint64_t v : values)
      sum += v;
    EXPECT_TRUE(m.sum() == sum);
  }
}

TEST(MomentsTest, SmallHandComputedCase) {
  Moments m;
  for (uint64_t v : {2, 4, 4, 4, 5, 5, 7, 9})
    m.add(v);
  EXPECT_DOUBLE_EQ(m.mean(), 5.0);
  EXPECT_DOUBLE_EQ(m.stddev(), 2.0); // the textbook population example
}

TEST(MomentsTest, MergeEqualsSequential) {
  const auto values = sample(7, 50000, 1000);
  Moments all, left, right;
  for (size_t i = 0; i < values.size(); ++i) {
    all.add(values[i]);
    (i < 12345 ? left : right).add(values[i]);
  }
  Moments merged = left;
  merged.merge(right);
  EXPECT_EQ(merged.count(), all.count());
  EXPECT_TRUE(merged.sum() == all.sum());
  EXPECT_EQ(merged.min(), all.min());
  EXPECT_EQ(merged.max(), all.max());
  EXPECT_NEAR(merged.mean(), all.mean(), 1e-9 * all.mean());
  EXPECT_NEAR(merged.variance(), all.variance(), 1e-9 * all.variance());
  Moments empty;
  empty.merge(left);
  EXPECT_EQ(empty.count(), left.count());
  EXPECT_EQ(empty.mean(), left.mean());
}

TEST(LogHistogramTest, BucketsCoverEveryValueOnce) {
  for (uint64_t v : {uint64_t{0}, uint64_t{1}, uint64_t{63}, uint64_t{64}, uint64_t{65},
                     uint64_t{1000}, uint64_t{123456789}, uint64_t{1} << 40, UINT64_MAX}) {
    const uint32_t b = LogHistogram::bucketOf(v);
    EXPECT_LE(LogHistogram::bucketLow(b), v) << v;
    EXPECT_GE(LogHistogram::bucketHigh(b), v) << v;
  }
  for (uint32_t b = 0; b < 1500; ++b)
    ASSERT_EQ(LogHistogram::bucketLow(b + 1), LogHistogram::bucketHigh(b) + 1) << b;
}

TEST(LogHistogramTest, QuantilesWithinBucketResolution) {
  auto values = sample(11, 100001, 0);
  DurationStats stats;
  for (uint64_t v : values)
    stats.add(v);
  std::sort(values.begin(), values.end());
  for (double q : {0.5, 0.9, 0.99}) {
    const auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(values.size())));
    const double exact = static_cast<double>(values[rank - 1]);
    EXPECT_NEAR(static_cast<double>(stats.quantile(q)), exact, exact / 32 + 1) << q;
  }
}

TEST(LogHistogramTest, MergeIsExact) {
  const auto values = sample(5, 20000, 50);
  LogHistogram all, a, b;
  for (size_t i = 0; i < values.size(); ++i) {
    all.add(values[i]);
    (i % 3 == 0 ? a : b).add(values[i]);
  }
  a.merge(b);
  EXPECT_EQ(a.total(), all.total());
  for (double q = 0; q <= 1.0; q += 0.05)
    EXPECT_EQ(a.quantile(q), all.quantile(q)) << q;
}

TEST(LogHistogramTest, MergingANarrowerRangeKeepsTheWiderOne) {
  LogHistogram wide, narrow;
  for (uint64_t v = 10; v <= 5000; v += 10)
    wide.add(v);
  narrow.add(300);
  LogHistogram expected = wide;
  expected.add(300);
  wide.merge(narrow);
  EXPECT_EQ(wide.total(), 501u);
  for (double q = 0; q <= 1.0; q += 0.05)
    EXPECT_EQ(wide.quantile(q), expected.quantile(q)) << q;
  // And the other way round.
  narrow.merge(expected);
  EXPECT_EQ(narrow.total(), 502u);
  EXPECT_LT(narrow.quantile(0.5), 3000u);
}

TEST(DurationStatsTest, QuantileStaysInObservedRange) {
  DurationStats stats;
  stats.add(1000);
  EXPECT_EQ(stats.quantile(0.5), 1000u);
  EXPECT_EQ(stats.quantile(0.99), 1000u);
  EXPECT_EQ(DurationStats{}.quantile(0.5), 0u);
}

} // namespace
} // namespace shapetrace::analyzer

namespace shapetrace::analyzer {
namespace {

TEST(LogHistogramTest, CumulativeCountsAtBoundsCountAStraddlingBucketAbove) {
  LogHistogram h;
  for (uint64_t v : {10u, 100u, 1000u}) h.add(v);
  // 1000 is in the bucket [992, 1007]: at the bound 1000 it is not yet counted, at 1007 it is.
  EXPECT_EQ(LogHistogram::bucketLow(LogHistogram::bucketOf(1000)), 992u);
  EXPECT_EQ(LogHistogram::bucketHigh(LogHistogram::bucketOf(1000)), 1007u);
  EXPECT_EQ(h.cumulativeAtMost({5, 10, 99, 1000, 1007, 5000}),
            (std::vector<uint64_t>{0, 1, 1, 2, 3, 3}));
  EXPECT_EQ(LogHistogram().cumulativeAtMost({1, 2}), (std::vector<uint64_t>{0, 0}));
}

} // namespace
} // namespace shapetrace::analyzer
