// The analysis model as Prometheus families.
#include "report/metrics.h"

#include "cli/prometheus_text.h"
#include "function_names.h"
#include "scope.h"

#include <algorithm>
#include <cstdio>
#include <numeric>

namespace shapetrace::analyzer::report {
namespace {

using cli::PrometheusLabels;
using cli::PrometheusText;

constexpr double kNsPerSecond = 1e9;

std::vector<uint64_t> boundsNs() {
  std::vector<uint64_t> out;
  for (double b : durationBucketsSeconds())
    out.push_back(static_cast<uint64_t>(b * kNsPerSecond + 0.5));
  return out;
}

void durationHistogram(PrometheusText& out, const PrometheusLabels& labels,
                       const DurationStats& stats) {
  static const std::vector<uint64_t> bounds = boundsNs();
  out.histogram(labels, durationBucketsSeconds(), stats.histogram.cumulativeAtMost(bounds),
                static_cast<double>(stats.moments.sum()) / kNsPerSecond, stats.moments.count());
}

bool named(const FunctionSummary& f, const std::vector<std::string>& names) {
  for (const std::string& n : names)
    if (namesFunction(f, n)) return true;
  return false;
}

uint64_t fnv1a(uint64_t hash, const void* data, size_t size) {
  for (size_t i = 0; i < size; ++i) {
    hash ^= static_cast<const unsigned char*>(data)[i];
    hash *= 0x100000001b3ull;
  }
  return hash;
}

std::string hex(uint64_t key) {
  char text[20];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(key));
  return text;
}

uint64_t structuralHash(const Analysis& a, ShapeId shape, std::vector<uint64_t>& memo) {
  if (memo[shape] != 0) return memo[shape];
  const std::string& identity = a.functions[a.shapes.function(shape)].identity;
  uint64_t hash = fnv1a(0xcbf29ce484222325ull, identity.data(), identity.size());
  std::vector<uint64_t> children;
  for (ShapeId child : a.shapes.children(shape))
    children.push_back(structuralHash(a, child, memo));
  std::sort(children.begin(), children.end());
  for (uint64_t child : children)
    hash = fnv1a(hash, &child, sizeof child);
  return memo[shape] = hash | 1; // never 0, the memo's "not yet"
}

void inputFamilies(PrometheusText& out, const Analysis& a, const RunInfo& run,
                   const InputCounters& input) {
  out.family("shapetrace_events_total", "counter", "Events analysed");
  out.sample("", {}, static_cast<double>(a.events));
  out.family("shapetrace_events_received_total", "counter",
             "Events received from the collector; those not analysed yet are the analysis' lag "
             "(shapetrace_events_waiting)");
  out.sample("", {}, static_cast<double>(input.progress.received_events));
  out.family("shapetrace_events_waiting", "gauge",
             "Events received and not analysed yet (the analysis is behind by this many)");
  out.sample("", {}, static_cast<double>(input.progress.waiting_events));
  out.family("shapetrace_calls_total", "counter", "Calls finished (Function Call Instances)");
  out.sample("", {}, static_cast<double>(a.calls));
  out.family("shapetrace_events_dropped_total", "counter",
             "Events the traced processes dropped (full rings), as their gap markers say");
  out.sample("", {}, static_cast<double>(run.droppedEvents()));
  out.family("shapetrace_stream_items_total", "counter", "Stream items received from the collector");
  out.sample("", {}, static_cast<double>(input.items));
  out.family("shapetrace_stream_items_missed_total", "counter",
             "Items the collector published while subscribed that never arrived");
  out.sample("", {}, static_cast<double>(a.diagnostics.count(Stat::live_items_missed)));
  out.family("shapetrace_undecodable_messages_total", "counter",
             "Messages that did not decode (counted and skipped)");
  out.sample("", {}, static_cast<double>(input.undecodable));
  out.family("shapetrace_threads", "gauge", "Threads seen");
  out.sample("", {}, static_cast<double>(threadCount(a)));
  out.family("shapetrace_shapes", "gauge", "Distinct shapes (without null)");
  out.sample("", {}, static_cast<double>(a.shapes.size() - 1));
  out.family("shapetrace_clusters", "gauge", "Clusters of shapes");
  out.sample("", {}, static_cast<double>(a.clustering.clusters.size()));
  out.family("shapetrace_outliers_total", "counter",
             "Calls judged outliers: slower than their function's or their shape's mean + sigma "
             "standard deviations (per minute: rate(shapetrace_outliers_total[1m]) * 60)");
  out.sample("", {}, static_cast<double>(a.outliers_found));
}

// The `function` label: the short name (function_names.h), the same in every scrape. Collisions
// are numbered in the order of the full names, not of the time spent, which changes.
ShortNames labelNames(const Analysis& a) {
  std::vector<std::string_view> full;
  for (const FunctionSummary& f : a.functions) full.push_back(f.name);
  std::sort(full.begin(), full.end());
  ShortNames names;
  for (std::string_view name : full) names.of(name);
  return names;
}

void functionFamilies(PrometheusText& out, const Analysis& a, size_t top) {
  ShortNames names = labelNames(a);
  std::vector<uint32_t> order(a.functions.size());
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(), [&](uint32_t x, uint32_t y) {
    const auto sx = a.functions[x].stats.moments.sum(), sy = a.functions[y].stats.moments.sum();
    return sx != sy ? sx > sy : x < y;
  });
  order.resize(std::min(order.size(), top));
  out.family("shapetrace_function_calls_total", "counter",
             "Calls of the functions with the most time (the live command's --metrics-top)");
  for (uint32_t f : order)
    out.sample("", {{"function", names.of(a.functions[f].name)}}, static_cast<double>(a.functions[f].calls));
  out.family("shapetrace_function_outliers_total", "counter", "Outlier calls of those functions");
  for (uint32_t f : order)
    out.sample("", {{"function", names.of(a.functions[f].name)}},
               static_cast<double>(a.functions[f].outliers));
  out.family("shapetrace_function_duration_seconds", "histogram",
             "Durations of those functions' measured calls (buckets within 3% of their bounds)");
  for (uint32_t f : order)
    durationHistogram(out, {{"function", names.of(a.functions[f].name)}}, a.functions[f].stats);
}

void clusterFamilies(PrometheusText& out, const Analysis& a, const MetricsSettings& settings) {
  std::vector<ClusterId> chosen;
  for (ClusterId c = 0; c < a.clustering.clusters.size(); ++c)
    if (named(a.functions[a.clustering.clusters[c].function], settings.cluster_functions))
      chosen.push_back(c);
  const std::vector<uint64_t> keys = shapeKeys(a);
  ShortNames names = labelNames(a);
  auto labels = [&](ClusterId c) {
    const Cluster& cluster = a.clustering.clusters[c];
    return PrometheusLabels{{"function", names.of(a.functions[cluster.function].name)},
                            {"cluster", hex(keys[cluster.shapes.front()])}};
  };
  out.family("shapetrace_cluster_info", "gauge",
             "1 per cluster of the --metrics-cluster-function functions: its model id and shapes "
             "(the cluster label is the structural key of its first shape, stable across runs)");
  for (ClusterId c : chosen) {
    PrometheusLabels l = labels(c);
    l.emplace_back("id", std::to_string(c));
    l.emplace_back("shapes", std::to_string(a.clustering.clusters[c].shapes.size()));
    out.sample("", l, 1);
  }
  out.family("shapetrace_cluster_calls_total", "counter", "Calls of those clusters");
  for (ClusterId c : chosen)
    out.sample("", labels(c), static_cast<double>(a.cluster_calls[c]));
  out.family("shapetrace_cluster_duration_seconds", "histogram",
             "Durations of those clusters' measured calls");
  for (ClusterId c : chosen)
    durationHistogram(out, labels(c), a.cluster_stats[c]);
}

} // namespace

const std::vector<double>& durationBucketsSeconds() {
  static const std::vector<double> buckets{1e-7,   2.5e-7, 5e-7, 1e-6,  2.5e-6, 5e-6, 1e-5,
                                           2.5e-5, 5e-5,   1e-4, 2.5e-4, 5e-4,  1e-3, 2.5e-3,
                                           5e-3,   1e-2,   2.5e-2, 5e-2, 0.1,   0.25, 0.5,
                                           1,      2.5,    5,    10};
  return buckets;
}

std::vector<uint64_t> shapeKeys(const Analysis& analysis) {
  std::vector<uint64_t> keys(analysis.shapes.size(), 0);
  for (ShapeId id = 1; id < keys.size(); ++id)
    structuralHash(analysis, id, keys);
  return keys;
}

std::string metricsText(const Analysis& analysis, const RunInfo& run, const InputCounters& input,
                        const MetricsSettings& settings) {
  PrometheusText out;
  inputFamilies(out, analysis, run, input);
  functionFamilies(out, analysis, settings.top_functions);
  clusterFamilies(out, analysis, settings);
  return out.text();
}

} // namespace shapetrace::analyzer::report
