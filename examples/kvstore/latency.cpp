// LatencyHistogram: bucket arithmetic and quantiles.
#include "latency.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace kv {

namespace {
constexpr std::uint64_t kSub = 1u << 5;
constexpr std::uint64_t kLinear = 2 * kSub; // values below this have a bucket each
} // namespace

std::size_t LatencyHistogram::bucketOf(std::uint64_t value) {
  if (value < kLinear)
    return static_cast<std::size_t>(value);
  unsigned exponent = static_cast<unsigned>(std::bit_width(value)) - 1; // >= kSubBits + 1
  unsigned shift = exponent - kSubBits;
  std::uint64_t top = value >> shift; // in [kSub, 2 * kSub)
  return static_cast<std::size_t>(kLinear + (shift - 1) * kSub + (top - kSub));
}

std::uint64_t LatencyHistogram::bucketHigh(std::size_t bucket) {
  if (bucket < kLinear)
    return bucket;
  std::uint64_t shift = (bucket - kLinear) / kSub + 1;
  std::uint64_t top = (bucket - kLinear) % kSub + kSub;
  return ((top + 1) << shift) - 1;
}

void LatencyHistogram::record(std::uint64_t nanoseconds) {
  ++buckets_[bucketOf(nanoseconds)];
  ++count_;
  sum_ += nanoseconds;
  max_ = std::max(max_, nanoseconds);
}

void LatencyHistogram::merge(const LatencyHistogram& other) {
  for (std::size_t i = 0; i < kBuckets; ++i)
    buckets_[i] += other.buckets_[i];
  count_ += other.count_;
  sum_ += other.sum_;
  max_ = std::max(max_, other.max_);
}

std::uint64_t LatencyHistogram::quantile(double q) const {
  if (count_ == 0)
    return 0;
  auto rank = static_cast<std::uint64_t>(std::ceil(std::clamp(q, 0.0, 1.0) * static_cast<double>(count_)));
  rank = std::max<std::uint64_t>(rank, 1);
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < kBuckets; ++i) {
    seen += buckets_[i];
    if (seen >= rank)
      return std::min(bucketHigh(i), max_);
  }
  return max_;
}

} // namespace kv
