// One thread's analysis, fed its events in order: call-stack reconstruction with resynchronisation,
// Function Call Instances finished on exit, their interned shapes and exact-sequence DAG nodes,
// running statistics per function and shape, online outliers and the occurrence timeline.
//
// A ThreadAnalyzer is owned by one worker at a time and never shares state with another thread's
// analyzer; the results of several are combined by analysis.h in a fixed order. Function ids here
// are the process's own (as the events carry them); merging maps them to the analysis' functions.
//
// Most calls are leaves, whose shape and DAG node are found by their function alone; when a leaf's
// exit comes right after its enter (in the same span of events) the call is finished from the
// pair without a frame on the stack.
//
// A call with children is queued, with its DAG node still to intern: the DAG outgrows the caches,
// and interning a few hundred nodes in a row, each one's slot and record prefetched several nodes
// ahead, overlaps their cache misses instead of waiting for each. A parent can queue before its
// children are interned because a node's hash is a Merkle hash of its children's; its child list
// refers to queued children by their place in the queue. The call's shape follows from its DAG
// node (the set of its children's shapes), so each DAG node keeps its shape, computed once when
// the node is new: a call whose node exists already (most of them) finds its shape with it, and
// no call keeps a list of child shapes. Its statistics, outlier judgement and timeline cell wait
// in the queue too. The queue is accounted in the order the calls finished, and before a leaf
// call of a function with queued calls or a function's first leaf call, so node ids, shape ids
// and every function's and shape's sequence of calls are exactly what handling each call as it
// finished would give. The queue is empty whenever a method returns.
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

#include <array>
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
// A thread's calls of one node never overlap (a node is never its own descendant), so their
// durations add up to less than the thread's time span and 64 bits hold the sum: 32 bytes a node.
struct DagStats {
  uint64_t count = 0;
  uint64_t sum = 0;
  unsigned __int128 sum_squares = 0;
};
// The same summed over threads, whose calls do overlap.
struct DagTotals {
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
  const GrowableArray<DagStats>& dagStats() const { return dag_stats_; }
  // Per process function id (index), only for ids seen; calls == 0 means never seen.
  std::vector<FunctionState> functionStates() const;
  const Diagnostics& diagnostics() const { return diagnostics_; }
  const OccurrenceTimeline& timeline() const { return timeline_; }
  // The kept outliers, most extreme first.
  std::vector<Outlier> outliers() const;
  uint64_t events() const { return events_; }
  uint64_t calls() const; // finished, the sum over shapes
  size_t openCalls() const { return stack_.size(); }

private:
  // Built in place on the stack and read field by field: copying a frame whole right after its
  // fields were written (a leaf's enter, then its exit) stalls on store-to-load forwarding.
  struct Frame {
    Frame(uint32_t function, uint64_t enter_ns, size_t dag_children_begin)
        : function(function), enter_ns(enter_ns), dag_children_begin(dag_children_begin),
          dag_hash(function) {}

    uint32_t function;
    uint64_t enter_ns;
    size_t dag_children_begin;
    ShapeTable::Hash dag_hash; // Merkle hash of the DAG children so far (of their hashes)
  };
  // A finished call with children, waiting in the queue.
  struct QueuedDagNode {
    uint64_t hash;
    uint64_t enter_ns;
    uint64_t exit_ns;
    uint32_t function;
    uint32_t children_begin; // in dag_queue_children_
    uint32_t child_count;
    bool measured;
  };
  struct LeafIds {
    ShapeId shape = kNullShape; // kNullShape: not interned yet
    ShapeId dag_node = kNullShape; // or kShapeOnly | shape when the DAG was full
    uint64_t dag_hash = 0;
  };
  // What changes on every call of a function. Its call count and duration histogram are not kept
  // here: a shape has one base function, so they are the sums of its shapes' (built when asked
  // for), which saves two updates per call.
  struct FunctionRunning {
    Moments moments; // kept only once the function had calls of two shapes (functionMoments())
    uint64_t outliers = 0;
    ShapeId sole_shape = kNullShape; // of all its measured calls so far, or kManyShapes
    uint64_t queued_in = 0; // the queue generation its last call with children was queued in
  };
  static constexpr ShapeId kManyShapes = UINT32_MAX;
  struct DagUpdate {
    ShapeId node = kNullShape;
    uint64_t duration_ns = 0;
  };

  // A DAG child whose node is still queued is referred to by its place in the queue, and one
  // whose node could not be interned (the DAG was full) by its shape. DAG node ids stay below
  // both flags (kMaxDagNodes); shape ids would need 2^30 distinct shapes, tens of GiB, to reach
  // them.
  static constexpr ShapeId kQueuedCall = ShapeId{1} << 31;
  static constexpr ShapeId kShapeOnly = ShapeId{1} << 30;
  static constexpr size_t kMaxDagNodes = kShapeOnly - 1;
  // Nodes interned in one go, and how far ahead their memory is loaded (far: the hash slot; near:
  // the record it points to, once the slot has arrived).
  static constexpr size_t kDagQueueLength = 256;
  static constexpr size_t kPrefetchFar = 16, kPrefetchNear = 8;
  // DAG statistics updates wait this many nodes, their line loading meanwhile.
  static constexpr size_t kDagUpdateDelay = 8;

  void enter(uint32_t function, uint64_t time_ns);
  void leave(uint32_t function, uint64_t time_ns);
  void finishTop(uint64_t time_ns, bool measured);
  void finishLeaf(uint32_t function, uint64_t enter_ns, uint64_t exit_ns, bool measured);
  void account(uint32_t function, ShapeId shape, uint64_t enter_ns, uint64_t exit_ns,
               bool measured);
  const LeafIds& leafIds(uint32_t function);
  const LeafIds& internLeaf(uint32_t function);
  void appendChild(ShapeId dag_node, uint64_t dag_hash);
  void popDagChildren(size_t size);
  const Moments& functionMoments(FunctionRunning& function, ShapeId shape);
  const Moments& functionMoments(uint32_t function) const;
  void judge(const Moments& by_function, const Moments& by_shape, uint32_t function, ShapeId shape,
             uint64_t enter_ns, uint64_t duration_ns);
  void reportOutlier(const Moments& by_function, const Moments& by_shape, uint32_t function,
                     ShapeId shape, uint64_t enter_ns, uint64_t duration_ns, bool function_outlier,
                     bool shape_outlier);
  void keepOutlier(const Outlier& outlier);

  ShapeId queueDagNode(const Frame& frame, uint64_t dag_hash, uint64_t exit_ns, bool measured);
  void accountDagQueue();
  struct NodeAndShape {
    ShapeId node; // or kShapeOnly | shape
    ShapeId shape;
  };
  NodeAndShape internQueued(const QueuedDagNode& queued);
  ShapeTable::Node internDagNode(const ShapeTable::Key& key);
  ShapeId settleDagNode(const ShapeTable::Node& node, ShapeId shape);
  ShapeId shapeOf(uint32_t function, std::span<const ShapeId> dag_children);
  ShapeId internShape(uint32_t function, std::span<const ShapeId> child_shapes);
  static void addToDagStats(DagStats& stats, uint64_t duration_ns);
  void updateDagStatsLater(ShapeId node, uint64_t duration_ns);
  void applyDagUpdates();

  AnalyzerOptions options_;
  std::vector<Frame> stack_;
  std::vector<ShapeId> dag_children_;   // the open frames' child DAG nodes, frame after frame
  size_t dag_children_settled_ = 0;     // entries below hold no kQueuedCall reference
  std::vector<QueuedDagNode> dag_queue_;
  std::vector<ShapeId> dag_queue_children_;
  std::vector<ShapeId> dag_queue_nodes_; // the id each queued node got
  uint64_t dag_queue_generation_ = 1;     // how many times the queue was accounted, plus one
  std::vector<ShapeId> child_shapes_;     // scratch: a new DAG node's children's shapes
  std::vector<LeafIds> leaf_ids_;        // per function
  std::array<DagUpdate, kDagUpdateDelay> dag_updates_{};
  size_t dag_update_next_ = 0;
  ShapeTable shapes_;
  ShapeTable dag_{ShapeTable::Depth::kNotKept};
  bool dag_full_ = false;
  std::vector<ShapeState> shape_states_;
  GrowableArray<DagStats> dag_stats_; // all-zero bytes: an empty DagStats
  std::vector<FunctionRunning> functions_;
  Diagnostics diagnostics_;
  OccurrenceTimeline timeline_;
  std::vector<Outlier> outlier_heap_; // min-heap under outlierBefore: the least extreme on top
  uint64_t events_ = 0;
  uint64_t last_ns_ = 0;
  uint64_t last_sequence_ = UINT64_MAX;
  uint64_t orphan_exit_budget_ = 0; // exits expected to be unmatched after a gap
};

} // namespace shapetrace::analyzer
