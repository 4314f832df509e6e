// Choosing and reading the embedded instances, and assembling the page's data.
#include "report/report_data.h"

#include "extensions/run_info.h"
#include "model_json.h"
#include "summaries/comparison.h"
#include "summaries/grammar.h"
#include "summaries/sequences.h"
#include "summaries/sequitur.h"
#include "wire/items.h"

#include <algorithm>
#include <ctime>
#include <map>
#include <numeric>
#include <optional>

namespace shapetrace::analyzer::report {
namespace {

using Json = nlohmann::ordered_json;

// Where a cluster occurred on one thread: the bin of its first occurrence, and the bin where its
// calls were slowest on average (most busy time per call).
struct ClusterPlaces {
  struct Place {
    ThreadKey thread;
    uint64_t bin = 0;
    bool valid = false;
  };
  Place first;
  Place slowest;
  double slowest_mean = -1;
};

std::vector<ClusterPlaces> placesOfClusters(const Analysis& analysis) {
  std::vector<ClusterPlaces> places(analysis.clustering.clusters.size());
  for (const ThreadSummary& thread : analysis.threads)
    for (const auto& ribbon : thread.timeline)
      for (const ClusterCells& cells : ribbon) {
        if (cells.cells.empty() || cells.cluster >= places.size()) continue;
        ClusterPlaces& p = places[cells.cluster];
        if (!p.first.valid) p.first = {thread.key, cells.cells.front().bin, true};
        for (const TimelineCell& cell : cells.cells) {
          if (cell.count == 0) continue;
          const double mean = static_cast<double>(cell.busy_ns) / static_cast<double>(cell.count);
          if (mean > p.slowest_mean) {
            p.slowest_mean = mean;
            p.slowest = {thread.key, cell.bin, true};
          }
        }
      }
  return places;
}

} // namespace

Json instanceJson(size_t id, const ReportInstance& r, const Analysis& analysis,
                  size_t summary_phases) {
  const Instance& in = r.instance;
  Json calls = Json::array();
  for (const InstanceCall& c : in.calls) {
    Json call = Json::array({c.function, c.depth, c.start_ns, c.end_ns});
    // A call's recorded values, only on calls that have them: [position, text] each, position 0
    // the return value, the text as `dump` shows it.
    if (!c.values.empty()) {
      Json values = Json::array();
      for (const wire::CallValue& value : c.values)
        values.push_back(Json::array({value.position, wire::describeValue(value)}));
      call.push_back(std::move(values));
    }
    calls.push_back(std::move(call));
  }
  const ClusterId cluster = in.shape != kNullShape && in.shape < analysis.shapes.size()
                                ? analysis.clustering.cluster_of_shape[in.shape]
                                : r.cluster;
  Json summary = instanceSummary(in, summary_phases);
  return Json{{"id", id},
              {"reason", instanceReasonName(r.reason)},
              {"process", in.process},
              {"thread", in.thread},
              {"start_ns", in.start_ns},
              {"duration_ns", in.duration_ns},
              {"function", in.function},
              {"shape", in.shape},
              {"cluster", cluster == kNoCluster ? Json(nullptr) : Json(cluster)},
              {"omitted_calls", in.omitted_calls},
              {"calls", std::move(calls)},
              {"summary", std::move(summary)}};
}

const char* instanceReasonName(InstanceReason reason) {
  switch (reason) {
  case InstanceReason::kFirst: return "first";
  case InstanceReason::kSlowest: return "slowest";
  case InstanceReason::kOutlier: return "outlier";
  case InstanceReason::kTypical: return "typical";
  }
  return "?";
}

std::vector<ReportInstance> collectInstances(InstanceReader& reader, const Analysis& analysis,
                                             const DetailLimits& limits, DetailSummary& summary) {
  std::vector<ReportInstance> out;
  size_t total_calls = 0;
  const auto full = [&] {
    return out.size() >= limits.max_instances || total_calls >= limits.max_total_calls;
  };
  auto keep = [&](ReportInstance r) {
    if (r.instance.omitted_calls != 0) ++summary.truncated_instances;
    total_calls += r.instance.calls.size();
    out.push_back(std::move(r));
  };

  // Outliers: the exact call the analyzer judged, found by thread, start time and function.
  const size_t outliers = std::min(analysis.outliers.size(), limits.outlier_instances);
  if (outliers < analysis.outliers.size()) summary.capped = true;
  for (size_t i = 0; i < outliers && !full(); ++i) {
    const Outlier& o = analysis.outliers[i];
    auto found = reader.find(
        o.process, o.thread, o.start_ns, o.start_ns + 1,
        [&](const CallCandidate& c) { return c.function == o.function; },
        limits.max_instance_calls);
    if (!found) {
      ++summary.not_found;
      continue;
    }
    ++summary.outlier_instances;
    keep({InstanceReason::kOutlier, kNoCluster, std::move(*found), o.shape_outlier});
  }

  // Exemplars: clusters by total time, largest first.
  const auto& clusters = analysis.clustering.clusters;
  std::vector<ClusterId> order(clusters.size());
  std::iota(order.begin(), order.end(), ClusterId{0});
  std::sort(order.begin(), order.end(), [&](ClusterId a, ClusterId b) {
    const auto sum_a = analysis.cluster_stats[a].moments.sum();
    const auto sum_b = analysis.cluster_stats[b].moments.sum();
    return sum_a != sum_b ? sum_a > sum_b : a < b;
  });
  const std::vector<ClusterPlaces> places = placesOfClusters(analysis);
  const uint64_t bin_ns = uint64_t{1} << analysis.timeline_shift;
  for (ClusterId cluster : order) {
    if (full()) {
      summary.capped = true;
      break;
    }
    const ClusterPlaces& p = places[cluster];
    bool any = false;
    auto lookUp = [&](const ClusterPlaces::Place& place, InstanceReason reason) {
      if (!place.valid || full()) return;
      const uint64_t from = place.bin << analysis.timeline_shift;
      auto found = reader.find(
          place.thread.process, place.thread.thread, from, from + bin_ns,
          [&](const CallCandidate& c) {
            return c.shape != kNullShape && analysis.clustering.cluster_of_shape[c.shape] == cluster;
          },
          limits.max_instance_calls);
      if (!found) {
        ++summary.not_found;
        return;
      }
      ++summary.exemplar_instances;
      any = true;
      keep({reason, cluster, std::move(*found)});
    };
    if (limits.exemplars_per_cluster >= 1) lookUp(p.first, InstanceReason::kFirst);
    const bool same_place = p.slowest.valid && p.first.valid && p.slowest.bin == p.first.bin &&
                            p.slowest.thread == p.first.thread;
    if (limits.exemplars_per_cluster >= 2 && !same_place)
      lookUp(p.slowest, InstanceReason::kSlowest);
    if (any) ++summary.clusters_with_instances;
  }
  summary.frames_read = reader.framesRead();
  return out;
}

Json instanceSummary(const Instance& instance, size_t max_phases) {
  if (instance.calls.size() < 2) return nullptr;
  // The calls in entry order, with their depth, give the events: a call's exit comes before the
  // next call at its depth or above.
  summaries::Sequitur sequitur;
  std::vector<uint32_t> open;
  for (const InstanceCall& call : instance.calls) {
    while (open.size() > call.depth) {
      sequitur.push(summaries::exitSymbol(open.back()));
      open.pop_back();
    }
    sequitur.push(summaries::enterSymbol(call.function));
    open.push_back(call.function);
  }
  while (!open.empty()) {
    sequitur.push(summaries::exitSymbol(open.back()));
    open.pop_back();
  }
  summaries::GrammarTable table;
  table.add(sequitur.grammar());
  return summaries::summaryJson(summaries::summarize(summaries::postProcess(table, {}), 0),
                                max_phases, 12);
}

std::vector<ReportComparison> collectComparisons(InstanceReader& reader,
                                                 recording::RecordingReader& recording,
                                                 const Analysis& analysis,
                                                 std::vector<ReportInstance>& instances,
                                                 const DetailLimits& limits) {
  std::vector<ReportComparison> out;
  // One typical call per (shape, thread): outliers compared with the same shape share it.
  std::map<std::pair<ShapeId, ThreadKey>, std::optional<size_t>> typical_of;
  auto callsOf = [](const Instance& in) {
    std::vector<std::pair<uint32_t, uint32_t>> calls;
    for (const InstanceCall& c : in.calls)
      calls.push_back({c.function, c.depth});
    return summaries::sequenceOfCalls(calls);
  };
  const size_t outliers = instances.size();
  for (size_t i = 0; i < outliers && out.size() < limits.comparisons; ++i) {
    if (instances[i].reason != InstanceReason::kOutlier) continue;
    const Instance& o = instances[i].instance;
    const summaries::TypicalShape choice = summaries::typicalShapeFor(analysis, o.function, o.shape, instances[i].same_work_slower);
    if (choice.shape == kNullShape) continue;
    const std::pair key{choice.shape, ThreadKey{o.process, o.thread}};
    auto [it, added] = typical_of.try_emplace(key);
    if (added) {
      const auto ref =
          summaries::findTypicalCall(recording, analysis, choice.shape, key.second, o.start_ns);
      if (ref) {
        auto found = reader.find(
            ref->thread.process, ref->thread.thread, ref->start_ns, ref->start_ns + 1,
            [&](const CallCandidate& c) { return c.function == o.function && c.shape == ref->shape; },
            limits.max_typical_calls);
        if (found) {
          const ClusterId cluster = analysis.clustering.cluster_of_shape[ref->shape];
          instances.push_back({InstanceReason::kTypical, cluster, std::move(*found)});
          it->second = instances.size() - 1;
        }
      }
    }
    if (!it->second) continue;
    const Instance& typical = instances[*it->second].instance;
    const summaries::ComparedSequence a = callsOf(instances[i].instance), b = callsOf(typical);
    summaries::ComparisonOptions options;
    options.max_rows = 400;
    const auto alignment = summaries::alignSequences(a, b, options);
    Json json = summaries::comparisonJson(
        a, b, alignment, options,
        [&](uint32_t f) { return f < analysis.functions.size() ? analysis.functions[f].name : ""; },
        summaries::SymbolForm::kCalls);
    json["truncated"] = instances[i].instance.omitted_calls != 0 || typical.omitted_calls != 0;
    json["typical_reason"] = choice.reason;
    out.push_back({i, *it->second, std::move(json)});
  }
  return out;
}

Json reportData(const Analysis& analysis, const PageSource& source,
                const std::vector<ReportInstance>& instances, const DetailLimits& limits,
                const DetailSummary& summary, const std::vector<ReportComparison>& comparisons) {
  Json model = toJson(analysis);
  // The exact-sequence DAG can hold millions of nodes and the page does not draw it.
  model.erase("dag");
  // The run's facts head the page (its "run"), not the model's extensions.
  Json run = Json::object();
  if (model.contains("extensions")) {
    Json& extensions = model["extensions"];
    if (extensions.contains(RunInfoExtension::kName)) {
      run = std::move(extensions[RunInfoExtension::kName]);
      extensions.erase(RunInfoExtension::kName);
    }
    if (extensions.empty()) model.erase("extensions");
  }
  Json embedded = Json::array();
  for (size_t i = 0; i < instances.size(); ++i)
    embedded.push_back(instanceJson(i, instances[i], analysis, limits.summary_phases));
  Json compared = Json::array();
  for (const ReportComparison& c : comparisons) {
    Json entry{{"outlier", c.outlier}, {"typical", c.typical}};
    entry.update(c.alignment);
    compared.push_back(std::move(entry));
  }
  return Json{{"format", "shapetrace-report"},
              {"version", 1},
              {"source", {{"kind", source.kind},
                          {"location", source.location},
                          {"generated_at", source.generated_at}}},
              {"run", std::move(run)},
              {"detail", {{"exemplars_per_cluster", limits.exemplars_per_cluster},
                          {"outlier_instances_limit", limits.outlier_instances},
                          {"max_instances", limits.max_instances},
                          {"max_instance_calls", limits.max_instance_calls},
                          {"max_total_calls", limits.max_total_calls},
                          {"exemplar_instances", summary.exemplar_instances},
                          {"outlier_instances", summary.outlier_instances},
                          {"clusters_with_instances", summary.clusters_with_instances},
                          {"not_found", summary.not_found},
                          {"truncated_instances", summary.truncated_instances},
                          {"capped", summary.capped}}},
              {"model", std::move(model)},
              {"instances", std::move(embedded)},
              {"comparisons", std::move(compared)}};
}

std::string utcNow() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

} // namespace shapetrace::analyzer::report
