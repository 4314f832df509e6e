// One thread's analysis, fed its events in order: call-stack reconstruction with resynchronisation,
// Function Call Instances finished on exit, their interned shapes and exact-sequence DAG nodes,
// running statistics per function and shape, online outliers and the occurrence timeline.
//
// A ThreadAnalyzer is owned by one worker at a time and never shares state with another thread's
// analyzer; the results of several are combined by merge.h in a fixed order. Function ids here are
// the process's own (as the events carry them); merging maps them to the analysis' functions.
//
// Resynchronisation rules (each case is counted, see stats.inc):
// - exit of the function on top of the stack: the call finishes normally;
// - exit of a function deeper in the stack (longjmp-like escape, lost exits): the calls above it
//   finish at that time too, keep their shapes, and leave their durations out of the statistics;
// - exit of a function not on the stack: ignored (after a gap this is expected and counted apart);
// - a gap (dropped events, a missing batch): every open call's content is incomplete, so the whole
//   stack is discarded; the analysis restarts empty with the next event.
#pragma once

#include "diagnostics.h"
#include "running_stats.h"
#include "shape_table.h"
#include "timeline.h"
#include "wire/event.h"
#include "wire/items.h"

#include <cstdint>
#include <span>
#include <vector>

namespace shapetrace::analyzer {

struct AnalyzerOptions {
  uint32_t timeline_bins = 1024;
  double outlier_sigma = 2.0;        // 001's rule: more than 2 standard deviations above the mean
  uint64_t outlier_min_samples = 10; // calls seen before a mean and deviation are trusted
  size_t max_outliers = 1000;        // the most extreme kept (per thread, then overall)
  size_t max_dag_nodes = size_t{1} << 22; // per thread; beyond it the DAG stops growing (counted)
};

// One call judged against the running statistics at the moment it finished.
struct Outlier {
  uint64_t start_ns = 0;
  uint64_t duration_ns = 0;
  uint32_t function = 0; // process function id here, analysis function index after merging
  ShapeId shape = kNullShape;
  bool function_outlier = false; // slower than its function's mean + sigma * sd
  bool shape_outlier = false;    // slower than its shape's: same work, done slower
  double function_mean = 0, function_sd = 0;
  uint64_t function_count = 0;
  double shape_mean = 0, shape_sd = 0;
  uint64_t shape_count = 0;
  double score = 0; // largest (duration - mean) / sd over the rules that fired
  // Filled in by the merge: which thread it happened on.
  uint64_t process = 0;
  uint32_t thread = 0;
};
// Total order used to keep the top outliers: larger score first, then earlier, then by thread.
bool outlierBefore(const Outlier& a, const Outlier& b);

// count, sum and sum of squares of durations per DAG node (Reiss & Renieris), exact integers.
struct DagStats {
  uint64_t count = 0;
  unsigned __int128 sum = 0;
  unsigned __int128 sum_squares = 0;
};

struct FunctionState {
  DurationStats stats;
  uint64_t outliers = 0;
  uint64_t calls = 0; // measured and unmeasured
};

struct ShapeState {
  DurationStats stats;
  uint64_t outliers = 0;
  uint64_t calls = 0;
};

class ThreadAnalyzer {
public:
  static constexpr uint32_t kMaxFunctionId = uint32_t{1} << 24;
  static constexpr size_t kMaxStackDepth = 65536;

  explicit ThreadAnalyzer(const AnalyzerOptions& options = {});

  // A batch of this thread's events with its sequence number (wire::kNoSequence when unknown).
  void onBatch(uint64_t sequence, std::span<const Event> events);
  void onEvents(std::span<const Event> events);
  // A gap marker: the runtime dropped `dropped` events of this thread here.
  void onGapMarker(uint64_t dropped);
  // Events were lost here (a gap marker, a missing batch, a limit hit): the stack is discarded.
  void onGap(uint64_t dropped);
  // The thread ended or the input stopped: open calls are dropped and counted.
  void onEnd();

  const ShapeTable& shapes() const { return shapes_; }
  const ShapeTable& dag() const { return dag_; }
  const std::vector<ShapeState>& shapeStates() const { return shape_states_; }
  const std::vector<DagStats>& dagStats() const { return dag_stats_; }
  // Per process function id (index), only for ids seen; calls == 0 means never seen.
  std::vector<FunctionState> functionStates() const;
  const Diagnostics& diagnostics() const { return diagnostics_; }
  const OccurrenceTimeline& timeline() const { return timeline_; }
  // The kept outliers, most extreme first.
  std::vector<Outlier> outliers() const;
  uint64_t events() const { return events_; }
  uint64_t calls() const { return calls_; }
  size_t openCalls() const { return stack_.size(); }

private:
  // Built in place on the stack and read field by field: copying a frame whole right after its
  // fields were written (a leaf's enter, then its exit) stalls on store-to-load forwarding.
  struct Frame {
    Frame(uint32_t function, uint64_t enter_ns, size_t shape_children_begin,
          size_t dag_children_begin)
        : function(function), enter_ns(enter_ns), shape_children_begin(shape_children_begin),
          dag_children_begin(dag_children_begin), dag_hash(function) {}

    uint32_t function;
    uint64_t enter_ns;
    size_t shape_children_begin;
    size_t dag_children_begin;
    size_t compact_at = 64; // shape child list size at which repeats are squeezed out
    bool dag_unknown = false; // a child's DAG node could not be interned, so neither can this one
    ShapeTable::Hash dag_hash; // Merkle hash of the DAG children so far (of their hashes)
  };
  // What changes on every call of a function. Its duration histogram is not kept here: a shape
  // has one base function, so the function's histogram is the sum of its shapes' (built when
  // asked for), which saves a histogram update per call.
  struct FunctionRunning {
    Moments moments;
    uint64_t outliers = 0;
    uint64_t calls = 0;
  };

  void enter(uint32_t function, uint64_t time_ns);
  void leave(uint32_t function, uint64_t time_ns);
  void finishTop(uint64_t time_ns, bool measured);
  void discardStack(Stat reason);
  void judge(const Frame& frame, ShapeId shape, uint64_t duration_ns);
  void keepOutlier(const Outlier& outlier);
  ShapeId internDagNode(const Frame& frame, const ShapeTable::Key& key);
  void appendChild(ShapeId shape, ShapeId dag_node, uint64_t dag_hash);

  AnalyzerOptions options_;
  std::vector<Frame> stack_;
  std::vector<ShapeId> shape_children_; // the open frames' child shapes, frame after frame
  std::vector<ShapeId> dag_children_;   // the open frames' child DAG nodes, frame after frame
  ShapeTable shapes_;
  ShapeTable dag_;
  bool dag_full_ = false;
  std::vector<ShapeState> shape_states_;
  std::vector<DagStats> dag_stats_;
  std::vector<FunctionRunning> functions_;
  Diagnostics diagnostics_;
  OccurrenceTimeline timeline_;
  std::vector<Outlier> outlier_heap_; // min-heap under outlierBefore: the least extreme on top
  uint64_t events_ = 0;
  uint64_t calls_ = 0;
  uint64_t last_ns_ = 0;
  uint64_t last_sequence_ = UINT64_MAX;
  uint64_t orphan_exit_budget_ = 0; // exits expected to be unmatched after a gap
};

} // namespace shapetrace::analyzer
