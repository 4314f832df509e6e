// Online duration statistics that merge: Welford moments (count, mean, M2, min, max, exact sum) and
// a log-linear histogram for streaming quantiles (p50, p99).
//
// Both are updated in O(1) per value and merged in O(size): that is what lets every thread be
// analysed on its own core and the results be combined afterwards. Moments merge with Chan et al.'s
// pairwise formula; the analyzer always merges in the same order (threads sorted by process and
// thread id), so the output is byte-for-byte reproducible. Counts, sums, minima, maxima and histogram
// buckets merge exactly (integers).
#pragma once

#include <bit>
#include <cstdint>
#include <vector>

namespace shapetrace::analyzer {

// A count or duration as a double. Below 2^63 (always, in practice) the signed conversion is one
// instruction where the unsigned one takes five.
inline double toDouble(uint64_t value) {
  return value < (uint64_t{1} << 63) ? static_cast<double>(static_cast<int64_t>(value))
                                     : static_cast<double>(value);
}

class Moments {
public:
  void add(uint64_t value) {
    ++count_;
    sum_ += value;
    const double x = toDouble(value);
    const double delta = x - mean_;
    mean_ += delta / toDouble(count_);
    m2_ += delta * (x - mean_);
    if (value < min_) min_ = value;
    if (value > max_) max_ = value;
  }
  void merge(const Moments& other);
  // Moments as another process wrote them down (a host's summary, fleet/summary.h).
  static Moments fromParts(uint64_t count, double mean, double m2, uint64_t min, uint64_t max,
                           unsigned __int128 sum) {
    Moments m;
    m.count_ = count;
    m.mean_ = mean;
    m.m2_ = m2;
    m.min_ = count ? min : UINT64_MAX;
    m.max_ = max;
    m.sum_ = sum;
    return m;
  }

  uint64_t count() const { return count_; }
  double mean() const { return mean_; }
  // Population variance and standard deviation (all calls seen so far, as 001's rule uses them).
  double variance() const { return count_ ? m2_ / static_cast<double>(count_) : 0.0; }
  double m2() const { return m2_; } // sum of squared deviations from the mean
  double stddev() const;
  uint64_t min() const { return count_ ? min_ : 0; }
  uint64_t max() const { return max_; }
  unsigned __int128 sum() const { return sum_; }

private:
  uint64_t count_ = 0;
  double mean_ = 0.0;
  double m2_ = 0.0;
  uint64_t min_ = UINT64_MAX;
  uint64_t max_ = 0;
  unsigned __int128 sum_ = 0;
};

// Counts of values in log-linear buckets: values below 64 exactly, above that 32 buckets per power
// of two, so a quantile is within 1/32 (about 3%) of the true value, whatever the range.
// Storage covers only the buckets between the smallest and largest value seen.
class LogHistogram {
public:
  static constexpr unsigned kSubBucketBits = 5;
  static constexpr uint64_t kLinearLimit = uint64_t{2} << kSubBucketBits; // below: own bucket

  void add(uint64_t value) {
    const uint32_t index = bucketOf(value);
    if (index < first_ || index >= first_ + counts_.size()) [[unlikely]]
      grow(index);
    ++counts_[index - first_];
    ++total_;
  }
  void merge(const LogHistogram& other);

  uint64_t total() const { return total_; }
  // The value at quantile q in [0, 1] (nearest rank), as the middle of its bucket; 0 when empty.
  uint64_t quantile(double q) const;
  // For each of `bounds` (ascending): the values in buckets that end at or below it. Exact below
  // 64; above, a bucket straddling a bound (1/32 of a power of two wide) counts above it.
  std::vector<uint64_t> cumulativeAtMost(const std::vector<uint64_t>& bounds) const;

  // The non-empty buckets (index, count), in index order: a compact copy to subtract later.
  using Buckets = std::vector<std::pair<uint32_t, uint64_t>>;
  Buckets buckets() const;
  // Adds `count` values to bucket `index` (as if values of that bucket were added).
  void addToBucket(uint32_t index, uint64_t count);

  // Inline: it runs on every finished call.
  static uint32_t bucketOf(uint64_t value) {
    if (value < kLinearLimit) return static_cast<uint32_t>(value);
    const unsigned msb = 63u - static_cast<unsigned>(std::countl_zero(value));
    const unsigned shift = msb - kSubBucketBits;
    // Bucket groups of 2^kSubBucketBits per power of two, starting after the linear range.
    const uint64_t sub = (value >> shift) & ((uint64_t{1} << kSubBucketBits) - 1);
    return static_cast<uint32_t>(kLinearLimit +
                                 (msb - kSubBucketBits - 1) * (uint64_t{1} << kSubBucketBits) + sub);
  }
  static uint64_t bucketLow(uint32_t index);
  static uint64_t bucketHigh(uint32_t index); // inclusive

private:
  void grow(uint32_t index);

  uint32_t first_ = 0;
  std::vector<uint64_t> counts_;
  uint64_t total_ = 0;
};

// What the analyzer keeps per function, shape and cluster.
struct DurationStats {
  Moments moments;
  LogHistogram histogram;

  [[gnu::always_inline]] void add(uint64_t duration_ns) {
    moments.add(duration_ns);
    histogram.add(duration_ns);
  }
  void merge(const DurationStats& other) {
    moments.merge(other.moments);
    histogram.merge(other.histogram);
  }
  // p50/p99 clamped into [min, max] so the estimate never leaves the observed range.
  uint64_t quantile(double q) const;
};

} // namespace shapetrace::analyzer
