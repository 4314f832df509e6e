// Serialisation of an Analysis into the JSON model.
#include "model_json.h"

#include <map>
#include <stdexcept>

namespace shapetrace::analyzer {
namespace {

using Json = nlohmann::ordered_json;

// Integers beyond 2^53 would lose precision in JavaScript; sums of nanoseconds can get there, so
// 128-bit sums are written as decimal strings when they do not fit 53 bits.
Json exactInteger(unsigned __int128 value) {
  if (value < (static_cast<unsigned __int128>(1) << 53)) return static_cast<uint64_t>(value);
  std::string digits;
  do {
    digits.insert(digits.begin(), static_cast<char>('0' + static_cast<int>(value % 10)));
    value /= 10;
  } while (value != 0);
  return digits;
}

Json statsJson(const DurationStats& stats) {
  const Moments& m = stats.moments;
  return Json{{"count", m.count()},
              {"mean_ns", m.mean()},
              {"sd_ns", m.stddev()},
              {"min_ns", m.min()},
              {"max_ns", m.max()},
              {"p50_ns", stats.quantile(0.5)},
              {"p99_ns", stats.quantile(0.99)},
              {"sum_ns", exactInteger(m.sum())}};
}

Json diagnosticsJson(const Diagnostics& diagnostics, bool include_zero) {
  Json out = Json::object();
  for (size_t i = 0; i < kStatCount; ++i) {
    const auto stat = static_cast<Stat>(i);
    if (include_zero || diagnostics.count(stat) != 0)
      out[std::string(statName(stat))] = diagnostics.count(stat);
  }
  return out;
}

Json cellsJson(const std::vector<TimelineCell>& cells) {
  Json out = Json::array();
  for (const TimelineCell& cell : cells)
    out.push_back(Json::array({cell.bin, cell.count, cell.busy_ns}));
  return out;
}

Json distancesJson(const Analysis& analysis) {
  std::map<uint32_t, std::vector<ShapeId>> by_function;
  for (ShapeId id = 1; id < analysis.shapes.size(); ++id)
    by_function[analysis.shapes.function(id)].push_back(id);
  ShapeMetric metric(analysis.shapes);
  Json out = Json::array();
  for (const auto& [function, shapes] : by_function) {
    Json matrix = Json::array();
    for (ShapeId a : shapes) {
      Json row = Json::array();
      for (ShapeId b : shapes)
        row.push_back(metric.distance(a, b));
      matrix.push_back(std::move(row));
    }
    out.push_back(Json{{"function", function}, {"shapes", shapes}, {"matrix", std::move(matrix)}});
  }
  return out;
}

Json settingsJson(const AnalysisSettings& settings) {
  return Json{{"cluster_threshold", settings.cluster_threshold},
              {"clustering", clusteringMethodName(settings.method)},
              {"timeline_bins", settings.thread.timeline_bins},
              {"outlier_sigma", settings.thread.outlier_sigma},
              {"outlier_min_samples", settings.thread.outlier_min_samples},
              {"max_outliers", settings.thread.max_outliers},
              {"max_dag_nodes", settings.thread.max_dag_nodes},
              {"max_depth", settings.thread.max_depth}};
}

Json summaryJson(const Analysis& analysis) {
  return Json{{"events", analysis.events},
              {"calls", analysis.calls},
              {"threads", threadCount(analysis)},
              {"functions", analysis.functions.size()},
              {"shapes", analysis.shapes.size() - 1},
              {"dag_nodes", analysis.dag.size() - 1},
              {"clusters", analysis.clustering.clusters.size()},
              {"ribbons", analysis.ribbons.size()},
              {"outliers_found", analysis.outliers_found},
              {"outliers_kept", analysis.outliers.size()},
              {"functions_filtered_at_build", analysis.excluded.size()},
              {"functions_throttled", throttledFunctionCount(analysis)}};
}

Json diagnosticsListJson(const Diagnostics& counts) {
  Json diagnostics = Json::array();
  for (size_t i = 0; i < kStatCount; ++i) {
    const auto stat = static_cast<Stat>(i);
    diagnostics.push_back(Json{{"name", statName(stat)},
                               {"severity", severityName(statSeverity(stat))},
                               {"description", statDescription(stat)},
                               {"count", counts.count(stat)}});
  }
  return diagnostics;
}

Json functionsJson(const Analysis& analysis) {
  Json functions = Json::array();
  for (uint32_t id = 0; id < analysis.functions.size(); ++id) {
    const FunctionSummary& f = analysis.functions[id];
    functions.push_back(Json{{"id", id},
                             {"name", f.name},
                             {"mangled", f.mangled},
                             {"file", f.file},
                             {"line", f.line},
                             {"known", f.known},
                             {"calls", f.calls},
                             {"outliers", f.outliers},
                             {"inclusive_ns", f.inclusive_ns},
                             {"busiest_thread_ns", f.busiest_thread_ns},
                             {"threads", f.threads},
                             {"stats", statsJson(f.stats)}});
  }
  return functions;
}

Json shapesJson(const Analysis& analysis) {
  Json shapes = Json::array();
  for (ShapeId id = 1; id < analysis.shapes.size(); ++id) {
    const ShapeState& state = analysis.shape_states[id];
    const auto children = analysis.shapes.children(id);
    shapes.push_back(Json{{"id", id},
                          {"function", analysis.shapes.function(id)},
                          {"children", std::vector<ShapeId>(children.begin(), children.end())},
                          {"depth", analysis.shapes.depth(id)},
                          {"leaf", analysis.shapes.isLeaf(id)},
                          {"cluster", analysis.clustering.cluster_of_shape[id]},
                          {"calls", state.calls},
                          {"outliers", state.outliers},
                          {"stats", statsJson(state.stats)}});
  }
  return shapes;
}

Json dagJson(const Analysis& analysis) {
  if (analysis.dag_stats.size() != analysis.dag.size())
    throw std::logic_error("the DAG listing needs AnalysisSettings::sum_dag_statistics");
  Json dag = Json::array();
  for (ShapeId id = 1; id < analysis.dag.size(); ++id) {
    const DagTotals& stats = analysis.dag_stats[id];
    const auto children = analysis.dag.children(id);
    dag.push_back(Json{{"id", id},
                       {"function", analysis.dag.function(id)},
                       {"children", std::vector<ShapeId>(children.begin(), children.end())},
                       {"count", stats.count},
                       {"sum_ns", exactInteger(stats.sum)},
                       {"sum_squares_ns2", exactInteger(stats.sum_squares)}});
  }
  return dag;
}

Json clustersJson(const Analysis& analysis) {
  Json clusters = Json::array();
  for (ClusterId id = 0; id < analysis.clustering.clusters.size(); ++id) {
    const Cluster& c = analysis.clustering.clusters[id];
    clusters.push_back(Json{{"id", id},
                            {"function", c.function},
                            {"shapes", c.shapes},
                            {"depth", c.depth},
                            {"max_distance", c.max_distance},
                            {"trivial", c.trivial},
                            {"calls", analysis.cluster_calls[id]},
                            {"stats", statsJson(analysis.cluster_stats[id])}});
  }
  return clusters;
}

Json threadJson(const ThreadSummary& t) {
  const ThreadCounts& c = t.counts;
  Json timeline = Json::array();
  for (const auto& ribbon : t.timeline) {
    Json row = Json::array();
    for (const ClusterCells& cells : ribbon)
      row.push_back(Json{{"cluster", cells.cluster}, {"cells", cellsJson(cells.cells)}});
    timeline.push_back(std::move(row));
  }
  Json thread{{"process", t.key.process},
              {"thread", t.key.thread},
              {"name", t.name},
              {"ended", t.ended},
              {"events", t.events},
              {"calls", t.calls},
              {"open_calls", t.open_calls},
              {"table1", Json{{"shapes_in_thread", c.shapes_in_thread},
                              {"additional_shapes", c.additional_shapes},
                              {"all_shapes", c.all_shapes}}},
              {"table2", Json{{"clusters_in_thread", c.clusters_in_thread},
                              {"additional_clusters", c.additional_clusters},
                              {"all_clusters", c.all_clusters}}},
              {"shapes", t.shapes},
              {"ribbons", t.ribbons},
              {"timeline", std::move(timeline)},
              {"diagnostics", diagnosticsJson(t.diagnostics, false)}};
  // Only on a process's folded threads (thread_fold.h): a model without any is as it was.
  if (t.folded_threads > 0) thread["folded_threads"] = t.folded_threads;
  if (t.folded_processes > 0) thread["folded_processes"] = t.folded_processes;
  return thread;
}

Json outlierJson(const Outlier& o) {
  return Json{{"process", o.process},
              {"thread", o.thread},
              {"function", o.function},
              {"shape", o.shape},
              {"start_ns", o.start_ns},
              {"duration_ns", o.duration_ns},
              {"function_outlier", o.function_outlier},
              {"shape_outlier", o.shape_outlier},
              {"function_mean_ns", o.function_mean},
              {"function_sd_ns", o.function_sd},
              {"function_count", o.function_count},
              {"shape_mean_ns", o.shape_mean},
              {"shape_sd_ns", o.shape_sd},
              {"shape_count", o.shape_count},
              {"score", o.score},
              {"excess_ns", excessNs(o)},
              {"at_exit", o.at_exit}};
}

} // namespace

nlohmann::ordered_json toJson(const Analysis& analysis, const ModelSections& sections) {
  Json model;
  model["format"] = "shapetrace-analysis";
  model["version"] = kModelVersion;
  model["settings"] = settingsJson(analysis.settings);
  model["summary"] = summaryJson(analysis);
  model["diagnostics"] = diagnosticsListJson(analysis.diagnostics);
  model["functions"] = functionsJson(analysis);
  if (!analysis.throttled.empty()) {
    Json throttled = Json::array();
    for (const ThrottledFunction& t : analysis.throttled)
      throttled.push_back({{"function", t.function},
                           {"process", t.process},
                           {"thread", t.thread},
                           {"at_ns", t.at_ns},
                           {"short_calls", t.short_calls},
                           {"calls_not_recorded", t.count_known ? Json(t.calls_not_recorded)
                                                                : Json(nullptr)}});
    model["throttled"] = std::move(throttled);
  }
  if (!analysis.excluded.empty()) {
    Json excluded = Json::array();
    for (const ExcludedFunction& e : analysis.excluded)
      excluded.push_back({{"function", e.function}, {"by", wire::exclusionName(e.by)}});
    model["excluded"] = std::move(excluded);
  }
  model["shapes"] = shapesJson(analysis);
  if (sections.dag) model["dag"] = dagJson(analysis);
  model["clusters"] = clustersJson(analysis);
  model["ribbons"] = analysis.ribbons;
  Json threads = Json::array();
  for (const ThreadSummary& t : analysis.threads)
    threads.push_back(threadJson(t));
  model["threads"] = std::move(threads);
  model["timeline_bin_ns"] = uint64_t{1} << analysis.timeline_shift;
  Json outliers = Json::array();
  for (const Outlier& o : analysis.outliers)
    outliers.push_back(outlierJson(o));
  model["outliers"] = std::move(outliers);
  if (sections.distances) model["distances"] = distancesJson(analysis);
  if (!analysis.extensions.empty()) {
    Json extensions = Json::object();
    for (const auto& [name, result] : analysis.extensions)
      extensions[name] = result;
    model["extensions"] = std::move(extensions);
  }
  return model;
}

std::string functionIdentity(const nlohmann::ordered_json& function) {
  const std::string& mangled = function.at("mangled").get_ref<const std::string&>();
  return mangled.empty() ? function.at("name").get<std::string>() : mangled;
}

} // namespace shapetrace::analyzer
