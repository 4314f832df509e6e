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
// Resynchronisation follows the call stream's rules (call_stack.h), implemented here fused with
// the rest; tests/analyzer/call_stack_test.cpp pins that both give the same calls and counts.
// The thread's results are kept in a ThreadResult (thread_result.h), which the merge reads as is.
#pragma once

#include "call_stack.h"
#include "id_table.h"
#include "thread_result.h"
#include "wire/event.h"

#include <array>
#include <cstdint>
#include <span>
#include <vector>

namespace shapetrace::analyzer {

class ThreadAnalyzer {
public:
  explicit ThreadAnalyzer(const ThreadAnalyzerSettings& settings = {});

  // A batch of this thread's events with its sequence number (wire::kNoSequence when unknown).
  // `waits` (in order) are the tracer's waits among the events (wire::EventBatch).
  void onBatch(uint64_t sequence, std::span<const Event> events,
               std::span<const wire::TracerWait> waits = {});
  void onEvents(std::span<const Event> events);
  // The process function id of `main`: outliers that start after this thread's outermost call of
  // it returned are marked at exit (Outlier::at_exit).
  void setMainFunction(uint32_t function) { main_function_ = function; }
  // A gap marker: the runtime dropped `dropped` events of this thread here, after its batch
  // `after_sequence` (wire::Gap), which accounts for the batches up to it.
  void onGapMarker(uint64_t dropped, uint64_t after_sequence = wire::kNoSequence);
  // The runtime made the thread wait here: the open calls are measured without the wait.
  void onTracerWait(uint64_t duration_ns);
  // Events were lost here (a gap marker, a missing batch, a limit hit): the stack is discarded.
  void onGap(uint64_t dropped);
  // The thread ended (having sent `batches` batches, its ThreadEnd's count: a lost tail is
  // counted) or the input stopped (wire::kNoSequence): open calls are dropped and counted.
  void onEnd(uint64_t batches = wire::kNoSequence);

  // The thread's result so far (its summary fields brought up to date); valid until the next
  // event. The merge takes it as it is, without a copy.
  const ThreadResult& result();

  const ShapeTable& shapes() const { return result_.shapes; }
  const ShapeTable& dag() const { return result_.dag; }
  const std::vector<ShapeState>& shapeStates() const { return result_.shape_states; }
  const GrowableArray<DagStats>& dagStats() const { return result_.dag_stats; }
  // Per process function id (index), only for ids seen; calls == 0 means never seen.
  std::map<uint32_t, FunctionState> functionStates() const;
  const Diagnostics& diagnostics() const { return result_.diagnostics; }
  const OccurrenceTimeline& timeline() const { return result_.timeline; }
  // The kept outliers, most extreme first.
  std::vector<Outlier> outliers() const;
  uint64_t events() const { return result_.events; }
  uint64_t calls() const; // finished, the sum over shapes
  size_t openCalls() const { return stack_.size(); }
  // Entries the open calls keep for their children (bounded: call_stack.h kMaxSequencedChildren).
  size_t openChildEntries() const { return dag_children_.size(); }

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
    // Its calls on the stack now, and the time of its measured outermost calls (no call of the
    // same function open below them): a recursive chain is counted once, as flame graphs do.
    uint32_t open = 0;
    uint64_t inclusive_ns = 0;
  };
  // main's id (kNoMainFunction: not known) and when a root-level call of it returned. By time, not
  // by order: calls with children are judged later, from the DAG queue.
  static constexpr uint32_t kNoMainFunction = UINT32_MAX;
  uint32_t main_function_ = kNoMainFunction;
  bool main_returned_ = false;
  uint64_t main_returned_ns_ = 0;
  void noteRootCall(uint32_t function, uint64_t exit_ns) {
    if (function == main_function_ && !main_returned_) [[unlikely]] {
      main_returned_ = true;
      main_returned_ns_ = exit_ns;
    }
  }
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
  void discardFrames();
  void addInclusive(FunctionRunning& running, uint64_t enter_ns, uint64_t exit_ns, bool measured);
  // `from_frame`: the call had a frame (an open call of its function), just popped.
  void finishLeaf(uint32_t function, uint64_t enter_ns, uint64_t exit_ns, bool measured,
                  bool from_frame);
  void account(uint32_t function, ShapeId shape, uint64_t enter_ns, uint64_t exit_ns,
               bool measured);
  const LeafIds& leafIds(uint32_t function);
  const LeafIds& internLeaf(uint32_t function);
  void appendChild(ShapeId dag_node, uint64_t dag_hash);
  void keepChildShapesOnly();
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

  ThreadAnalyzerSettings settings_;
  std::vector<Frame> stack_;
  std::vector<ShapeId> dag_children_;   // the open frames' child DAG nodes, frame after frame
  size_t dag_children_settled_ = 0;     // entries below hold no kQueuedCall reference
  std::vector<QueuedDagNode> dag_queue_;
  std::vector<ShapeId> dag_queue_children_;
  std::vector<ShapeId> dag_queue_nodes_; // the id each queued node got
  uint64_t dag_queue_generation_ = 1;     // how many times the queue was accounted, plus one
  std::vector<ShapeId> child_shapes_;     // scratch: a new DAG node's children's shapes
  IdTable<LeafIds> leaf_ids_;            // per function
  std::array<DagUpdate, kDagUpdateDelay> dag_updates_{};
  size_t dag_update_next_ = 0;
  // The shapes, DAG, statistics, timeline and diagnostics, kept where the merge reads them.
  ThreadResult result_;
  bool dag_full_ = false;
  IdTable<FunctionRunning> functions_;
  std::vector<Outlier> outlier_heap_; // min-heap under outlierBefore: the least extreme on top
  uint64_t last_ns_ = 0;
  BatchSequence sequence_;
  uint64_t orphan_exit_budget_ = 0; // exits expected to be unmatched after a gap
  uint64_t calls_below_max_depth_ = 0; // open calls deeper than settings_.max_depth
};

} // namespace shapetrace::analyzer
