// The merged result of analysing every thread: functions, shapes, DAG nodes, clusters, ribbons,
// Tables 1-2 counts, outliers, diagnostics and the occurrence timeline. This is what the JSON model
// (model_json.h) serialises and what a live snapshot returns.
//
// Merging is exact and deterministic: threads are merged in (process, thread) order, each thread's
// shapes in their local order of first appearance, so global shape ids follow "first appearance in
// the trace" with threads taken in that order (the order of the paper's Table 1). Counts, sums,
// histograms and shape tables merge exactly; Welford moments by Chan's formula, in that fixed order.
#pragma once

#include "clustering.h"
#include "diagnostics.h"
#include "running_stats.h"
#include "shape_table.h"
#include "thread_analyzer.h"
#include "timeline.h"

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace shapetrace::analyzer {

struct ThreadKey {
  uint64_t process = 0;
  uint32_t thread = 0;
  friend auto operator<=>(const ThreadKey&, const ThreadKey&) = default;
};

struct FunctionSummary {
  std::string name; // demangled when known
  std::string mangled;
  std::string file;
  uint32_t line = 0;
  bool known = false; // named by a module table
  DurationStats stats;
  uint64_t calls = 0;
  uint64_t outliers = 0;
};

// Tables 1 and 2 of the paper for one thread, threads taken in order (null and [f, {null}] shapes,
// and clusters holding such shapes, are not counted).
struct ThreadCounts {
  size_t shapes_in_thread = 0;
  size_t additional_shapes = 0;
  size_t all_shapes = 0;
  size_t clusters_in_thread = 0;
  size_t additional_clusters = 0;
  size_t all_clusters = 0;
};

struct ClusterCells {
  ClusterId cluster = 0;
  std::vector<TimelineCell> cells;
};

struct ThreadSummary {
  ThreadKey key;
  std::string name;
  bool ended = false;
  uint64_t events = 0;
  uint64_t calls = 0;
  size_t open_calls = 0;
  Diagnostics diagnostics;
  std::vector<ShapeId> shapes; // analysis shape ids that occurred on this thread, ascending
  ThreadCounts counts;
  std::vector<std::vector<ClusterId>> ribbons;  // createClusterGroups over this thread's clusters
  std::vector<std::vector<ClusterCells>> timeline; // per ribbon, per cluster of the ribbon
};

struct AnalysisSettings {
  AnalyzerOptions options;
  double cluster_threshold = 1.5;
  ClusteringMethod method = ClusteringMethod::kAppendixA;
  // Sum the threads' statistics per merged DAG node (Analysis::dag_stats). Only the DAG listing
  // shows them, and for a long run they are tens of megabytes: the analyze command asks only with
  // --dag.
  bool sum_dag_statistics = true;
};

struct Analysis {
  AnalysisSettings settings;
  std::vector<FunctionSummary> functions;
  ShapeTable shapes;
  std::vector<ShapeState> shape_states;
  ShapeTable dag{ShapeTable::Depth::kNotKept};
  std::vector<DagTotals> dag_stats; // per node, when settings.sum_dag_statistics; empty otherwise
  Clustering clustering;
  std::vector<DurationStats> cluster_stats;
  std::vector<uint64_t> cluster_calls;
  std::vector<std::vector<ClusterId>> ribbons; // over all clusters
  std::vector<ThreadSummary> threads;
  std::vector<Outlier> outliers;
  Diagnostics diagnostics; // sum over threads, plus analysis-level counts
  unsigned timeline_shift = 0; // common bin width: 2^shift ns
  uint64_t events = 0;
  uint64_t calls = 0;
};

// One thread's input to the merge.
struct ThreadInput {
  ThreadKey key;
  std::string name;
  bool ended = false;
  const ThreadAnalyzer* analyzer = nullptr;
};

// Resolves a process's function id to its module-table entry; nullptr when unknown.
using FunctionResolver = std::function<const wire::FunctionInfo*(uint64_t process, uint32_t id)>;

// Merges the threads (any order; sorted here) and runs clustering and grouping.
Analysis analyze(std::vector<ThreadInput> threads, const FunctionResolver& resolve,
                 const AnalysisSettings& settings);

} // namespace shapetrace::analyzer
