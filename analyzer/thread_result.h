// One thread's analysis as a plain value: what the merge (analysis.h) takes. A ThreadAnalyzer
// builds one in place as events arrive (thread_analyzer.h); a result made anywhere else (another
// process, another host) with the same content merges exactly the same way, given the module tables
// that name its function ids.
//
// Function ids here are the process's own, as the events carry them; shape and DAG node ids are the
// thread's own, dense, in order of first appearance (the order calls finished in).
#pragma once

#include "diagnostics.h"
#include "running_stats.h"
#include "shape_table.h"
#include "timeline.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace shapetrace::analyzer {

// A thread of the trace: the process key the collector gave its process, and its thread id.
struct ThreadKey {
  uint64_t process = 0;
  uint32_t thread = 0;
  friend auto operator<=>(const ThreadKey&, const ThreadKey&) = default;
};

// How a thread is analysed: the timeline's resolution, the outlier rule, the bounds.
struct ThreadAnalyzerSettings {
  uint32_t timeline_bins = 1024;
  double outlier_sigma = 2.0;        // 001's rule: more than 2 standard deviations above the mean
  uint64_t outlier_min_samples = 10; // calls seen before a mean and deviation are trusted
  size_t max_outliers = 1000;        // the most extreme kept (per thread, then overall)
  size_t max_dag_nodes = size_t{1} << 22; // per thread; beyond it the DAG stops growing (counted)
  // Calls nested deeper are not analysed (counted): a recursion 100,000 deep would otherwise make a
  // shape, a cluster and a ribbon per level. uftrace's default depth limit is the same.
  uint32_t max_depth = 1024;
  // The input holds every thread from its first batch (a recording, read from its start): batches
  // missing before the first one received are lost too (call_stack.h's BatchSequence).
  bool from_start = false;
};

// One call judged against the running statistics at the moment it finished.
struct Outlier {
  uint64_t start_ns = 0;
  uint64_t duration_ns = 0;
  uint32_t function = 0; // process function id in a ThreadResult, analysis function index merged
  ShapeId shape = kNullShape;
  bool function_outlier = false; // slower than its function's mean + sigma * sd
  bool shape_outlier = false;    // slower than its shape's: same work, done slower
  double function_mean = 0, function_sd = 0;
  uint64_t function_count = 0;
  double shape_mean = 0, shape_sd = 0;
  uint64_t shape_count = 0;
  double score = 0; // largest (duration - mean) / sd over the rules that fired
  // Started after the thread's call of `main` returned: an exit-time destructor or atexit handler,
  // which a user reading a service's latency looks at last (ThreadAnalyzer::setMainFunction).
  bool at_exit = false;
  // Filled in by the merge: which thread it happened on.
  uint64_t process = 0;
  uint32_t thread = 0;
};
// The time an outlier lost: its duration less the mean of each rule that fired, the largest.
double excessNs(const Outlier& outlier);
// Total order used to keep the top outliers: those before exit first, then the most time lost
// (excessNs), then the larger score, then earlier, then by thread. Time, not sigmas: a 10 ns leaf preempted for 27 us is
// 13,000 sd above its mean and cost 27 us; a request that waited 78 ms for a flush is 10,000 sd
// above its own and is the one a user looks for.
bool outlierBefore(const Outlier& a, const Outlier& b);

// count, sum and sum of squares of durations per DAG node (Reiss & Renieris), exact integers.
// A thread's calls of one node never overlap (a node is never its own descendant), so their
// durations add up to less than the thread's time span and 64 bits hold the sum: 32 bytes a node.
struct DagStats {
  uint64_t count = 0;
  uint64_t sum = 0;
  unsigned __int128 sum_squares = 0;
};

struct FunctionState {
  DurationStats stats;
  uint64_t outliers = 0;
  uint64_t calls = 0; // measured and unmeasured
  // The time of its measured calls with no call of the same function open below them on the
  // thread: inclusive time with a recursive chain counted once (stats.sum counts every level).
  uint64_t inclusive_ns = 0;
  // For one thread, its inclusive time and 1; for folded threads (thread_fold.h), the largest of
  // theirs and how many of them called it.
  uint64_t busiest_thread_ns = 0;
  uint64_t threads = 0;
};

// Sums of durations over one thread fit 64 bits (a thread's calls of one function or DAG node
// never overlap); over many threads they may not (a hostile stream's calls of 2^61 ns, a forged
// summary). Such a sum stops at its largest value rather than wrap.
inline uint64_t saturatingAdd(uint64_t a, uint64_t b) {
  return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

struct ShapeState {
  DurationStats stats;
  uint64_t outliers = 0;
  uint64_t calls = 0;
};

struct ThreadResult {
  ShapeTable shapes;                     // Def. 5.2 shapes, by structure
  std::vector<ShapeState> shape_states;  // by shape id
  // The exact-sequence DAG; each node's payload word (ShapeTable::payload) is its shape's id.
  ShapeTable dag{ShapeTable::Depth::kNotKept};
  GrowableArray<DagStats> dag_stats;       // by DAG node id; all-zero bytes: an empty DagStats
  // By function id, only the functions called: sparse, as the ids come from the input.
  std::map<uint32_t, FunctionState> functions;
  std::vector<Outlier> outliers;           // the kept outliers, most extreme first
  OccurrenceTimeline timeline;
  Diagnostics diagnostics;
  uint64_t events = 0;
  uint64_t calls = 0; // finished
  size_t open_calls = 0;
  uint64_t outliers_found = 0; // calls judged outliers (of their function or shape); `outliers` keeps the most extreme
  // 0 for a thread; for a process's folded threads (thread_fold.h), how many ended threads they
  // hold (its outliers then name their threads already).
  uint64_t folded_threads = 0;
  // 0 but for the folded processes' result (thread_fold.h): how many ended processes it holds.
  uint64_t folded_processes = 0;
};

} // namespace shapetrace::analyzer
