// Replaying a scope's threads into sequences.
#include "summaries/sequences.h"

#include "call_stack.h"
#include "function_names.h"
#include "replay.h"
#include "shape_metric.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>

namespace shapetrace::analyzer::summaries {
namespace {

// First pass of a scope of shapes: the entry ordinals of its outermost root calls (the calls
// entered before each, on this thread).
class RootFinder {
public:
  explicit RootFinder(const Scope& scope) : scope_(scope) {}

  void onEnter(uint32_t, uint32_t, uint64_t) { open_.push_back(entered_++); }
  void onCall(const FinishedCall& call) {
    const uint64_t ordinal = open_.back();
    open_.pop_back();
    if (call.shape != kNullShape && call.shape < scope_.shapes.size() && scope_.shapes[call.shape] &&
        scope_.inWindow(call.enter_ns))
      found_.push_back({ordinal, entered_});
  }
  void onReset() { open_.clear(); }

  // Roots not nested in another root, in entry order.
  std::vector<uint64_t> outermost() {
    std::sort(found_.begin(), found_.end());
    std::vector<uint64_t> out;
    uint64_t covered = 0; // entries below the last kept root end before this ordinal
    for (const auto& [ordinal, end] : found_)
      if (out.empty() || ordinal >= covered) {
        out.push_back(ordinal);
        covered = end;
      }
    return out;
  }

private:
  const Scope& scope_;
  std::vector<uint64_t> open_;
  std::vector<std::pair<uint64_t, uint64_t>> found_; // (ordinal, ordinal past its last callee)
  uint64_t entered_ = 0;
};

// Second pass: the calls of the scope's sequences, to the sink.
class ScopeSink {
public:
  ScopeSink(const Scope& scope, const ThreadKey& thread, SequenceSink& sink,
            const std::vector<uint64_t>* roots, ReplayStats& stats, ValueSymbols* symbols)
      : scope_(scope), thread_(thread), sink_(sink), roots_(roots), stats_(stats),
        symbols_(symbols) {}

  void onEnter(uint32_t function, uint32_t depth, uint64_t time_ns) {
    flushPending();
    const uint64_t ordinal = entered_++;
    last_ns_ = time_ns;
    if (!open_) maybeBegin(function, depth, time_ns, ordinal);
    uint32_t emitted = kNotEmitted;
    if (open_ && depth >= root_depth_) {
      const uint32_t below = depth - root_depth_;
      const bool in_window = scope_.roots != Scope::Roots::kThread || scope_.inWindow(time_ns);
      if (below <= scope_.depth && in_window) {
        emitted = function;
        ++stats_.calls;
        ++emitted_open_;
        // A chosen function's symbol waits for its arguments, which follow the enter.
        if (symbols_ != nullptr && symbols_->positionOf(function) != 0)
          pending_ = Pending{function, function, below, time_ns, frames_.size(), false};
        else
          sink_.enter(function, below, time_ns);
      }
    }
    frames_.push_back(emitted);
  }

  // The arguments of the innermost open call: a pending call's symbol is chosen by its value.
  void onValues(const wire::CallValues& values) {
    if (!pending_ || pending_->function != values.function_id) return;
    const uint8_t position = symbols_->positionOf(pending_->function);
    for (const wire::CallValue& value : values.values)
      if (value.position == position) {
        pending_->symbol = symbols_->symbolOf(pending_->function, value);
        pending_->valued = true;
      }
  }

  void onCall(const FinishedCall& call) {
    flushPending();
    const uint32_t emitted = frames_.back();
    frames_.pop_back();
    last_ns_ = call.exit_ns;
    if (emitted != kNotEmitted) {
      sink_.exit(emitted, call.depth - root_depth_, call.enter_ns, call.exit_ns, call.measured);
      --emitted_open_;
    }
    if (open_ && scope_.roots != Scope::Roots::kThread && call.depth == root_depth_) {
      sink_.end(call.exit_ns);
      open_ = false;
      done_ = scope_.roots == Scope::Roots::kInstance;
    }
  }

  void onReset() {
    flushPending();
    frames_.clear();
    emitted_open_ = 0;
    if (!open_) return;
    if (scope_.roots == Scope::Roots::kThread) {
      sink_.gap(last_ns_);
    } else {
      // The root's events are incomplete: its sequence ends here.
      sink_.end(last_ns_);
      open_ = false;
      ++stats_.truncated;
      done_ = scope_.roots == Scope::Roots::kInstance;
    }
  }

  // The thread is over: a thread's sequence ends with it.
  void finish() {
    flushPending();
    if (open_ && scope_.roots == Scope::Roots::kThread) {
      sink_.end(last_ns_);
      open_ = false;
    }
  }

  // Whether the rest of the thread can still add to the scope, after events up to `time_ns`.
  bool wantsMore(uint64_t time_ns) const {
    if (done_) return false;
    if (scope_.roots == Scope::Roots::kShapes && next_root_ >= roots_->size() && !open_)
      return false;
    if (time_ns < scope_.to_ns) return true;
    return scope_.roots == Scope::Roots::kThread ? emitted_open_ > 0 : open_;
  }

private:
  static constexpr uint32_t kNotEmitted = UINT32_MAX;
  // A chosen function's call given to the sink once its arguments have been seen.
  struct Pending {
    uint32_t function;
    uint32_t symbol; // the function, or its value's symbol
    uint32_t below;
    uint64_t time_ns;
    size_t frame; // its place in frames_
    bool valued;
  };
  void flushPending() {
    if (!pending_) return;
    if (!pending_->valued) symbols_->missing();
    sink_.enter(pending_->symbol, pending_->below, pending_->time_ns);
    frames_[pending_->frame] = pending_->symbol;
    pending_.reset();
  }

  void maybeBegin(uint32_t function, uint32_t depth, uint64_t time_ns, uint64_t ordinal) {
    bool begin = false;
    switch (scope_.roots) {
    case Scope::Roots::kThread: begin = scope_.inWindow(time_ns); break;
    case Scope::Roots::kFunctions:
      begin = function < scope_.functions.size() && scope_.functions[function] &&
              scope_.inWindow(time_ns);
      break;
    case Scope::Roots::kShapes:
      begin = next_root_ < roots_->size() && (*roots_)[next_root_] == ordinal;
      if (begin) ++next_root_;
      break;
    case Scope::Roots::kInstance:
      begin = time_ns == scope_.instance_ns &&
              (scope_.instance_function == UINT32_MAX || scope_.instance_function == function);
      break;
    }
    if (!begin) return;
    open_ = true;
    root_depth_ = scope_.roots == Scope::Roots::kThread ? 0 : depth;
    ++stats_.sequences;
    sink_.begin({thread_, time_ns,
                 scope_.roots == Scope::Roots::kThread ? UINT32_MAX : function});
  }

  const Scope& scope_;
  ThreadKey thread_;
  SequenceSink& sink_;
  const std::vector<uint64_t>* roots_;
  ReplayStats& stats_;
  ValueSymbols* symbols_;
  std::optional<Pending> pending_;
  std::vector<uint32_t> frames_; // per open call: the function given to the sink, or kNotEmitted
  uint64_t emitted_open_ = 0;
  bool open_ = false;
  bool done_ = false;
  uint32_t root_depth_ = 0;
  uint64_t entered_ = 0;
  size_t next_root_ = 0;
  uint64_t last_ns_ = 0;
};

// Feeds one thread's events to `stack` until `more(last time)` says stop.
template <typename Sink, typename More>
void feedThread(ThreadEvents& events, const ThreadKey& thread, uint64_t from_ns,
                CallStack<Sink>& stack, More more) {
  if (!events.start(thread, from_ns)) return;
  for (;;) {
    switch (events.next()) {
    case ThreadEvents::Kind::kEnd: stack.onEnd(); return;
    case ThreadEvents::Kind::kGap: stack.onGapMarker(events.dropped()); break;
    case ThreadEvents::Kind::kUndecodable: stack.onGap(0); break;
    case ThreadEvents::Kind::kBatch: {
      const auto& batch = events.events();
      stack.onBatch(events.sequence(), batch, events.waits(), events.values());
      if (!batch.empty() && !more(batch.back().timestamp)) return;
      break;
    }
    }
  }
}

// Stops at the first finished call of `function` with `shape` and a duration at most `limit`.
class TypicalFinder {
public:
  TypicalFinder(uint32_t function, ShapeId shape, uint64_t limit, std::optional<uint64_t> skip)
      : function_(function), shape_(shape), limit_(limit), skip_(skip) {}
  void onEnter(uint32_t, uint32_t, uint64_t) {}
  void onCall(const FinishedCall& call) {
    if (found_ || call.function != function_ || call.shape != shape_ || !call.measured) return;
    if (call.exit_ns - call.enter_ns > limit_ || call.enter_ns == skip_) return;
    found_ = call;
  }
  void onReset() {}
  const std::optional<FinishedCall>& found() const { return found_; }

private:
  uint32_t function_;
  ShapeId shape_;
  uint64_t limit_;
  std::optional<uint64_t> skip_;
  std::optional<FinishedCall> found_;
};

// Finds the enter time, in the events, of the call that starts at `start_ns` in the analysis' times
// (later by the tracer waits while it was open) and is of `function` (UINT32_MAX: the outermost
// such call).
class EnterTimeFinder {
public:
  EnterTimeFinder(uint64_t start_ns, uint32_t function) : start_ns_(start_ns), function_(function) {}
  void onEnter(uint32_t, uint32_t, uint64_t time_ns) { open_.push_back(time_ns); }
  void onCall(const FinishedCall& call) {
    const uint64_t entered = open_.back();
    open_.pop_back();
    if (call.enter_ns == start_ns_ && (function_ == UINT32_MAX || call.function == function_) &&
        (!found_ || call.depth <= depth_)) {
      found_ = entered;
      depth_ = call.depth;
    }
  }
  void onReset() { open_.clear(); }
  // Until found, and then while an enclosing call (entered no later) may start there too.
  bool wantsMore() const {
    if (!found_) return true;
    return function_ == UINT32_MAX &&
           std::any_of(open_.begin(), open_.end(), [&](uint64_t t) { return t <= *found_; });
  }
  const std::optional<uint64_t>& found() const { return found_; }

private:
  uint64_t start_ns_;
  uint32_t function_;
  std::vector<uint64_t> open_; // enter times of the open calls
  std::optional<uint64_t> found_;
  uint32_t depth_ = 0;
};

// The scope of one instance in the events' times: where the thread waited for the tracer, the
// call's start in the analysis is not its enter's time.
Scope instanceInEventTimes(ThreadEvents& events, const Analysis& analysis, const Scope& scope,
                           const ThreadKey& thread) {
  const uint64_t waited = tracerWaitNs(analysis, thread);
  if (scope.roots != Scope::Roots::kInstance || waited == 0) return scope;
  EnterTimeFinder finder(scope.instance_ns, scope.instance_function);
  CallStack<EnterTimeFinder> stack(finder, ShapeLookup::none(), analysis.settings.thread.max_depth);
  const uint64_t from = scope.instance_ns > waited ? scope.instance_ns - waited : 0;
  feedThread(events, thread, from, stack, [&](uint64_t) { return finder.wantsMore(); });
  Scope in_events = scope;
  if (finder.found()) in_events.instance_ns = *finder.found();
  return in_events;
}

} // namespace

ShapeId typicalShape(const Analysis& analysis, uint32_t function) {
  ShapeId best = kNullShape;
  uint64_t most = 0;
  for (ShapeId s = 1; s < analysis.shapes.size(); ++s)
    if (analysis.shapes.function(s) == function && analysis.shape_states[s].calls > most) {
      most = analysis.shape_states[s].calls;
      best = s;
    }
  return best;
}

namespace {

bool isCommon(const Analysis& analysis, ShapeId shape) {
  return analysis.shape_states[shape].stats.moments.count() >=
         std::max<uint64_t>(analysis.settings.thread.outlier_min_samples, 1);
}

std::string callsText(uint64_t calls) {
  return std::to_string(calls) + (calls == 1 ? " call" : " calls");
}

// The common shape of `function` other than `shape` nearest to it by the Shape metric, with the
// distance as text.
std::optional<std::pair<ShapeId, std::string>>
nearestCommonShape(const Analysis& analysis, uint32_t function, ShapeId shape) {
  ShapeMetric metric(analysis.shapes);
  ShapeId nearest = kNullShape;
  double nearest_distance = 0;
  for (ShapeId s = 1; s < analysis.shapes.size(); ++s) {
    if (s == shape || analysis.shapes.function(s) != function || !isCommon(analysis, s)) continue;
    const double d = metric.distance(shape, s);
    const bool closer = nearest == kNullShape || d < nearest_distance ||
                        (d == nearest_distance && analysis.shape_states[s].calls >
                                                      analysis.shape_states[nearest].calls);
    if (closer) {
      nearest = s;
      nearest_distance = d;
    }
  }
  if (nearest == kNullShape) return std::nullopt;
  char distance[32];
  std::snprintf(distance, sizeof distance, "%g", nearest_distance);
  return std::pair{nearest, std::string(distance)};
}

} // namespace

TypicalShape typicalShapeFor(const Analysis& analysis, uint32_t function, ShapeId call_shape,
                             bool same_work_slower) {
  const bool known = call_shape != kNullShape && call_shape < analysis.shapes.size();
  const uint64_t own_calls = known ? analysis.shape_states[call_shape].stats.moments.count() : 0;
  if (known && same_work_slower && own_calls >= 2)
    return {call_shape, "its own shape (" + callsText(own_calls) +
                            "): it did the same work as they do, slower"};
  if (!known) {
    const ShapeId most = typicalShape(analysis, function);
    if (most == kNullShape) return {};
    return {most, "its own shape is not known: the function's most common shape (" +
                      callsText(analysis.shape_states[most].stats.moments.count()) + ")"};
  }
  if (const auto nearest = nearestCommonShape(analysis, function, call_shape))
    return {nearest->first, "it did other work than its function's usual calls (shape #" +
                                std::to_string(call_shape) + ", " + callsText(own_calls) +
                                "); shape #" + std::to_string(nearest->first) +
                                " is the common shape of the function nearest to it (Shape "
                                "metric " +
                                nearest->second + ", " +
                                callsText(analysis.shape_states[nearest->first].stats.moments.count()) +
                                ")"};
  const ShapeId most = typicalShape(analysis, function);
  if (most == kNullShape || (most == call_shape && own_calls < 2)) return {};
  return {most, "no other shape of the function is common (at least " +
                    std::to_string(analysis.settings.thread.outlier_min_samples) +
                    " measured calls): its most common shape"};
}

std::optional<CallRef> findTypicalCall(recording::RecordingReader& reader,
                                       const Analysis& analysis, ShapeId shape,
                                       const ThreadKey& prefer, std::optional<uint64_t> skip) {
  if (shape == kNullShape) return std::nullopt;
  const uint32_t function = analysis.shapes.function(shape);
  const uint64_t median = analysis.shape_states[shape].stats.quantile(0.5);
  std::vector<ThreadKey> order{prefer};
  for (const ThreadSummary& t : analysis.threads)
    if (t.key != prefer) order.push_back(t.key);
  ThreadEvents events(reader, analysis);
  // The median is a histogram's (within 3%): when no call is that fast, any call of the shape.
  for (const uint64_t limit : {median, UINT64_MAX})
    for (const ThreadKey& thread : order) {
      TypicalFinder finder(function, shape, limit, thread == prefer ? skip : std::nullopt);
      CallStack<TypicalFinder> stack(finder, ShapeLookup::find(analysis.shapes),
                                     analysis.settings.thread.max_depth);
      feedThread(events, thread, 0, stack, [&](uint64_t) { return !finder.found(); });
      if (const auto& call = finder.found())
        return CallRef{thread, call->enter_ns, call->exit_ns - call->enter_ns, function, shape};
    }
  return std::nullopt;
}

ValueSymbols::ValueSymbols(const Analysis& analysis, std::vector<uint8_t> position)
    : analysis_(analysis), position_(std::move(position)),
      first_(static_cast<uint32_t>(analysis.functions.size())) {}

uint32_t ValueSymbols::symbolOf(uint32_t function, const wire::CallValue& value) {
  std::string text = wire::describeValue(value);
  const auto it = index_.find({function, text});
  if (it != index_.end()) return it->second;
  if (names_.size() >= kMaxSymbols) {
    ++capped_;
    return function;
  }
  const auto index = first_ + static_cast<uint32_t>(names_.size());
  names_.push_back(withoutParameters(analysis_.functions[function].name) + "@arg" +
                   std::to_string(value.position) + "=" + text);
  index_.emplace(std::pair{function, std::move(text)}, index);
  return index;
}

ReplayStats replayScope(recording::RecordingReader& reader, const Analysis& analysis,
                        const Scope& scope, SequenceSink& sink, ValueSymbols* symbols) {
  ReplayStats stats;
  ThreadEvents events(reader, analysis, symbols != nullptr ? symbols->unknownBase() : 0);
  const uint32_t max_depth = analysis.settings.thread.max_depth;
  for (const ThreadKey& thread : scope.threads) {
    std::vector<uint64_t> roots;
    if (scope.roots == Scope::Roots::kShapes) {
      RootFinder finder(scope);
      CallStack<RootFinder> stack(finder, ShapeLookup::find(analysis.shapes), max_depth);
      // To the thread's end: a root that starts in the window may end after it.
      feedThread(events, thread, 0, stack, [](uint64_t) { return true; });
      roots = finder.outermost();
      if (roots.empty()) continue;
    }
    const Scope in_events = instanceInEventTimes(events, analysis, scope, thread);
    ScopeSink scoped(in_events, thread, sink, &roots, stats, symbols);
    CallStack<ScopeSink> stack(scoped, ShapeLookup::none(), max_depth);
    // One instance is found through the index; everything else is read from the thread's start,
    // so that every call's callers (and a root's nesting) are known.
    const uint64_t from = scope.roots == Scope::Roots::kInstance ? in_events.instance_ns : 0;
    feedThread(events, thread, from, stack, [&](uint64_t t) { return scoped.wantsMore(t); });
    scoped.finish();
  }
  stats.frames_read = events.framesRead();
  return stats;
}

} // namespace shapetrace::analyzer::summaries
