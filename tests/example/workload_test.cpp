// The workload generator (Zipfian skew, determinism, the request mix and bursts) and the latency
// histogram's arithmetic.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "latency.h"
#include "workload.h"

namespace kv {
namespace {

TEST(Zipf, TheMostPopularRanksDominate) {
  ZipfGenerator zipf(10000, 0.99);
  std::mt19937_64 rng(7);
  std::vector<std::uint64_t> counts(10000);
  for (int i = 0; i < 200000; ++i) {
    std::uint64_t rank = zipf.rank(rng);
    ASSERT_LT(rank, 10000u);
    ++counts[rank];
  }
  // With theta 0.99 over 10^4 items rank 0 draws about 1/zeta(10^4) = 10% of the requests, and
  // rank 0 is drawn about twice as often as rank 1.
  EXPECT_GT(counts[0], 16000u);
  EXPECT_LT(counts[0], 24000u);
  EXPECT_GT(counts[0], counts[1] * 3 / 2);
  EXPECT_GT(counts[1], counts[100]);
}

TEST(Zipf, RejectsBadParameters) {
  EXPECT_THROW(ZipfGenerator(1, 0.99), std::invalid_argument);
  EXPECT_THROW(ZipfGenerator(100, 1.0), std::invalid_argument);
  EXPECT_THROW(ZipfGenerator(100, 0.0), std::invalid_argument);
}

TEST(RequestGenerator, TheSameSeedGivesTheSameRequests) {
  RequestGenerator a(1000, 0.99, 5), b(1000, 0.99, 5), c(1000, 0.99, 6);
  bool differs = false;
  for (int i = 0; i < 1000; ++i) {
    Request x = a.next(), y = b.next(), z = c.next();
    ASSERT_EQ(x.op, y.op);
    ASSERT_EQ(x.key, y.key);
    ASSERT_EQ(x.value_size, y.value_size);
    ASSERT_EQ(x.scan_length, y.scan_length);
    differs = differs || x.key != z.key;
  }
  EXPECT_TRUE(differs);
}

TEST(RequestGenerator, FollowsTheMixAndInsertsBursts) {
  WorkloadMix mix;
  mix.burst_every = 10000;
  mix.burst_length = 500;
  RequestGenerator generator(100000, 0.99, 1, mix);
  std::map<Op, int> ops;
  for (int i = 0; i < 9500; ++i) {
    Request request = generator.next();
    ++ops[request.op];
    if (request.op == Op::kPut) {
      EXPECT_GE(request.value_size, mix.min_value);
      EXPECT_LE(request.value_size, mix.max_value);
    }
    if (request.op == Op::kScan) {
      EXPECT_GE(request.scan_length, 1u);
      EXPECT_LE(request.scan_length, mix.max_scan);
    }
  }
  EXPECT_NEAR(ops[Op::kGet], 9500 * 0.62, 300);
  EXPECT_NEAR(ops[Op::kPut], 9500 * 0.28, 300);
  EXPECT_NEAR(ops[Op::kDelete], 9500 * 0.03, 100);
  // The last 500 of every 10000 requests are the burst: large puts on mostly distinct keys.
  std::set<Key> burst_keys;
  for (int i = 0; i < 500; ++i) {
    Request request = generator.next();
    ASSERT_EQ(request.op, Op::kPut);
    EXPECT_GE(request.value_size, mix.burst_min_value);
    burst_keys.insert(request.key);
  }
  EXPECT_GT(burst_keys.size(), 490u);
  EXPECT_NE(generator.next().value_size, 0u + mix.burst_max_value + 1); // back to the mix
}

TEST(RequestGenerator, ValuesDependOnKeyAndVersion) {
  std::string v1 = RequestGenerator::makeValue(1, 64, 1);
  EXPECT_EQ(v1.size(), 64u);
  EXPECT_EQ(v1, RequestGenerator::makeValue(1, 64, 1));
  EXPECT_NE(v1, RequestGenerator::makeValue(1, 64, 2));
  EXPECT_NE(v1, RequestGenerator::makeValue(2, 64, 1));
}

TEST(LatencyHistogram, BucketsCoverEveryValueWithinThreePercent) {
  for (std::uint64_t value : {0ull, 1ull, 63ull, 64ull, 65ull, 1000ull, 123456789ull,
                              ~0ull >> 1, ~0ull}) {
    std::size_t bucket = LatencyHistogram::bucketOf(value);
    std::uint64_t high = LatencyHistogram::bucketHigh(bucket);
    EXPECT_GE(high, value);
    EXPECT_LE(static_cast<double>(high - value), static_cast<double>(value) / 32 + 1) << value;
    if (bucket > 0)
      EXPECT_LT(LatencyHistogram::bucketHigh(bucket - 1), value) << value;
  }
}

TEST(LatencyHistogram, QuantilesAndMerge) {
  LatencyHistogram a, b;
  for (std::uint64_t v = 1; v <= 50; ++v)
    a.record(v);
  for (std::uint64_t v = 51; v <= 100; ++v)
    b.record(v * 1000);
  a.merge(b);
  EXPECT_EQ(a.count(), 100u);
  EXPECT_EQ(a.max(), 100000u);
  EXPECT_EQ(a.quantile(0.5), 50u);   // exact below 64
  EXPECT_EQ(a.quantile(0.01), 1u);
  EXPECT_EQ(a.quantile(1.0), 100000u);
  EXPECT_NEAR(static_cast<double>(a.quantile(0.9)), 90000.0, 90000.0 / 32);
  EXPECT_EQ(LatencyHistogram().quantile(0.5), 0u);
}

} // namespace
} // namespace kv
