// Per-thread call-stack reconstruction, shape interning, statistics and outliers.
#include "thread_analyzer.h"

#include <algorithm>

namespace shapetrace::analyzer {

double excessNs(const Outlier& outlier) {
  const auto duration = static_cast<double>(outlier.duration_ns);
  double excess = 0;
  if (outlier.function_outlier) excess = duration - outlier.function_mean;
  if (outlier.shape_outlier) excess = std::max(excess, duration - outlier.shape_mean);
  return excess;
}

bool outlierBefore(const Outlier& a, const Outlier& b) {
  if (a.at_exit != b.at_exit) return b.at_exit;
  const double a_excess = excessNs(a), b_excess = excessNs(b);
  if (a_excess != b_excess) return a_excess > b_excess;
  if (a.score != b.score) return a.score > b.score;
  if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
  if (a.process != b.process) return a.process < b.process;
  if (a.thread != b.thread) return a.thread < b.thread;
  if (a.function != b.function) return a.function < b.function;
  if (a.shape != b.shape) return a.shape < b.shape;
  return a.duration_ns < b.duration_ns;
}

ThreadAnalyzer::ThreadAnalyzer(const ThreadAnalyzerSettings& settings)
    : settings_(settings), sequence_(settings.from_start) {
  result_.timeline = OccurrenceTimeline(settings.timeline_bins);
  result_.shape_states.resize(1);
  result_.dag_stats.resize(1);
}

void ThreadAnalyzer::onBatch(uint64_t sequence, std::span<const Event> events,
                             std::span<const wire::TracerWait> waits) {
  const BatchSequence::Arrival arrival = sequence_.arrive(sequence, result_.diagnostics);
  if (arrival == BatchSequence::Arrival::kRepeated) return;
  if (arrival == BatchSequence::Arrival::kAfterMissing) onGap(0);
  forEachStretch(events, waits, [this](std::span<const Event> stretch) { onEvents(stretch); },
                 [this](uint64_t duration_ns) { onTracerWait(duration_ns); });
}

void ThreadAnalyzer::onTracerWait(uint64_t duration_ns) {
  result_.diagnostics.add(Stat::tracer_waits);
  result_.diagnostics.add(Stat::tracer_wait_ns, duration_ns);
  for (Frame& frame : stack_)
    frame.enter_ns += duration_ns;
}

void ThreadAnalyzer::onEvents(std::span<const Event> events) {
  result_.events += events.size();
  if (!events.empty() && !result_.timeline.started())
    result_.timeline.start(std::max(events.front().timestamp, last_ns_));
  const Event* const end = events.data() + events.size();
  for (const Event* next = events.data(); next != end; ++next) {
    const Event& event = *next;
    uint64_t time = event.timestamp;
    if (time < last_ns_) [[unlikely]] {
      result_.diagnostics.add(Stat::timestamp_regressions);
      time = last_ns_;
    }
    last_ns_ = time;
    if (event.function_id >= kMaxFunctionId) [[unlikely]] {
      result_.diagnostics.add(Stat::function_ids_out_of_range);
      onGap(0);
      continue;
    }
    switch (event.kind) {
    case EventKind::Enter:
      // A call without children has its exit right after its enter (most calls do): it is
      // finished here, without a frame. Anything unusual takes the general path.
      if (next + 1 != end && next[1].kind == EventKind::Exit &&
          next[1].function_id == event.function_id && next[1].timestamp >= time &&
          stack_.size() < settings_.max_depth) [[likely]] {
        ++next;
        last_ns_ = next->timestamp;
        finishLeaf(event.function_id, time, last_ns_, true, false);
        break;
      }
      enter(event.function_id, time);
      break;
    case EventKind::UnwindExit:
      result_.diagnostics.add(Stat::unwind_exits);
      leave(event.function_id, time);
      break;
    case EventKind::AbandonedExit:
      result_.diagnostics.add(Stat::abandoned_exits);
      leave(event.function_id, time);
      break;
    case EventKind::Exit: leave(event.function_id, time); break;
    }
  }
  accountDagQueue();
  // Checked once a batch, not per child: a call gains at most a batch of children in between.
  if (dag_children_.size() > kMaxSequencedChildren) [[unlikely]]
    keepChildShapesOnly();
}

void ThreadAnalyzer::enter(uint32_t function, uint64_t time_ns) {
  if (stack_.size() >= settings_.max_depth) [[unlikely]] {
    // Too deep to analyse: counted, and the next exit is taken to be its (see call_stack.h).
    ++calls_below_max_depth_;
    result_.diagnostics.add(Stat::calls_below_max_depth);
    return;
  }
  ++functions_[function].open; // its entry is added on its first call
  stack_.emplace_back(function, time_ns, dag_children_.size());
}

void ThreadAnalyzer::leave(uint32_t function, uint64_t time_ns) {
  if (calls_below_max_depth_ > 0) [[unlikely]] {
    --calls_below_max_depth_;
    return;
  }
  if (!stack_.empty() && stack_.back().function == function) [[likely]] {
    finishTop(time_ns, true);
    return;
  }
  auto match = std::find_if(stack_.rbegin(), stack_.rend(),
                            [function](const Frame& f) { return f.function == function; });
  if (match == stack_.rend()) {
    if (orphan_exit_budget_ > 0) {
      --orphan_exit_budget_;
      result_.diagnostics.add(Stat::exits_after_gap);
    } else {
      result_.diagnostics.add(Stat::unmatched_exits);
    }
    return;
  }
  // The frames above the match were left without their exits (longjmp, lost exit events).
  const auto skipped = static_cast<size_t>(match - stack_.rbegin());
  for (size_t i = 0; i < skipped; ++i) {
    result_.diagnostics.add(Stat::frames_closed_by_outer_exit);
    finishTop(time_ns, false);
  }
  finishTop(time_ns, true);
}

void ThreadAnalyzer::onGapMarker(uint64_t dropped, uint64_t after_sequence) {
  sequence_.gapAfter(after_sequence);
  result_.diagnostics.add(Stat::gap_markers);
  result_.diagnostics.add(Stat::events_dropped, dropped);
  onGap(dropped);
}

void ThreadAnalyzer::onGap(uint64_t dropped) {
  result_.diagnostics.add(Stat::frames_discarded_at_gap, stack_.size());
  // Every frame open now may see its exit after the gap; dropped events may hide more.
  orphan_exit_budget_ += stack_.size() + calls_below_max_depth_ + dropped;
  calls_below_max_depth_ = 0;
  discardFrames();
  popDagChildren(0);
}

void ThreadAnalyzer::onEnd(uint64_t batches) {
  sequence_.end(batches, result_.diagnostics);
  result_.diagnostics.add(Stat::frames_open_at_thread_end, stack_.size());
  discardFrames();
  popDagChildren(0);
  orphan_exit_budget_ = 0;
  calls_below_max_depth_ = 0;
}

// Frames that will never see their exits: no longer open calls of their functions.
void ThreadAnalyzer::discardFrames() {
  for (const Frame& frame : stack_)
    --functions_[frame.function].open;
  stack_.clear();
}

void ThreadAnalyzer::finishTop(uint64_t time_ns, bool measured) {
  Frame& frame = stack_.back();
  const uint32_t function = frame.function;
  if (dag_children_.size() == frame.dag_children_begin) {
    const uint64_t enter_ns = frame.enter_ns;
    stack_.pop_back();
    finishLeaf(function, enter_ns, time_ns, measured, true);
    return;
  }
  // The rest waits in the queue: see accountDagQueue().
  const uint64_t dag_hash = frame.dag_hash.value(dag_children_.size() - frame.dag_children_begin);
  const ShapeId dag_node = queueDagNode(frame, dag_hash, time_ns, measured);
  FunctionRunning& running = functions_[function];
  running.queued_in = dag_queue_generation_;
  --running.open;
  addInclusive(running, frame.enter_ns, time_ns, measured);
  stack_.pop_back(); // `frame` is gone from here on
  if (!stack_.empty())
    appendChild(dag_node, dag_hash);
  else
    noteRootCall(function, time_ns);
  if (dag_queue_.size() >= kDagQueueLength) accountDagQueue();
}

// A call without children: its shape and DAG node depend on the function alone.
[[gnu::always_inline]] inline void ThreadAnalyzer::finishLeaf(uint32_t function,
                                                              uint64_t enter_ns, uint64_t exit_ns,
                                                              bool measured,
                                                              bool from_frame) {
  const LeafIds& ids = leafIds(function);
  FunctionRunning& running = functions_[function];
  if (from_frame) --running.open; // its frame was popped: no longer open
  addInclusive(running, enter_ns, exit_ns, measured);
  // A function's calls are accounted in the order they finished: its queued calls first.
  if (running.queued_in == dag_queue_generation_) [[unlikely]]
    accountDagQueue();
  account(function, ids.shape, enter_ns, exit_ns, measured);
  if (ids.dag_node & kShapeOnly)
    result_.diagnostics.add(Stat::dag_calls_not_interned);
  else if (measured)
    addToDagStats(result_.dag_stats[ids.dag_node], exit_ns - enter_ns);
  if (!stack_.empty())
    appendChild(ids.dag_node, ids.dag_hash);
  else
    noteRootCall(function, exit_ns);
}

// A finished call's time, when no call of its function is open below it (see FunctionRunning).
[[gnu::always_inline]] inline void ThreadAnalyzer::addInclusive(FunctionRunning& running,
                                                                uint64_t enter_ns,
                                                                uint64_t exit_ns, bool measured) {
  if (running.open == 0 && measured) running.inclusive_ns += exit_ns - enter_ns;
}

// The statistics, outlier judgement and timeline of a finished call whose shape is known.
[[gnu::always_inline]] inline void ThreadAnalyzer::account(uint32_t function, ShapeId shape,
                                                           uint64_t enter_ns, uint64_t exit_ns,
                                                           bool measured) {
  ShapeState& shape_state = result_.shape_states[shape];
  ++shape_state.calls;
  if (measured) {
    const uint64_t duration = exit_ns - enter_ns;
    FunctionRunning& function_state = functions_[function];
    const Moments& by_function = functionMoments(function_state, shape);
    judge(by_function, shape_state.stats.moments, function, shape, enter_ns, duration);
    if (&by_function != &shape_state.stats.moments) function_state.moments.add(duration);
    shape_state.stats.add(duration);
  }
  result_.timeline.record(shape, enter_ns, exit_ns);
}

// The shape and DAG node of a call of `function` without children, interned on its first call.
[[gnu::always_inline]] inline const ThreadAnalyzer::LeafIds&
ThreadAnalyzer::leafIds(uint32_t function) {
  if (const LeafIds* ids = leaf_ids_.find(function); ids != nullptr) [[likely]]
    return *ids;
  return internLeaf(function);
}

const ThreadAnalyzer::LeafIds& ThreadAnalyzer::internLeaf(uint32_t function) {
  // A function whose first call was a leaf was never entered through enter().
  functions_[function];
  // Shape and DAG ids follow the order calls finish in: the queued calls, which finished earlier,
  // first.
  accountDagQueue();
  LeafIds ids;
  ids.shape = internShape(function, {});
  const ShapeTable::Key key = ShapeTable::keyOf(function, {}, ShapeTable::Hash(function));
  ids.dag_hash = key.hash;
  ids.dag_node = settleDagNode(internDagNode(key), ids.shape);
  return leaf_ids_[function] = ids;
}

[[gnu::always_inline]] inline void ThreadAnalyzer::appendChild(ShapeId dag_node,
                                                               uint64_t dag_hash) {
  dag_children_.push_back(dag_node);
  stack_.back().dag_hash.add(dag_hash);
}

// Every open call with more children than kMaxSequencedChildren (call_stack.h) keeps the set of
// their shapes, as shape-only children: it gets no DAG node (counted in dag_calls_not_interned
// when it finishes), nor do its callers; its shape is unchanged. The queue is accounted first, so
// no child refers to a queued call; the frames above a collapsed one move down with their children.
void ThreadAnalyzer::keepChildShapesOnly() {
  bool any = false;
  for (size_t f = 0; f < stack_.size(); ++f) {
    const size_t end = f + 1 < stack_.size() ? stack_[f + 1].dag_children_begin : dag_children_.size();
    any = any || end - stack_[f].dag_children_begin > kMaxSequencedChildren;
  }
  if (!any) return;
  accountDagQueue();
  for (size_t f = 0; f < stack_.size(); ++f) {
    const auto begin = dag_children_.begin() + static_cast<ptrdiff_t>(stack_[f].dag_children_begin);
    const auto end = f + 1 < stack_.size()
                         ? dag_children_.begin() + static_cast<ptrdiff_t>(stack_[f + 1].dag_children_begin)
                         : dag_children_.end();
    if (static_cast<size_t>(end - begin) <= kMaxSequencedChildren) continue;
    for (auto child = begin; child != end; ++child)
      *child = kShapeOnly | (*child & kShapeOnly ? *child & ~kShapeOnly : result_.dag.payload(*child));
    const auto kept =
        begin + static_cast<ptrdiff_t>(sortDistinct(std::span(begin, end)));
    const auto removed = static_cast<size_t>(end - kept);
    dag_children_.erase(kept, end);
    for (size_t above = f + 1; above < stack_.size(); ++above)
      stack_[above].dag_children_begin -= removed;
  }
  dag_children_settled_ = dag_children_.size();
}

// Shrinks the open frames' DAG children to `size`, remembering how much of them is known to hold
// node ids only: accounting the queue then looks at what was added since, not at all of it (a
// long-lived frame's children grow with its calls).
void ThreadAnalyzer::popDagChildren(size_t size) {
  dag_children_.resize(size);
  dag_children_settled_ = std::min(dag_children_settled_, size);
}

// Queues the DAG node of the call on top of the stack (it has children), and returns how its
// parent refers to it until the queue is accounted.
ShapeId ThreadAnalyzer::queueDagNode(const Frame& frame, uint64_t dag_hash, uint64_t exit_ns,
                                     bool measured) {
  dag_queue_.push_back(QueuedDagNode{dag_hash, frame.enter_ns, exit_ns, frame.function,
                                     static_cast<uint32_t>(dag_queue_children_.size()),
                                     static_cast<uint32_t>(dag_children_.size() -
                                                           frame.dag_children_begin),
                                     measured});
  dag_queue_children_.insert(dag_queue_children_.end(),
                             dag_children_.begin() + frame.dag_children_begin, dag_children_.end());
  popDagChildren(frame.dag_children_begin);
  return kQueuedCall | static_cast<ShapeId>(dag_queue_.size() - 1);
}

// Interns the queued DAG nodes in the order their calls finished, each node's slot and record
// loading a few nodes ahead, and accounts each call with the shape its node gives; then gives the
// open frames that refer to them their ids.
void ThreadAnalyzer::accountDagQueue() {
  const size_t count = dag_queue_.size();
  if (count == 0) return;
  dag_queue_nodes_.resize(count);
  for (size_t i = 0; i < count; ++i) {
    if (i + kPrefetchFar < count) result_.dag.prefetch(dag_queue_[i + kPrefetchFar].hash);
    if (i + kPrefetchNear < count) result_.dag.prefetchRecord(dag_queue_[i + kPrefetchNear].hash);
    const QueuedDagNode& queued = dag_queue_[i];
    const NodeAndShape interned = internQueued(queued);
    dag_queue_nodes_[i] = interned.node;
    account(queued.function, interned.shape, queued.enter_ns, queued.exit_ns, queued.measured);
    if (interned.node & kShapeOnly)
      result_.diagnostics.add(Stat::dag_calls_not_interned);
    else if (queued.measured)
      updateDagStatsLater(interned.node, queued.exit_ns - queued.enter_ns);
  }
  applyDagUpdates();
  for (size_t i = dag_children_settled_; i < dag_children_.size(); ++i)
    if (dag_children_[i] & kQueuedCall)
      dag_children_[i] = dag_queue_nodes_[dag_children_[i] & ~kQueuedCall];
  dag_children_settled_ = dag_children_.size();
  dag_queue_.clear();
  dag_queue_children_.clear();
  ++dag_queue_generation_;
}

// A queued call's DAG node and shape: the node found, or interned with its shape worked out from
// its children's; kShapeOnly | shape when it cannot be interned (a child could not be, or the DAG
// is full and this node is new). Its children were accounted before it.
ThreadAnalyzer::NodeAndShape ThreadAnalyzer::internQueued(const QueuedDagNode& queued) {
  const std::span<ShapeId> children(dag_queue_children_.data() + queued.children_begin,
                                    queued.child_count);
  bool children_interned = true;
  for (ShapeId& child : children) {
    if (child & kQueuedCall) child = dag_queue_nodes_[child & ~kQueuedCall];
    if (child & kShapeOnly) children_interned = false;
  }
  ShapeTable::Node node;
  if (children_interned)
    node = internDagNode(ShapeTable::Key{queued.function, children, queued.hash});
  if (node.id != kNullShape && !node.added) return {node.id, *node.payload};
  const ShapeId shape = shapeOf(queued.function, children); // adds no DAG node
  return {settleDagNode(node, shape), shape};
}

// How a call refers to its DAG node once interned: the node, which learns its shape and gets
// statistics when new (every node has some), or kShapeOnly | shape when it could not be interned.
ShapeId ThreadAnalyzer::settleDagNode(const ShapeTable::Node& node, ShapeId shape) {
  if (node.id == kNullShape) return kShapeOnly | shape;
  if (node.added) {
    *node.payload = shape;
    if (node.id >= result_.dag_stats.size()) result_.dag_stats.resize(node.id + 1);
  }
  return node.id;
}

// Def. 5.2: the shape of a call of `function` is it and the set of its children's shapes.
ShapeId ThreadAnalyzer::shapeOf(uint32_t function, std::span<const ShapeId> dag_children) {
  child_shapes_.clear();
  for (const ShapeId child : dag_children) {
    const ShapeId shape = child & kShapeOnly ? child & ~kShapeOnly : result_.dag.payload(child);
    // Loops repeat a child: leave out repeats in a row before sorting.
    if (child_shapes_.empty() || child_shapes_.back() != shape) child_shapes_.push_back(shape);
  }
  const size_t distinct = canonicalizeChildSet(child_shapes_);
  return internShape(function, std::span(child_shapes_).first(distinct));
}

// A shape's id, with room for its statistics.
ShapeId ThreadAnalyzer::internShape(uint32_t function, std::span<const ShapeId> child_shapes) {
  const ShapeId shape = result_.shapes.intern(function, child_shapes);
  if (shape >= result_.shape_states.size()) result_.shape_states.resize(shape + 1);
  return shape;
}

ShapeTable::Node ThreadAnalyzer::internDagNode(const ShapeTable::Key& key) {
  if (dag_full_) return result_.dag.findNode(key);
  const ShapeTable::Node node = result_.dag.internNode(key);
  dag_full_ = result_.dag.size() > std::min(settings_.max_dag_nodes, kMaxDagNodes);
  return node;
}

void ThreadAnalyzer::addToDagStats(DagStats& stats, uint64_t duration_ns) {
  ++stats.count;
  stats.sum += duration_ns;
  stats.sum_squares += static_cast<unsigned __int128>(duration_ns) * duration_ns;
}

// The DAG's statistics outgrow the caches too: an update is applied a few nodes later, its line
// loading meanwhile (sums do not depend on the order).
void ThreadAnalyzer::updateDagStatsLater(ShapeId node, uint64_t duration_ns) {
  __builtin_prefetch(&result_.dag_stats[node], 1);
  DagUpdate& slot = dag_updates_[dag_update_next_++ % kDagUpdateDelay];
  if (slot.node != kNullShape) addToDagStats(result_.dag_stats[slot.node], slot.duration_ns);
  slot = {node, duration_ns};
}

void ThreadAnalyzer::applyDagUpdates() {
  for (DagUpdate& update : dag_updates_) {
    if (update.node != kNullShape) addToDagStats(result_.dag_stats[update.node], update.duration_ns);
    update = {};
  }
}

// The moments of a function's measured calls, about to take one of `shape`. While they all had
// one shape, they are that shape's moments (the same durations added in the same order), so only
// the shape's are kept: most functions, leaves above all, only ever have one shape. A second shape
// gives the function moments of its own, starting as a copy of the first shape's.
const Moments& ThreadAnalyzer::functionMoments(FunctionRunning& function, ShapeId shape) {
  if (function.sole_shape == shape) [[likely]]
    return result_.shape_states[shape].stats.moments;
  if (function.sole_shape == kNullShape) {
    function.sole_shape = shape; // its first measured call
    return result_.shape_states[shape].stats.moments;
  }
  if (function.sole_shape != kManyShapes) {
    function.moments = result_.shape_states[function.sole_shape].stats.moments;
    function.sole_shape = kManyShapes;
  }
  return function.moments;
}

const Moments& ThreadAnalyzer::functionMoments(uint32_t function) const {
  const FunctionRunning& running = *functions_.find(function);
  if (running.sole_shape == kNullShape || running.sole_shape == kManyShapes) return running.moments;
  return result_.shape_states[running.sole_shape].stats.moments;
}

// 001's rule against the function's moments, and against the shape's. Inline: it runs on every
// measured call, and the call is almost never an outlier.
[[gnu::always_inline]] inline void ThreadAnalyzer::judge(const Moments& by_function,
                                                         const Moments& by_shape, uint32_t function,
                                                         ShapeId shape, uint64_t enter_ns,
                                                         uint64_t duration_ns) {
  const auto x = toDouble(duration_ns);
  // x > mean + sigma * sd, without a square root on the common path (x at or below the mean).
  const double sigma2 = settings_.outlier_sigma * settings_.outlier_sigma;
  auto fires = [&](const Moments& m) {
    if (m.count() < settings_.outlier_min_samples || x <= m.mean()) return false;
    // excess^2 > sigma^2 * M2 / n, multiplied out to keep a division off the path.
    const double excess = x - m.mean();
    const double m2 = m.m2();
    return m2 > 0 && excess * excess * toDouble(m.count()) > sigma2 * m2;
  };
  const bool function_outlier = fires(by_function);
  const bool shape_outlier = &by_shape == &by_function ? function_outlier : fires(by_shape);
  if (function_outlier || shape_outlier) [[unlikely]]
    reportOutlier(by_function, by_shape, function, shape, enter_ns, duration_ns, function_outlier,
                  shape_outlier);
}

void ThreadAnalyzer::reportOutlier(const Moments& by_function, const Moments& by_shape,
                                   uint32_t function, ShapeId shape, uint64_t enter_ns,
                                   uint64_t duration_ns, bool function_outlier,
                                   bool shape_outlier) {
  const auto x = toDouble(duration_ns);
  Outlier outlier;
  outlier.start_ns = enter_ns;
  outlier.duration_ns = duration_ns;
  outlier.function = function;
  outlier.shape = shape;
  outlier.function_outlier = function_outlier;
  outlier.shape_outlier = shape_outlier;
  outlier.function_mean = by_function.mean();
  outlier.function_sd = by_function.stddev();
  outlier.function_count = by_function.count();
  outlier.shape_mean = by_shape.mean();
  outlier.shape_sd = by_shape.stddev();
  outlier.shape_count = by_shape.count();
  outlier.at_exit = main_returned_ && enter_ns >= main_returned_ns_;
  ++result_.outliers_found;
  if (function_outlier) {
    ++functions_[function].outliers;
    outlier.score = (x - outlier.function_mean) / outlier.function_sd;
  }
  if (shape_outlier) {
    ++result_.shape_states[shape].outliers;
    outlier.score = std::max(outlier.score, (x - outlier.shape_mean) / outlier.shape_sd);
  }
  keepOutlier(outlier);
}

void ThreadAnalyzer::keepOutlier(const Outlier& outlier) {
  if (settings_.max_outliers == 0) return;
  if (outlier_heap_.size() < settings_.max_outliers) {
    outlier_heap_.push_back(outlier);
    std::push_heap(outlier_heap_.begin(), outlier_heap_.end(), outlierBefore);
    return;
  }
  // The heap's top is its least extreme member; replace it if this one is more extreme.
  if (!outlierBefore(outlier, outlier_heap_.front())) return;
  std::pop_heap(outlier_heap_.begin(), outlier_heap_.end(), outlierBefore);
  outlier_heap_.back() = outlier;
  std::push_heap(outlier_heap_.begin(), outlier_heap_.end(), outlierBefore);
}

uint64_t ThreadAnalyzer::calls() const {
  uint64_t calls = 0;
  for (const ShapeState& state : result_.shape_states)
    calls += state.calls;
  return calls;
}

std::map<uint32_t, FunctionState> ThreadAnalyzer::functionStates() const {
  std::map<uint32_t, FunctionState> states;
  functions_.forEach([&](uint32_t function, const FunctionRunning& running) {
    FunctionState& state = states[function];
    state.stats.moments = functionMoments(function);
    state.outliers = running.outliers;
    state.inclusive_ns = running.inclusive_ns;
    state.busiest_thread_ns = running.inclusive_ns;
    state.threads = 1;
  });
  // A shape has one base function, so the function's calls and histogram are its shapes' summed.
  for (ShapeId shape = 1; shape < result_.shape_states.size(); ++shape) {
    FunctionState& state = states[result_.shapes.function(shape)];
    state.calls += result_.shape_states[shape].calls;
    state.stats.histogram.merge(result_.shape_states[shape].stats.histogram);
  }
  return states;
}

const ThreadResult& ThreadAnalyzer::result() {
  result_.functions = functionStates();
  result_.outliers = outliers();
  result_.calls = calls();
  result_.open_calls = stack_.size();
  return result_;
}

std::vector<Outlier> ThreadAnalyzer::outliers() const {
  std::vector<Outlier> sorted = outlier_heap_;
  std::sort(sorted.begin(), sorted.end(), outlierBefore);
  return sorted;
}

} // namespace shapetrace::analyzer
