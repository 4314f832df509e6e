// Prometheus' text exposition format (version 0.0.4), written by hand: a few families of
// counters, gauges and histograms, for `shapetrace live` and `shapetrace collect` to serve on
// /metrics. Why not prometheus-cpp: its registry owns long-lived metric objects updated as events
// happen, while ours are a snapshot of the analysis model read at scrape time; writing the format
// from the snapshot is a few dozen lines, with no second copy of the numbers to keep in step.
//
// The format (prometheus.io/docs/instrumenting/exposition_formats): per family a "# HELP name
// text" and a "# TYPE name counter|gauge|histogram" line, then its samples "name{l="v",...} value",
// label values with \ " and newline escaped; a histogram's samples are name_bucket{le="..."}
// (cumulative, ending with le="+Inf"), name_sum and name_count.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace shapetrace::cli {

using PrometheusLabels = std::vector<std::pair<std::string, std::string>>;

class PrometheusText {
public:
  // Starts a family; its samples follow. `type`: "counter", "gauge" or "histogram".
  void family(std::string_view name, std::string_view type, std::string_view help);
  // One sample of the current family (`suffix` is "", "_bucket", "_sum" or "_count").
  void sample(std::string_view suffix, const PrometheusLabels& labels, double value);
  // A histogram's samples: `bounds` ascending upper bounds, `cumulative[i]` the observations
  // <= bounds[i]; the +Inf bucket is `count`.
  void histogram(const PrometheusLabels& labels, const std::vector<double>& bounds,
                 const std::vector<uint64_t>& cumulative, double sum, uint64_t count);

  const std::string& text() const { return text_; }

  static constexpr std::string_view kContentType = "text/plain; version=0.0.4; charset=utf-8";

private:
  std::string text_;
  std::string family_;
};

} // namespace shapetrace::cli
