// Sliding windows over a live run by differences of cumulative statistics.
#include "report/recent.h"

#include "report/metrics.h"

#include <algorithm>

namespace shapetrace::analyzer::report {

using Json = nlohmann::ordered_json;

RecentWindows::RecentWindows(std::vector<double> windows_s, double step_s)
    : windows_s_(std::move(windows_s)), step_s_(step_s) {}

void RecentWindows::observe(const Analysis& analysis, double now_s) {
  const std::vector<uint64_t> keys = shapeKeys(analysis);
  for (ShapeId id = 1; id < keys.size(); ++id)
    first_seen_s_.try_emplace(keys[id], now_s);
  if (!moments_.empty() && now_s - moments_.back().at_s < step_s_) return;
  Moment moment{now_s, {}};
  for (ShapeId id = 1; id < keys.size(); ++id) {
    const ShapeState& s = analysis.shape_states[id];
    moment.shapes[keys[id]] = {s.calls, s.stats.moments.count(),
                               static_cast<uint64_t>(s.stats.moments.sum()),
                               s.stats.histogram.buckets()};
  }
  moments_.push_back(std::move(moment));
  // Keep the last moment at or before the longest window's start, and everything after it.
  const double longest = *std::max_element(windows_s_.begin(), windows_s_.end());
  while (moments_.size() > 1 && moments_[1].at_s <= now_s - longest) moments_.pop_front();
}

const RecentWindows::Moment* RecentWindows::startOf(double window_s, double now_s) const {
  const Moment* start = moments_.empty() ? nullptr : &moments_.front();
  for (const Moment& m : moments_)
    if (m.at_s <= now_s - window_s) start = &m;
  return start;
}

Json RecentWindows::json(const Analysis& analysis, double now_s) const {
  const std::vector<uint64_t> keys = shapeKeys(analysis);
  Json first_seen = Json::array();
  for (ShapeId id = 0; id < keys.size(); ++id) {
    const auto it = first_seen_s_.find(keys[id]);
    first_seen.push_back(id == 0 || it == first_seen_s_.end() ? now_s : it->second);
  }
  Json windows = Json::array();
  for (double window_s : windows_s_) {
    const Moment* start = startOf(window_s, now_s);
    // Per cluster: the sum over its shapes of (now - start).
    std::vector<Cumulative> clusters(analysis.clustering.clusters.size());
    std::vector<LogHistogram> histograms(clusters.size());
    Json new_shapes = Json::array();
    for (ShapeId id = 1; id < keys.size(); ++id) {
      if (first_seen[id].get<double>() > now_s - window_s) new_shapes.push_back(id);
      const ClusterId c = analysis.clustering.cluster_of_shape[id];
      if (c == kNoCluster) continue;
      const ShapeState& s = analysis.shape_states[id];
      Cumulative before;
      if (start)
        if (const auto it = start->shapes.find(keys[id]); it != start->shapes.end())
          before = it->second;
      clusters[c].calls += s.calls - before.calls;
      clusters[c].count += s.stats.moments.count() - before.count;
      clusters[c].sum_ns += static_cast<uint64_t>(s.stats.moments.sum()) - before.sum_ns;
      // Bucket counts now minus before (the earlier buckets are a subset of the later ones).
      auto earlier = before.buckets.begin();
      for (const auto& [index, count] : s.stats.histogram.buckets()) {
        while (earlier != before.buckets.end() && earlier->first < index) ++earlier;
        const uint64_t was =
            earlier != before.buckets.end() && earlier->first == index ? earlier->second : 0;
        histograms[c].addToBucket(index, count - was);
      }
    }
    Json list = Json::array();
    for (ClusterId c = 0; c < clusters.size(); ++c) {
      if (clusters[c].calls == 0) continue;
      const Cumulative& w = clusters[c];
      list.push_back({{"cluster", c},
                      {"calls", w.calls},
                      {"count", w.count},
                      {"sum_ns", w.sum_ns},
                      {"mean_ns", w.count ? static_cast<double>(w.sum_ns) / static_cast<double>(w.count) : 0},
                      {"p50_ns", histograms[c].quantile(0.5)},
                      {"p99_ns", histograms[c].quantile(0.99)}});
    }
    windows.push_back({{"seconds", window_s},
                       {"covered_s", start ? now_s - start->at_s : now_s},
                       {"clusters", std::move(list)},
                       {"new_shapes", std::move(new_shapes)}});
  }
  return {{"now_s", now_s},
          {"step_s", step_s_},
          {"first_seen_s", std::move(first_seen)},
          {"windows", std::move(windows)}};
}

} // namespace shapetrace::analyzer::report
