// The model: the merged result of analysing every thread (functions, shapes, DAG nodes, clusters,
// ribbons, Tables 1-2 counts, outliers, diagnostics, the occurrence timeline) and the results of
// the extensions that ran (extension.h). This is what the JSON model (model_json.h) serialises and
// what a live snapshot returns. The merge takes per-thread results (thread_result.h), wherever they
// were computed.
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
#include "thread_result.h"
#include "timeline.h"
#include "wire/items.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace shapetrace::analyzer {

// Function identity, defined once: threads, processes, recordings and hosts name a function alike
// when its mangled name is the same (else its demangled name; a function id that no module table
// named is "fn#<id>", which only matches the same id). Its display name is the demangled one.
struct FunctionName {
  std::string identity;
  std::string name;
  std::string mangled;
  std::string file;
  uint32_t line = 0;
  bool known = false; // named by a module table
};
FunctionName nameFunction(const wire::FunctionInfo* info, uint32_t id);

// A DAG node's DagStats summed over threads, whose calls do overlap.
struct DagTotals {
  uint64_t count = 0;
  unsigned __int128 sum = 0;
  unsigned __int128 sum_squares = 0;
};

// A function of the model: its name, and its calls over every thread.
struct FunctionSummary : FunctionName {
  DurationStats stats;
  uint64_t calls = 0;
  uint64_t outliers = 0;
  // Time in it, a recursive chain counted once, summed over threads: calls running at the same
  // time on several threads add up, so it can exceed the run's wall time.
  uint64_t inclusive_ns = 0;
  // The same on the one thread that spent the most time in it: a wall time, within the run's.
  uint64_t busiest_thread_ns = 0;
  uint32_t threads = 0; // threads that called it (folded ones each counted)
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
  // 0 for a thread; for a process's folded threads (thread_fold.h), how many ended threads the
  // entry stands for.
  uint64_t folded_threads = 0;
  // 0 but for the folded processes (thread_fold.h): how many ended processes the entry stands for.
  uint64_t folded_processes = 0;
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
  ThreadAnalyzerSettings thread;
  double cluster_threshold = 1.5;
  ClusteringMethod method = ClusteringMethod::kAppendixA;
  // Sum the threads' statistics per merged DAG node (Analysis::dag_stats). Only the DAG listing
  // shows them, and for a long run they are tens of megabytes: the analyze command asks only with
  // --dag.
  bool sum_dag_statistics = true;
  // Cluster the shapes (Tables 1-2, ribbons, the timeline). `explain` reads shapes and calls
  // only: without clustering, Analysis::clustering maps every shape to kNoCluster and the
  // clusters, ribbons, timeline and Tables 1-2 are left empty (pairwise shape distances are
  // quadratic in the shapes: on the DRT paper's R_200, 98% of the time).
  bool cluster_shapes = true;
  // Ended threads kept whole, each its own entry of the model; past them, the threads that ended
  // first are folded into their process' folded threads (thread_fold.h), so memory follows the
  // threads alive. A recording with fewer threads is analysed as if there were no such bound.
  size_t kept_ended_threads = 1000;
  // Ended processes kept whole (each with its threads, folded or not, and its module tables); past
  // them, the processes that ended first are folded into one result, the folded processes
  // (thread_fold.h), their functions merged by identity, so memory follows the processes alive.
  size_t kept_ended_processes = 1000;
};

// A function the runtime stopped recording (SHAPETRACE_THROTTLE, docs/runtime.md): from `at_ns` on,
// the process recorded no call of it that began later than each thread saw the throttle (within
// one drain interval), as if a filter had left it out from then on.
struct ThrottledFunction {
  uint64_t process = 0;
  uint32_t thread = 0;    // whose call reached the count
  uint32_t function = 0;  // index in Analysis::functions
  uint64_t at_ns = 0;     // the end of that call
  uint64_t short_calls = 0;
  uint64_t calls_not_recorded = 0; // from the process's end; 0 without one
  bool count_known = false;        // the process's end gave the count
};

// A function the build left out (the user's filters: the rule file or the minimum size), as its
// module's table says: the recording holds none of its calls (docs/analyzer.md, "Filtered and
// throttled functions").
struct ExcludedFunction {
  uint32_t function = 0; // index in Analysis::functions
  wire::Exclusion by = wire::Exclusion::kNone;
};

struct Analysis {
  AnalysisSettings settings;
  std::vector<FunctionSummary> functions;
  ShapeTable shapes;
  std::vector<ShapeState> shape_states;
  // The exact-sequence DAG; each node's payload word (dag.payload(id)) is its shape's id.
  ShapeTable dag{ShapeTable::Depth::kNotKept};
  std::vector<DagTotals> dag_stats; // per node, when settings.sum_dag_statistics; empty otherwise
  Clustering clustering;
  std::vector<DurationStats> cluster_stats;
  std::vector<uint64_t> cluster_calls;
  std::vector<std::vector<ClusterId>> ribbons; // over all clusters
  std::vector<ThreadSummary> threads;
  std::vector<Outlier> outliers; // the most extreme kept (settings.thread.max_outliers)
  uint64_t outliers_found = 0;   // every call judged an outlier, kept or not
  Diagnostics diagnostics; // sum over threads, plus analysis-level counts
  unsigned timeline_shift = 0; // common bin width: 2^shift ns
  uint64_t events = 0;
  uint64_t calls = 0;
  // A process's function id -> its index in `functions`, for every id the threads used.
  std::map<std::pair<uint64_t, uint32_t>, uint32_t> function_index;
  // Throttled functions, by time (then process, function).
  std::vector<ThrottledFunction> throttled;
  // Functions the build left out, by index.
  std::vector<ExcludedFunction> excluded;
  // The extensions' results, in the order they ran (extension.h); written under "extensions".
  std::vector<std::pair<std::string, nlohmann::ordered_json>> extensions;

  // The analysis index of a process's function id; UINT32_MAX when no thread used it.
  uint32_t functionIndex(uint64_t process, uint32_t id) const {
    const auto it = function_index.find({process, id});
    return it == function_index.end() ? UINT32_MAX : it->second;
  }
};

// The threads the analysis holds, each of a process's folded threads counted.
uint64_t threadCount(const Analysis& analysis);
// Functions the runtime throttled, each counted once however many processes throttled it.
size_t throttledFunctionCount(const Analysis& analysis);

// One thread's input to the merge.
struct ThreadInput {
  ThreadKey key;
  std::string name;
  bool ended = false;
  const ThreadResult* result = nullptr;
};

// Resolves a process's function id to its module-table entry; nullptr when unknown.
using FunctionResolver = std::function<const wire::FunctionInfo*(uint64_t process, uint32_t id)>;

// The model's function table: a process's function id -> its index by identity, appending the
// function (with no calls yet) the first time an identity is met. The merge builds the table with
// one; an extension that names functions no finished call used (a `main` still open) gets one too.
class FunctionIndex {
public:
  FunctionIndex(Analysis& analysis, FunctionResolver resolve);
  uint32_t indexOf(uint64_t process, uint32_t id);

private:
  Analysis& analysis_;
  FunctionResolver resolve_;
  std::unordered_map<std::string, uint32_t> by_identity_;
};

// Merges the threads (any order; sorted here) and runs clustering and grouping.
Analysis analyze(std::vector<ThreadInput> threads, const FunctionResolver& resolve,
                 const AnalysisSettings& settings);

// The time the tracer made `thread` wait in all (lossless recording), 0 for a thread the analysis
// lacks. A call open at a wait starts later by it in the analysis (call_stack.h): a call found again
// in the recording by that start entered up to this much before it.
uint64_t tracerWaitNs(const Analysis& analysis, const ThreadKey& thread);

} // namespace shapetrace::analyzer
