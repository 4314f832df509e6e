// The live page's sliding windows: exact statistics of the last 1, 5 and 15 minutes beside the
// whole run, and when each shape was first seen, so that what changed lately stands out.
//
// The model's statistics are cumulative. Every `step` this keeps each shape's cumulative calls,
// measured count, sum and histogram buckets (keyed by the shape's structure, metrics.h shapeKeys,
// since shape ids may change between snapshots); a window's statistics are the latest minus those
// kept at its start. Counts, sums and histogram buckets are integers, so the difference is exact
// (mean and quantiles of the window follow from it); the window starts at the step kept at or
// before now - window, so it covers at least the window once the session is that old, and says
// how much it covers. Memory: the shapes' non-empty buckets, times (longest window / step + 2).
#pragma once

#include "analysis.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <deque>
#include <unordered_map>
#include <vector>

namespace shapetrace::analyzer::report {

class RecentWindows {
public:
  explicit RecentWindows(std::vector<double> windows_s = {60, 300, 900}, double step_s = 10);

  // The model at `now_s` (seconds since the session started): notes new shapes, and keeps the
  // statistics every step.
  void observe(const Analysis& analysis, double now_s);

  // {"now_s", "step_s", "first_seen_s": [per shape id, seconds since the session started],
  //  "windows": [{"seconds", "covered_s", "clusters": [{"cluster", "calls", "count", "sum_ns",
  //  "mean_ns", "p50_ns", "p99_ns"}] (clusters with calls in the window), "new_shapes": [ids first
  //  seen in the window]}]}
  nlohmann::ordered_json json(const Analysis& analysis, double now_s) const;

private:
  struct Cumulative {
    uint64_t calls = 0, count = 0, sum_ns = 0;
    LogHistogram::Buckets buckets;
  };
  struct Moment {
    double at_s = 0;
    std::unordered_map<uint64_t, Cumulative> shapes; // by structural key
  };
  const Moment* startOf(double window_s, double now_s) const;

  std::vector<double> windows_s_;
  double step_s_;
  std::deque<Moment> moments_;
  std::unordered_map<uint64_t, double> first_seen_s_;
};

} // namespace shapetrace::analyzer::report
