// The call stream: one thread's events turned into enters and finished calls, with the documented
// resynchronisation rules, for any consumer that wants calls rather than events.
//
// ThreadAnalyzer has its own fused copy of this reconstruction (it finishes most calls without a
// frame and interns DAG nodes in batches); tests/analyzer/call_stack_test.cpp pins that both give
// the same calls, shapes and counts on every rule below. Everything else that rebuilds call stacks
// (extensions, the report's instance reader) uses this one.
//
// Rules (each case is counted in diagnostics(), under the names of stats.inc):
// - the exit of the call on top of the stack finishes it (an unwind exit or an abandoned exit too,
//   each counted apart);
// - the exit of a function deeper in the stack (a longjmp-like escape, lost exits): the calls above
//   it finish at that time too, unmeasured (their duration is only an upper bound), then it does;
// - the exit of a function not on the stack is ignored; after a gap, up to as many such exits as
//   calls were open (plus the dropped events) are expected and counted apart;
// - an event whose timestamp goes back is clamped to the previous one;
// - a function id at or above kMaxFunctionId is a gap;
// - a call nested deeper than the maximum depth (1024 by default, as uftrace's) is not analysed:
//   counted, and the next exits are taken to be those of such calls until they are all closed (a
//   longjmp out of that depth is then misread until the next gap); the call at the limit gets its
//   own exit and its full duration, and a shape without the calls below it;
// - a gap (a gap marker, a batch missing by its sequence number): the open calls' content is
//   incomplete, so they are discarded without a finished call (the sink's onReset());
// - the end of the thread or the input: the open calls are discarded the same way.
//
// A Sink is any type with
//   void onEnter(uint32_t function, uint32_t depth, uint64_t time_ns);
//   void onCall(const FinishedCall& call);  // in finish order, children before their parent
//   void onReset();                         // every open call was discarded
// and optionally
//   void onLeaf(const FinishedCall& call);  // a call without children: onEnter and onCall at once
//   void onValues(const wire::CallValues& values); // the recorded arguments or return value of
//                                                  // the innermost open call (onBatch's values)
// Optionally the stack works out each finished call's shape (Def. 5.2: its function and the set
// of its children's shapes) in a ShapeTable (ShapeLookup).
#pragma once

#include "diagnostics.h"
#include "shape_table.h"
#include "wire/event.h"
#include "wire/items.h"
#include "wire/sequence_runs.h"

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

namespace shapetrace::analyzer {

// Limits shared by every reconstruction of the call stack.
inline constexpr uint32_t kMaxFunctionId = uint32_t{1} << 24;
inline constexpr uint32_t kDefaultMaxDepth = 1024; // ThreadAnalyzerSettings::max_depth
inline constexpr uint32_t kMaxStackDepth = 65536;  // the largest max_depth allowed
inline constexpr uint32_t kNoCaller = UINT32_MAX;
// A call with more direct children than this keeps their shapes as a set (what its shape is made
// of) instead of one entry per child, and, in ThreadAnalyzer, gets no DAG node (its exact sequence
// would be as long as the calls it made): a frame that never ends, such as a thread's loop, would
// otherwise hold one entry per call of its thread, memory that grows with the events.
inline constexpr size_t kMaxSequencedChildren = size_t{1} << 16;

struct FinishedCall {
  uint32_t function = 0; // as the events carry it (the process's id)
  uint32_t caller = kNoCaller; // the enclosing open call's function, kNoCaller at the root
  uint32_t depth = 0;          // calls open below it
  uint64_t enter_ns = 0;
  uint64_t exit_ns = 0;
  bool measured = true; // false: closed by an outer call's exit, its duration an upper bound
  ShapeId shape = kNullShape; // when the stack looks shapes up (ShapeLookup); else kNullShape
  friend bool operator==(const FinishedCall&, const FinishedCall&) = default;
};

// A batch's events in the stretches between its tracer waits (wire::TracerWait): `events` for
// each stretch, then `wait` with each wait's length, in order. Most batches have no wait: one
// stretch.
template <typename OnEvents, typename OnWait>
void forEachStretch(std::span<const Event> events, std::span<const wire::TracerWait> waits,
                    OnEvents&& on_events, OnWait&& on_wait) {
  size_t done = 0;
  for (const wire::TracerWait& wait : waits) {
    const size_t at = std::clamp<size_t>(wait.before_event, done, events.size());
    on_events(events.subspan(done, at - done));
    done = at;
    on_wait(wait.duration_ns);
  }
  on_events(events.subspan(done));
}

// Batch sequence numbers of one thread: missing, repeated and out-of-order batches, counted.
class BatchSequence {
public:
  enum class Arrival : uint8_t {
    kNext,          // analyse it
    kAfterMissing,  // analyse it after a gap: batches are missing before it
    kRepeated,      // skip it: a batch of this sequence number was received already
  };
  // `from_start`: the input holds the thread from its first batch (a recording), so batches
  // missing before the first one received are lost too. A live input may start anywhere.
  explicit BatchSequence(bool from_start = false) : known_(from_start) {}

  Arrival arrive(uint64_t sequence, Diagnostics& diagnostics) {
    if (sequence == wire::kNoSequence) return Arrival::kNext;
    if (!received_.insert(sequence)) {
      diagnostics.add(Stat::duplicate_batches);
      return Arrival::kRepeated;
    }
    Arrival arrival = Arrival::kNext;
    if (known_) {
      if (sequence < next_) {
        diagnostics.add(Stat::batch_sequence_regressions);
      } else if (sequence > next_) {
        diagnostics.add(Stat::batch_sequence_gaps, sequence - next_);
        arrival = Arrival::kAfterMissing;
      }
    }
    next_ = known_ ? std::max(next_, sequence + 1) : sequence + 1;
    known_ = true;
    return arrival;
  }
  // A gap marker after batch `sequence` (wire::Gap::after_sequence): the batches up to it are
  // accounted for by the gap (retention's gap stands for the batches it deleted).
  void gapAfter(uint64_t sequence) {
    if (sequence == wire::kNoSequence) return;
    next_ = known_ ? std::max(next_, sequence + 1) : sequence + 1;
    known_ = true;
  }
  // The thread ended having sent `batches` batches (its ThreadEnd): those after the last one
  // received are lost. Not counted when nothing of the thread came before and the input may
  // start anywhere: a live analyzer that subscribed after the thread's last batch lost nothing.
  void end(uint64_t batches, Diagnostics& diagnostics) const {
    if (known_ && batches != wire::kNoSequence && batches > next_)
      diagnostics.add(Stat::batches_lost_at_end, batches - next_);
  }

private:
  wire::SequenceRuns received_;
  bool known_;        // whether next_ holds: a batch or gap came, or the input starts at the start
  uint64_t next_ = 0; // the sequence number the next batch should have
};

// Whether, and in which table, the stack works out the finished calls' shapes.
struct ShapeLookup {
  static ShapeLookup none() { return {}; }
  // Interned: the shape ids a ThreadAnalyzer gives for the same events.
  static ShapeLookup intern(ShapeTable& table) { return {&table, nullptr}; }
  // Looked up only: a shape the table does not have is kNullShape, and so are its callers'.
  static ShapeLookup find(const ShapeTable& table) { return {nullptr, &table}; }

  ShapeTable* intern_into = nullptr;
  const ShapeTable* find_in = nullptr;
  bool any() const { return intern_into != nullptr || find_in != nullptr; }
};

template <typename Sink> class CallStack {
public:
  explicit CallStack(Sink& sink, ShapeLookup shapes = ShapeLookup::none(),
                     uint32_t max_depth = kDefaultMaxDepth)
      : sink_(sink), shapes_(shapes), max_depth_(max_depth) {}

  // A batch of the thread's events with its sequence number (wire::kNoSequence when unknown) and
  // the tracer's waits among them.
  void onBatch(uint64_t sequence, std::span<const Event> events,
               std::span<const wire::TracerWait> waits = {}) {
    const BatchSequence::Arrival arrival = sequence_.arrive(sequence, diagnostics_);
    if (arrival == BatchSequence::Arrival::kRepeated) return;
    if (arrival == BatchSequence::Arrival::kAfterMissing) onGap(0);
    forEachStretch(events, waits, [this](std::span<const Event> stretch) { onEvents(stretch); },
                   [this](uint64_t duration_ns) { onTracerWait(duration_ns); });
  }
  // The same with the batch's recorded call values (wire::CallValues, in order, their function ids
  // as the events carry them): each is given to the sink's onValues at its place among the events,
  // when the call it belongs to is the innermost open call the stack tracks (arguments follow
  // their call's enter, a return value precedes its exit); values of a call the stack does not
  // track (deeper than the maximum depth, discarded at a gap) are not given. The events are fed in
  // stretches cut at the values, so that a call with values is never finished by the leaf path
  // before its values have reached it.
  void onBatch(uint64_t sequence, std::span<const Event> events,
               std::span<const wire::TracerWait> waits, std::span<const wire::CallValues> values) {
    if (values.empty()) return onBatch(sequence, events, waits);
    const BatchSequence::Arrival arrival = sequence_.arrive(sequence, diagnostics_);
    if (arrival == BatchSequence::Arrival::kRepeated) return;
    if (arrival == BatchSequence::Arrival::kAfterMissing) onGap(0);
    size_t next = 0;
    forEachStretch(
        events, waits,
        [&](std::span<const Event> stretch) {
          const auto begin = static_cast<size_t>(stretch.data() - events.data());
          const size_t end = begin + stretch.size();
          size_t done = begin;
          for (; next < values.size() && values[next].before_event <= end; ++next) {
            const size_t at = std::clamp<size_t>(values[next].before_event, done, end);
            onEvents(events.subspan(done, at - done));
            done = at;
            giveValues(values[next]);
          }
          onEvents(events.subspan(done, end - done));
        },
        [this](uint64_t duration_ns) { onTracerWait(duration_ns); });
  }
  // The runtime made the thread wait here (lossless recording): the open calls are measured
  // without the wait, as ThreadAnalyzer measures them (their start moves later by it).
  void onTracerWait(uint64_t duration_ns) {
    diagnostics_.add(Stat::tracer_waits);
    diagnostics_.add(Stat::tracer_wait_ns, duration_ns);
    for (Frame& frame : stack_)
      frame.enter_ns += duration_ns;
  }
  void onEvents(std::span<const Event> events) {
    events_ += events.size();
    const Event* const end = events.data() + events.size();
    for (const Event* next = events.data(); next != end; ++next) {
      // A call without children has its exit right after its enter (most calls do): finished
      // here without a frame, as ThreadAnalyzer does. Anything unusual takes the general path.
      if (next->kind == EventKind::Enter && next + 1 != end && next[1].kind == EventKind::Exit &&
          next[1].function_id == next->function_id && next->function_id < kMaxFunctionId &&
          next->timestamp >= last_ns_ && next[1].timestamp >= next->timestamp &&
          stack_.size() < max_depth_) [[likely]] {
        finishLeaf(next->function_id, next->timestamp, next[1].timestamp);
        ++next;
        continue;
      }
      onEvent(*next);
    }
  }
  // A gap marker: the runtime dropped `dropped` events of this thread here.
  void onGapMarker(uint64_t dropped) {
    diagnostics_.add(Stat::gap_markers);
    diagnostics_.add(Stat::events_dropped, dropped);
    onGap(dropped);
  }
  // Events were lost here: the open calls are discarded.
  void onGap(uint64_t dropped) {
    diagnostics_.add(Stat::frames_discarded_at_gap, stack_.size());
    orphan_exit_budget_ += stack_.size() + below_max_depth_ + dropped;
    discard();
  }
  // The thread ended (having sent `batches` batches, its ThreadEnd's count) or the input stopped
  // (wire::kNoSequence).
  void onEnd(uint64_t batches = wire::kNoSequence) {
    sequence_.end(batches, diagnostics_);
    diagnostics_.add(Stat::frames_open_at_thread_end, stack_.size());
    orphan_exit_budget_ = 0;
    discard();
  }

  const Diagnostics& diagnostics() const { return diagnostics_; }
  uint64_t events() const { return events_; }
  size_t openCalls() const { return stack_.size(); }

private:
  struct Frame {
    uint32_t function;
    uint64_t enter_ns;
    size_t children_begin; // into child_shapes_
  };
  // A child whose shape the table does not know (ShapeLookup::find): its parent's is unknown too.
  static constexpr ShapeId kUnknownShape = UINT32_MAX;

  // The per-event path is inlined whole: it runs for every event of every thread.
  [[gnu::always_inline]] void onEvent(const Event& event) {
    uint64_t time = event.timestamp;
    if (time < last_ns_) [[unlikely]] {
      diagnostics_.add(Stat::timestamp_regressions);
      time = last_ns_;
    }
    last_ns_ = time;
    if (event.function_id >= kMaxFunctionId) [[unlikely]] {
      diagnostics_.add(Stat::function_ids_out_of_range);
      onGap(0);
      return;
    }
    switch (event.kind) {
    case EventKind::Enter: enter(event.function_id, time); break;
    case EventKind::UnwindExit:
      diagnostics_.add(Stat::unwind_exits);
      leave(event.function_id, time);
      break;
    case EventKind::AbandonedExit:
      diagnostics_.add(Stat::abandoned_exits);
      leave(event.function_id, time);
      break;
    case EventKind::Exit: leave(event.function_id, time); break;
    }
  }

  [[gnu::always_inline]] void enter(uint32_t function, uint64_t time_ns) {
    if (stack_.size() >= max_depth_) [[unlikely]] {
      ++below_max_depth_;
      diagnostics_.add(Stat::calls_below_max_depth);
      return;
    }
    sink_.onEnter(function, static_cast<uint32_t>(stack_.size()), time_ns);
    stack_.push_back({function, time_ns, child_shapes_.size()});
  }

  [[gnu::always_inline]] void leave(uint32_t function, uint64_t time_ns) {
    if (below_max_depth_ > 0) [[unlikely]] {
      --below_max_depth_;
      return;
    }
    if (!stack_.empty() && stack_.back().function == function) [[likely]] {
      finishTop(time_ns, true);
      return;
    }
    const auto match = std::find_if(stack_.rbegin(), stack_.rend(),
                                    [function](const Frame& f) { return f.function == function; });
    if (match == stack_.rend()) {
      if (orphan_exit_budget_ > 0) {
        --orphan_exit_budget_;
        diagnostics_.add(Stat::exits_after_gap);
      } else {
        diagnostics_.add(Stat::unmatched_exits);
      }
      return;
    }
    const auto skipped = static_cast<size_t>(match - stack_.rbegin());
    for (size_t i = 0; i < skipped; ++i) {
      diagnostics_.add(Stat::frames_closed_by_outer_exit);
      finishTop(time_ns, false);
    }
    finishTop(time_ns, true);
  }

  [[gnu::always_inline]] void finishLeaf(uint32_t function, uint64_t enter_ns, uint64_t exit_ns) {
    last_ns_ = exit_ns;
    const Frame frame{function, enter_ns, child_shapes_.size()};
    if constexpr (requires(Sink& sink, const FinishedCall& call) { sink.onLeaf(call); }) {
      sink_.onLeaf(finished(frame, exit_ns, true));
    } else {
      sink_.onEnter(function, static_cast<uint32_t>(stack_.size()), enter_ns);
      sink_.onCall(finished(frame, exit_ns, true));
    }
  }

  [[gnu::always_inline]] void finishTop(uint64_t time_ns, bool measured) {
    const Frame frame = stack_.back();
    stack_.pop_back();
    finish(frame, time_ns, measured);
  }

  // The call of `frame`, no longer on the stack, ends at `time_ns`.
  [[gnu::always_inline]] void finish(const Frame& frame, uint64_t time_ns, bool measured) {
    sink_.onCall(finished(frame, time_ns, measured));
  }

  // The finished call of `frame` (no longer on the stack), its shape counted in its caller's.
  [[gnu::always_inline]] FinishedCall finished(const Frame& frame, uint64_t time_ns,
                                               bool measured) {
    FinishedCall call;
    call.function = frame.function;
    call.caller = stack_.empty() ? kNoCaller : stack_.back().function;
    call.depth = static_cast<uint32_t>(stack_.size());
    call.enter_ns = frame.enter_ns;
    call.exit_ns = time_ns;
    call.measured = measured;
    if (shapes_.any()) {
      const ShapeId shape = shapeOf(frame);
      child_shapes_.resize(frame.children_begin);
      if (!stack_.empty()) {
        child_shapes_.push_back(shape);
        if (child_shapes_.size() - stack_.back().children_begin > kMaxSequencedChildren)
          [[unlikely]] collapseTopChildren();
      }
      call.shape = shape == kUnknownShape ? kNullShape : shape;
    }
    return call;
  }

  ShapeId shapeOf(const Frame& frame) {
    const auto children = std::span(child_shapes_).subspan(frame.children_begin);
    if (std::find(children.begin(), children.end(), kUnknownShape) != children.end())
      return kUnknownShape;
    const auto distinct = children.first(canonicalizeChildSet(children));
    if (shapes_.intern_into != nullptr) return shapes_.intern_into->intern(frame.function, distinct);
    const ShapeId shape = shapes_.find_in->find(frame.function, distinct);
    return shape == kNullShape ? kUnknownShape : shape;
  }

  // The open call on top keeps the set of its children's shapes (kMaxSequencedChildren).
  [[gnu::noinline]] void collapseTopChildren() {
    const size_t begin = stack_.back().children_begin;
    child_shapes_.resize(begin + canonicalizeChildSet(std::span(child_shapes_).subspan(begin)));
  }

  void giveValues(const wire::CallValues& values) {
    if constexpr (requires(Sink& sink) { sink.onValues(values); }) {
      if (below_max_depth_ == 0 && !stack_.empty() && stack_.back().function == values.function_id)
        sink_.onValues(values);
    }
  }

  void discard() {
    below_max_depth_ = 0;
    stack_.clear();
    child_shapes_.clear();
    sink_.onReset();
  }

  Sink& sink_;
  ShapeLookup shapes_;
  uint32_t max_depth_;
  uint64_t below_max_depth_ = 0; // open calls deeper than max_depth_
  std::vector<Frame> stack_;
  std::vector<ShapeId> child_shapes_; // the open frames' children's shapes, frame after frame
  BatchSequence sequence_;
  Diagnostics diagnostics_;
  uint64_t events_ = 0;
  uint64_t last_ns_ = 0;
  uint64_t orphan_exit_budget_ = 0;
};

} // namespace shapetrace::analyzer
