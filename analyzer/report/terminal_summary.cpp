#include "report/terminal_summary.h"

#include "function_names.h"
#include "scope.h"

#include <algorithm>
#include <cstdio>
#include <numeric>

namespace shapetrace::analyzer::report {

std::string durationText(double value) {
  char text[32];
  if (value < 1e3) std::snprintf(text, sizeof text, "%.0f ns", value);
  else if (value < 1e6) std::snprintf(text, sizeof text, "%.2f us", value / 1e3);
  else if (value < 1e9) std::snprintf(text, sizeof text, "%.2f ms", value / 1e6);
  else std::snprintf(text, sizeof text, "%.2f s", value / 1e9);
  return text;
}

std::string progressLine(const LiveProgress& p, uint64_t dropped_by_runtime) {
  std::string line = "analysed " + std::to_string(p.analysed_events) + " of " +
                     std::to_string(p.received_events) + " events received";
  if (p.waiting_events > 0)
    line += " (" + std::to_string(p.waiting_events) + " waiting: the analysis is behind)";
  line += " · " + std::to_string(p.missed_items) + " items missed" +
          (p.missed_items > 0 ? " (the analysis fell behind, its queue overflowed)" : "");
  line += " · " + std::to_string(dropped_by_runtime) + " events dropped by the traced processes";
  return line;
}

std::string clusterTables(const Analysis& a, size_t clusters, size_t outliers,
                          const SummaryHosts& hosts) {
  std::string out;
  ShortNames names;
  char line[512];
  std::vector<ClusterId> order(a.clustering.clusters.size());
  std::iota(order.begin(), order.end(), ClusterId{0});
  std::sort(order.begin(), order.end(), [&](ClusterId x, ClusterId y) {
    const auto sx = a.cluster_stats[x].moments.sum(), sy = a.cluster_stats[y].moments.sum();
    return sx != sy ? sx > sy : x < y;
  });
  if (!order.empty()) {
    std::snprintf(line, sizeof line, "%-44s %6s %10s %10s %10s %10s%s\n", "cluster (by time summed over calls)",
                  "shapes", "calls", "mean", "p99", "summed", hosts.of_cluster ? "  hosts" : "");
    out += line;
  }
  for (size_t i = 0; i < order.size() && i < clusters; ++i) {
    const Cluster& c = a.clustering.clusters[order[i]];
    const DurationStats& st = a.cluster_stats[order[i]];
    const std::string name = fitColumn(
        "#" + std::to_string(order[i]) + " " + names.of(a.functions[c.function].name), 44);
    std::snprintf(line, sizeof line, "%-44.44s %6zu %10llu %10s %10s %10s", name.c_str(),
                  c.shapes.size(), static_cast<unsigned long long>(st.moments.count()),
                  durationText(st.moments.mean()).c_str(),
                  durationText(static_cast<double>(st.quantile(0.99))).c_str(),
                  durationText(static_cast<double>(st.moments.sum())).c_str());
    out += line;
    if (hosts.of_cluster) out += "  " + hosts.of_cluster(order[i]);
    out += "\n";
  }
  if (!order.empty())
    out += "(summed: the calls' durations added up over every thread; calls running at once on "
           "several threads add up, so it can exceed the run's wall time)\n";
  if (const std::string filtered = filteredLine(a); !filtered.empty())
    out += "\n" + filtered + "\n";
  if (const std::string throttled = throttledLines(a); !throttled.empty())
    out += "\n" + throttled;
  if (!a.outliers.empty() && outliers > 0) out += "\noutliers that lost the most time\n";
  for (size_t i = 0; i < a.outliers.size() && i < outliers; ++i) {
    const Outlier& o = a.outliers[i];
    std::snprintf(line, sizeof line, "  %-40s %-20s %10s  (mean %s, %.1f sd)",
                  fitColumn(names.of(a.functions[o.function].name), 40).c_str(),
                  fitColumn("thread " + threadLabel(a, {o.process, o.thread}), 20).c_str(),
                  durationText(static_cast<double>(o.duration_ns)).c_str(),
                  durationText(o.function_mean).c_str(), o.score);
    out += line;
    if (o.at_exit) out += "  at exit";
    if (hosts.of_outlier) out += "  " + hosts.of_outlier(o);
    out += "\n";
  }
  return out;
}

} // namespace shapetrace::analyzer::report
