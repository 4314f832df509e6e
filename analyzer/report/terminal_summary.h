// The terminal summary's tables, as `shapetrace live` and `shapetrace fleet` print them: the
// busiest clusters (by total time) and the outliers that lost the most time.
#pragma once

#include "analysis.h"
#include "live_progress.h"

#include <functional>
#include <string>

namespace shapetrace::analyzer::report {

// "1.25 ms": a duration for a terminal column.
std::string durationText(double ns);

// The live headline: "analysed 5512000 of 7560000 events received (2048000 waiting: the
// analysis is behind) · 3 items missed · 0 events dropped by the traced processes". Lag and
// loss are named; nothing reads "0 dropped" while something is missing.
std::string progressLine(const LiveProgress& progress, uint64_t dropped_by_runtime);

// Up to `clusters` clusters and `outliers` outliers. `hosts` (the fleet's): the hosts a cluster's
// shapes and an outlier come from, printed as a last column; empty for one host.
struct SummaryHosts {
  std::function<std::string(ClusterId)> of_cluster;
  std::function<std::string(const Outlier&)> of_outlier;
};
std::string clusterTables(const Analysis& analysis, size_t clusters, size_t outliers,
                          const SummaryHosts& hosts = {});

} // namespace shapetrace::analyzer::report
