// The comparison view's data: the diff, the clusters' activity over both runs, the flame diff.
#include "report/comparison.h"

#include "flame/flame_diff.h"
#include "diff/run_diff.h"

#include <algorithm>
#include <cmath>

namespace shapetrace::analyzer::report {

using Json = nlohmann::ordered_json;

Json clusterActivity(const Json& model, size_t columns) {
  const uint64_t bin_ns = model.at("timeline_bin_ns").get<uint64_t>();
  uint64_t first = UINT64_MAX, last = 0; // bins
  for (const Json& thread : model.at("threads"))
    for (const Json& ribbon : thread.at("timeline"))
      for (const Json& cluster : ribbon) {
        const Json& cells = cluster.at("cells");
        if (cells.empty()) continue;
        first = std::min(first, cells.front().at(0).get<uint64_t>());
        last = std::max(last, cells.back().at(0).get<uint64_t>() + 1);
      }
  Json out{{"first_ns", first == UINT64_MAX ? 0 : first * bin_ns},
           {"last_ns", first == UINT64_MAX ? 0 : last * bin_ns},
           {"clusters", Json::array()}};
  if (first == UINT64_MAX) return out;
  const double bins = static_cast<double>(last - first);
  std::vector<std::vector<double>> busy(model.at("clusters").size());
  for (const Json& thread : model.at("threads"))
    for (const Json& ribbon : thread.at("timeline"))
      for (const Json& cluster : ribbon) {
        std::vector<double>& series = busy.at(cluster.at("cluster").get<size_t>());
        if (series.empty()) series.assign(columns, 0);
        for (const Json& cell : cluster.at("cells")) {
          const double at = static_cast<double>(cell.at(0).get<uint64_t>() - first) / bins;
          const size_t column = std::min(columns - 1, static_cast<size_t>(at * static_cast<double>(columns)));
          series[column] += cell.at(2).get<double>();
        }
      }
  for (size_t id = 0; id < busy.size(); ++id) {
    if (busy[id].empty()) continue;
    Json series = Json::array();
    for (double ns : busy[id])
      series.push_back(std::llround(ns));
    out["clusters"].push_back({{"cluster", id}, {"busy_ns", std::move(series)}});
  }
  return out;
}

Json comparisonData(const Json& base, const Json& now, const std::string& base_source) {
  Json out{{"source", base_source},
           {"diff", diffJson(diffRuns(base, now))},
           {"activity", {{"base", clusterActivity(base)}, {"new", clusterActivity(now)}}},
           {"flame", nullptr},
           {"flame_note", ""}};
  if (!hasFlame(now))
    out["flame_note"] = "the report ran without the flame extension";
  else if (!hasFlame(base))
    out["flame_note"] = "the baseline has no flame graph: give a recording, or an analysis made "
                        "with --extensions flame";
  else
    out["flame"] = flameDiffJson(diffFlames(base, now));
  return out;
}

} // namespace shapetrace::analyzer::report
