// A log-linear latency histogram (HdrHistogram's layout with 32 sub-buckets per power of two, so
// every recorded value is known to within about 3%): fixed memory, O(1) record, exact merge. Each
// worker records into its own; the driver merges them at the end.
#pragma once

#include <array>
#include <cstdint>

namespace kv {

class LatencyHistogram {
public:
  void record(std::uint64_t nanoseconds);
  void merge(const LatencyHistogram& other);
  std::uint64_t count() const { return count_; }
  std::uint64_t max() const { return max_; }
  double mean() const { return count_ ? static_cast<double>(sum_) / static_cast<double>(count_) : 0; }
  // The smallest bucket bound at or above which lies the q-quantile (q in [0, 1]); never above max().
  std::uint64_t quantile(double q) const;

  static std::size_t bucketOf(std::uint64_t value);
  static std::uint64_t bucketHigh(std::size_t bucket); // the largest value in the bucket

private:
  static constexpr unsigned kSubBits = 5;
  static constexpr std::size_t kBuckets = 2 * (1u << kSubBits) + (64 - kSubBits - 1) * (1u << kSubBits);
  std::array<std::uint64_t, kBuckets> buckets_{};
  std::uint64_t count_ = 0;
  std::uint64_t sum_ = 0;
  std::uint64_t max_ = 0;
};

} // namespace kv
