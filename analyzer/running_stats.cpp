// Welford/Chan moments and the log-linear histogram behind the analyzer's streaming quantiles.
#include "running_stats.h"

#include <algorithm>
#include <cmath>

namespace shapetrace::analyzer {

void Moments::merge(const Moments& other) {
  if (other.count_ == 0) return;
  if (count_ == 0) {
    *this = other;
    return;
  }
  const double n_a = static_cast<double>(count_);
  const double n_b = static_cast<double>(other.count_);
  const double n = n_a + n_b;
  const double delta = other.mean_ - mean_;
  mean_ += delta * n_b / n;
  m2_ += other.m2_ + delta * delta * n_a * n_b / n;
  count_ += other.count_;
  sum_ += other.sum_;
  min_ = std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
}

double Moments::stddev() const { return std::sqrt(std::max(0.0, variance())); }

namespace {
constexpr unsigned kSub = LogHistogram::kSubBucketBits;
} // namespace

uint64_t LogHistogram::bucketLow(uint32_t index) {
  if (index < kLinearLimit) return index;
  const uint64_t rel = index - kLinearLimit;
  const unsigned msb = static_cast<unsigned>(rel >> kSub) + kSub + 1;
  const uint64_t sub = rel & ((uint64_t{1} << kSub) - 1);
  return ((uint64_t{1} << kSub) | sub) << (msb - kSub);
}

uint64_t LogHistogram::bucketHigh(uint32_t index) {
  if (index < kLinearLimit) return index;
  const uint64_t rel = index - kLinearLimit;
  const unsigned msb = static_cast<unsigned>(rel >> kSub) + kSub + 1;
  return bucketLow(index) + (uint64_t{1} << (msb - kSub)) - 1;
}

// Makes `index` part of the stored range (never shrinks it).
void LogHistogram::grow(uint32_t index) {
  if (counts_.empty()) {
    first_ = index;
    counts_.assign(1, 0);
    return;
  }
  if (index < first_) {
    counts_.insert(counts_.begin(), first_ - index, 0);
    first_ = index;
  } else if (index >= first_ + counts_.size()) {
    counts_.resize(index - first_ + 1, 0);
  }
}

void LogHistogram::merge(const LogHistogram& other) {
  if (other.total_ == 0) return;
  grow(other.first_);
  grow(other.first_ + static_cast<uint32_t>(other.counts_.size()) - 1);
  for (size_t i = 0; i < other.counts_.size(); ++i)
    counts_[other.first_ - first_ + i] += other.counts_[i];
  total_ += other.total_;
}

uint64_t LogHistogram::quantile(double q) const {
  if (total_ == 0) return 0;
  q = std::clamp(q, 0.0, 1.0);
  // Nearest rank: the smallest value with at least ceil(q * n) values at or below it.
  const uint64_t rank =
      std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(q * static_cast<double>(total_))));
  uint64_t seen = 0;
  for (size_t i = 0; i < counts_.size(); ++i) {
    seen += counts_[i];
    if (seen >= rank) {
      const auto index = static_cast<uint32_t>(first_ + i);
      return bucketLow(index) + (bucketHigh(index) - bucketLow(index)) / 2;
    }
  }
  return bucketHigh(static_cast<uint32_t>(first_ + counts_.size() - 1));
}

std::vector<uint64_t> LogHistogram::cumulativeAtMost(const std::vector<uint64_t>& bounds) const {
  std::vector<uint64_t> out(bounds.size(), 0);
  uint64_t seen = 0;
  size_t bound = 0;
  for (size_t i = 0; i < counts_.size(); ++i) {
    const uint64_t high = bucketHigh(static_cast<uint32_t>(first_ + i));
    while (bound < bounds.size() && bounds[bound] < high) out[bound++] = seen;
    seen += counts_[i];
  }
  while (bound < bounds.size()) out[bound++] = seen;
  return out;
}

LogHistogram::Buckets LogHistogram::buckets() const {
  Buckets out;
  for (size_t i = 0; i < counts_.size(); ++i)
    if (counts_[i] != 0) out.emplace_back(static_cast<uint32_t>(first_ + i), counts_[i]);
  return out;
}

void LogHistogram::addToBucket(uint32_t index, uint64_t count) {
  if (count == 0) return;
  if (index < first_ || index >= first_ + counts_.size()) grow(index);
  counts_[index - first_] += count;
  total_ += count;
}

uint64_t DurationStats::quantile(double q) const {
  if (moments.count() == 0) return 0;
  return std::clamp(histogram.quantile(q), moments.min(), moments.max());
}

} // namespace shapetrace::analyzer
