// The analysis model as Prometheus metrics (`shapetrace live` serves them on /metrics), for the
// dashboards a service's engineers already have. Cardinality is bounded: per-function series only
// for the `top_functions` functions with the most time, per-cluster series only for the clusters of
// the functions named in `cluster_functions` (a service's request handlers). docs/report.md lists
// every series.
#pragma once

#include "analysis.h"
#include "extensions/run_info.h"
#include "live_progress.h"

#include <cstdint>
#include <string>
#include <vector>

namespace shapetrace::analyzer::report {

struct MetricsSettings {
  size_t top_functions = 20;
  // Functions whose clusters get series: a name as the model gives it, without its parameter
  // list ("kv::RequestHandler::serve"), or mangled.
  std::vector<std::string> cluster_functions;
};

// What the live input counted besides the model.
struct InputCounters {
  uint64_t items = 0;       // stream items received and decoded
  uint64_t undecodable = 0; // messages that did not decode
  LiveProgress progress;    // events received and analysed: the analysis' lag
};

// Histogram buckets of every duration series, in seconds: 100 ns to 10 s in 1-2.5-5 steps.
const std::vector<double>& durationBucketsSeconds();

// The text exposition of `analysis` (cli/prometheus_text.h).
std::string metricsText(const Analysis& analysis, const RunInfo& run, const InputCounters& input,
                        const MetricsSettings& settings);

// Every shape's structural key, by shape id (0 for null): its function's identity and its
// children's keys, hashed. The same in every snapshot and run of the same program, whatever the
// shape ids.
std::vector<uint64_t> shapeKeys(const Analysis& analysis);

} // namespace shapetrace::analyzer::report
