// The data behind the report page: the analysis model (model_json.h) without the DAG, the run's
// facts, and a bounded set of exact call instances read back from the recording (exemplars of each
// cluster and the most extreme outliers), with a note of what the bounds left out.
//
// The page draws the timeline from the model's per-thread occurrence cells (bounded resolution, so
// a run of any length costs the same) and shows exact calls only for the instances embedded here;
// this is what keeps a report of 100 million events a few megabytes.
#pragma once

#include "analysis.h"
#include "report/instance_reader.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace shapetrace::analyzer::report {

struct DetailLimits {
  size_t exemplars_per_cluster = 2; // the first occurrence and the slowest bin's occurrence
  size_t outlier_instances = 200;   // the most extreme outliers get their exact call
  size_t max_instances = 2000;      // everything embedded, outliers first
  size_t max_instance_calls = 5000; // calls listed per instance (the rest are counted)
  // Calls listed over all instances: what bounds the page's size when instances are large (a deep
  // recursion's exemplars), about 20 bytes a call.
  size_t max_total_calls = 250000;
  // "Why was this call slow": the most extreme embedded outliers aligned with a typical call of
  // their function (its instance embedded too, listing at most max_typical_calls calls).
  size_t comparisons = 30;
  size_t max_typical_calls = 2000;
  size_t summary_phases = 60; // phases of each embedded instance's summary
};

enum class InstanceReason : uint8_t { kFirst, kSlowest, kOutlier, kTypical };
const char* instanceReasonName(InstanceReason reason);

struct ReportInstance {
  InstanceReason reason = InstanceReason::kFirst;
  ClusterId cluster = kNoCluster; // the cluster it was looked up for (exemplars)
  Instance instance;
  // Outliers: slower than the calls of its own shape (Outlier::shape_outlier): the same work.
  bool same_work_slower = false;
};

struct DetailSummary {
  size_t exemplar_instances = 0;
  size_t outlier_instances = 0;
  size_t clusters_with_instances = 0;
  size_t not_found = 0;             // looked up but not found in the recording
  size_t truncated_instances = 0;   // listing fewer calls than they have
  bool capped = false;              // some cluster or outlier got no instance because of a bound
  uint64_t frames_read = 0;
};

// Reads the instances the limits allow, outliers first (most extreme first), then exemplars of
// each cluster, clusters taken by total time, largest first.
std::vector<ReportInstance> collectInstances(InstanceReader& reader, const Analysis& analysis,
                                             const DetailLimits& limits, DetailSummary& summary);

// One instance as the page reads it: {"id", "reason", "process", "thread", "start_ns",
// "duration_ns", "function", "shape", "cluster", "omitted_calls", "calls": [[function, depth,
// start_ns, end_ns]] (times of calls relative to the instance's start), "summary"
// (instanceSummary, at most `summary_phases` phases)}.
nlohmann::ordered_json instanceJson(size_t id, const ReportInstance& instance,
                                    const Analysis& analysis,
                                    size_t summary_phases = DetailLimits{}.summary_phases);

// An outlier instance aligned with a typical call of its function (summaries/comparison.h).
struct ReportComparison {
  size_t outlier = 0; // instance indices
  size_t typical = 0;
  nlohmann::ordered_json alignment;
};
// For the first `limits.comparisons` outlier instances: a typical call of the function
// (summaries::findTypicalCall), appended to `instances` (reason kTypical), and the alignment of
// the two calls' calls.
std::vector<ReportComparison> collectComparisons(InstanceReader& reader,
                                                 recording::RecordingReader& recording,
                                                 const Analysis& analysis,
                                                 std::vector<ReportInstance>& instances,
                                                 const DetailLimits& limits);

// The ThreadViewer proposal's summary of one instance's calls (enter-exit form), at most
// `max_phases` phases; null for an instance of one call.
nlohmann::ordered_json instanceSummary(const Instance& instance, size_t max_phases);

struct PageSource {
  std::string kind; // "recording" or "live"
  std::string location; // the directory or the endpoint
  std::string generated_at; // UTC, ISO 8601
};

// Everything the page needs, as one JSON object. The run's facts are the run_info extension's
// result (empty when it did not run).
nlohmann::ordered_json reportData(const Analysis& analysis, const PageSource& source,
                                  const std::vector<ReportInstance>& instances,
                                  const DetailLimits& limits, const DetailSummary& summary,
                                  const std::vector<ReportComparison>& comparisons = {});

std::string utcNow();

} // namespace shapetrace::analyzer::report
