// The call stream (call_stack.h): exact calls on every resynchronisation rule, and the same calls,
// shapes and counts as ThreadAnalyzer's fused reconstruction on the same input, rule by rule and on
// thousands of random damaged traces.
#include "call_stack.h"
#include "thread_analyzer.h"
#include "trace_builder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>

namespace shapetrace::analyzer {
namespace {

using testing::call;
using testing::eventsOf;

// Everything the stack says, in order.
struct RecordingSink {
  struct Enter {
    uint32_t function, depth;
    uint64_t time_ns;
    friend bool operator==(const Enter&, const Enter&) = default;
  };
  void onEnter(uint32_t function, uint32_t depth, uint64_t time_ns) {
    enters.push_back({function, depth, time_ns});
  }
  void onCall(const FinishedCall& c) { calls.push_back(c); }
  void onReset() { ++resets; }
  std::vector<Enter> enters;
  std::vector<FinishedCall> calls;
  int resets = 0;
};

FinishedCall finished(uint32_t function, uint32_t caller, uint32_t depth, uint64_t enter,
                      uint64_t exit, bool measured = true) {
  return FinishedCall{function, caller, depth, enter, exit, measured, kNullShape};
}

Event enter(uint64_t t, uint32_t f) { return {t, f, EventKind::Enter}; }
Event leave(uint64_t t, uint32_t f) { return {t, f, EventKind::Exit}; }

// A tracer wait (wire::TracerWait) inside calls 1 and 2: their starts move later by it, as in
// ThreadAnalyzer, so their durations are the program's own; a call entered after it is untouched.
TEST(CallStackTest, TracerWaitsAreTakenOutOfTheOpenCalls) {
  RecordingSink sink;
  CallStack<RecordingSink> stack(sink);
  const std::vector<Event> events{enter(10, 1), enter(20, 2), leave(1030, 2), enter(1040, 3),
                                  leave(1050, 3), leave(1060, 1)};
  const std::vector<wire::TracerWait> waits{{2, 25, 1000}};
  stack.onBatch(0, events, waits);
  EXPECT_THAT(sink.calls, ::testing::ElementsAre(finished(2, 1, 1, 1020, 1030),
                                                 finished(3, 1, 1, 1040, 1050),
                                                 finished(1, kNoCaller, 0, 1010, 1060)));
  EXPECT_EQ(stack.diagnostics().count(Stat::tracer_waits), 1u);
  EXPECT_EQ(stack.diagnostics().count(Stat::tracer_wait_ns), 1000u);
}

// A sink that also takes recorded values: each with the call it was given for (the innermost
// open call: enters so far minus calls finished, as a stack of enter times).
struct ValuesSink : RecordingSink {
  void onEnter(uint32_t function, uint32_t depth, uint64_t time_ns) {
    RecordingSink::onEnter(function, depth, time_ns);
    open.push_back(time_ns);
  }
  void onCall(const FinishedCall& c) {
    RecordingSink::onCall(c);
    open.pop_back();
  }
  void onValues(const wire::CallValues& values) {
    given.push_back({open.back(), values.values.front().position, values.values.front().bits});
  }
  std::vector<uint64_t> open;
  std::vector<std::tuple<uint64_t, uint8_t, uint64_t>> given; // (its call's enter, position, bits)
};

wire::CallValues values(uint32_t before, uint32_t function, uint8_t position, uint64_t bits) {
  return {before, function, {{position, wire::ValueType::Signed, bits}}};
}

// Values reach the sink at their place: arguments after their call's enter (a leaf's too, before
// the leaf path could finish it), a return value before its exit, arguments cut into the next
// batch (before_event 0) with the call still open; values whose function is not the innermost
// open call's, and those of a call deeper than the maximum depth, are not given. The calls are
// those of the same events without values.
TEST(CallStackTest, RecordedValuesReachTheInnermostOpenCall) {
  ValuesSink sink;
  CallStack<ValuesSink> stack(sink, ShapeLookup::none(), 2);
  const std::vector<Event> first{enter(10, 1), enter(20, 2), leave(30, 2), enter(40, 3)};
  const std::vector<wire::CallValues> first_values{values(1, 1, 1, 100), values(2, 2, 1, 200),
                                                   values(2, 2, 0, 201), values(3, 9, 1, 999)};
  stack.onBatch(0, first, {}, first_values);
  const std::vector<Event> second{enter(50, 4), leave(60, 4), leave(70, 3), leave(80, 1)};
  const std::vector<wire::CallValues> second_values{values(0, 3, 2, 300), values(1, 4, 1, 400),
                                                    values(3, 1, 0, 101)};
  stack.onBatch(1, second, {}, second_values);
  EXPECT_THAT(sink.given, ::testing::ElementsAre(std::tuple{10u, 1, 100u}, std::tuple{20u, 1, 200u},
                                                 std::tuple{20u, 0, 201u}, std::tuple{40u, 2, 300u},
                                                 std::tuple{10u, 0, 101u}));
  RecordingSink plain;
  CallStack<RecordingSink> without(plain, ShapeLookup::none(), 2);
  without.onBatch(0, first);
  without.onBatch(1, second);
  EXPECT_EQ(sink.calls, plain.calls);
  EXPECT_EQ(stack.diagnostics().count(Stat::calls_below_max_depth), 1u);
}

TEST(CallStackTest, NestedCallsFinishInOrderWithCallerAndDepth) {
  RecordingSink sink;
  CallStack<RecordingSink> stack(sink);
  stack.onBatch(0, std::vector<Event>{enter(10, 1), enter(20, 2), leave(30, 2), enter(40, 3),
                                      leave(50, 3), leave(60, 1)});
  EXPECT_THAT(sink.calls, ::testing::ElementsAre(finished(2, 1, 1, 20, 30), finished(3, 1, 1, 40, 50),
                                                 finished(1, kNoCaller, 0, 10, 60)));
  EXPECT_EQ(sink.enters.size(), 3u);
  EXPECT_EQ(sink.enters[1], (RecordingSink::Enter{2, 1, 20}));
}

TEST(CallStackTest, OuterExitClosesInnerCallsUnmeasured) {
  RecordingSink sink;
  CallStack<RecordingSink> stack(sink);
  // 1 calls 2 calls 3; 3 and 2 never exit (longjmp to 1's frame), then 1 exits.
  stack.onEvents(std::vector<Event>{enter(10, 1), enter(20, 2), enter(30, 3), leave(90, 1)});
  EXPECT_THAT(sink.calls, ::testing::ElementsAre(finished(3, 2, 2, 30, 90, false),
                                                 finished(2, 1, 1, 20, 90, false),
                                                 finished(1, kNoCaller, 0, 10, 90, true)));
  EXPECT_EQ(stack.diagnostics().count(Stat::frames_closed_by_outer_exit), 2u);
}

TEST(CallStackTest, UnmatchedExitIsCountedAndIgnored) {
  RecordingSink sink;
  CallStack<RecordingSink> stack(sink);
  stack.onEvents(std::vector<Event>{enter(10, 1), leave(15, 7), leave(20, 1)});
  EXPECT_THAT(sink.calls, ::testing::ElementsAre(finished(1, kNoCaller, 0, 10, 20)));
  EXPECT_EQ(stack.diagnostics().count(Stat::unmatched_exits), 1u);
}

TEST(CallStackTest, GapDiscardsOpenCallsAndExpectsTheirExits) {
  RecordingSink sink;
  CallStack<RecordingSink> stack(sink);
  stack.onEvents(std::vector<Event>{enter(10, 1), enter(20, 2)});
  stack.onGapMarker(3);
  stack.onEvents(std::vector<Event>{leave(30, 2), enter(40, 4), leave(50, 4), leave(60, 1)});
  EXPECT_EQ(sink.resets, 1);
  EXPECT_THAT(sink.calls, ::testing::ElementsAre(finished(4, kNoCaller, 0, 40, 50)));
  EXPECT_EQ(stack.diagnostics().count(Stat::frames_discarded_at_gap), 2u);
  EXPECT_EQ(stack.diagnostics().count(Stat::exits_after_gap), 2u);
  EXPECT_EQ(stack.diagnostics().count(Stat::events_dropped), 3u);
  EXPECT_EQ(stack.diagnostics().count(Stat::unmatched_exits), 0u);
}

TEST(CallStackTest, MissingBatchIsAGapAndRegressionIsCounted) {
  RecordingSink sink;
  CallStack<RecordingSink> stack(sink);
  stack.onBatch(0, std::vector<Event>{enter(10, 1)});
  stack.onBatch(2, std::vector<Event>{enter(20, 2), leave(30, 2)});
  stack.onBatch(1, std::vector<Event>{});
  EXPECT_EQ(sink.resets, 1);
  EXPECT_THAT(sink.calls, ::testing::ElementsAre(finished(2, kNoCaller, 0, 20, 30)));
  EXPECT_EQ(stack.diagnostics().count(Stat::batch_sequence_gaps), 1u);
  EXPECT_EQ(stack.diagnostics().count(Stat::batch_sequence_regressions), 1u);
}

TEST(CallStackTest, ClockRegressionIsClampedAndUnwindExitFinishes) {
  RecordingSink sink;
  CallStack<RecordingSink> stack(sink);
  stack.onEvents(std::vector<Event>{enter(100, 1), enter(90, 2),
                                    Event{120, 2, EventKind::UnwindExit}, leave(130, 1)});
  EXPECT_THAT(sink.calls, ::testing::ElementsAre(finished(2, 1, 1, 100, 120),
                                                 finished(1, kNoCaller, 0, 100, 130)));
  EXPECT_EQ(stack.diagnostics().count(Stat::timestamp_regressions), 1u);
  EXPECT_EQ(stack.diagnostics().count(Stat::unwind_exits), 1u);
}

// A longjmp out of three frames, as the runtime records it: one abandoned exit per jumped-over
// frame at the time of the jump, innermost first. The calls finish measured, at the jump, and the
// frame setjmp returned to goes on with the right depth.
TEST(CallStackTest, AbandonedExitsEndTheJumpedOverFramesAtTheJump) {
  RecordingSink sink;
  CallStack<RecordingSink> stack(sink);
  auto abandoned = [](uint64_t t, uint32_t f) { return Event{t, f, EventKind::AbandonedExit}; };
  stack.onEvents(std::vector<Event>{enter(10, 1), enter(20, 2), enter(30, 3), enter(40, 4),
                                    abandoned(50, 4), abandoned(50, 3), abandoned(50, 2),
                                    enter(60, 5), leave(70, 5), leave(80, 1)});
  EXPECT_THAT(sink.calls, ::testing::ElementsAre(
                              finished(4, 3, 3, 40, 50), finished(3, 2, 2, 30, 50),
                              finished(2, 1, 1, 20, 50), finished(5, 1, 1, 60, 70),
                              finished(1, kNoCaller, 0, 10, 80)));
  EXPECT_EQ(sink.enters.back(), (RecordingSink::Enter{5, 1, 60}));
  EXPECT_EQ(stack.diagnostics().count(Stat::abandoned_exits), 3u);
  EXPECT_EQ(stack.diagnostics().count(Stat::frames_closed_by_outer_exit), 0u);
  EXPECT_EQ(stack.diagnostics().count(Stat::unmatched_exits), 0u);
}

TEST(CallStackTest, HugeFunctionIdIsAGapAndTheEndDiscards) {
  RecordingSink sink;
  CallStack<RecordingSink> stack(sink);
  stack.onEvents(std::vector<Event>{enter(10, 1), enter(20, kMaxFunctionId)});
  EXPECT_EQ(sink.resets, 1);
  EXPECT_EQ(stack.diagnostics().count(Stat::function_ids_out_of_range), 1u);
  stack.onEvents(std::vector<Event>{enter(30, 5)});
  stack.onEnd();
  EXPECT_EQ(stack.diagnostics().count(Stat::frames_open_at_thread_end), 1u);
  EXPECT_TRUE(sink.calls.empty());
}

TEST(CallStackTest, CallsBelowTheMaximumDepthAreCountedNotAnalysed) {
  RecordingSink sink;
  CallStack<RecordingSink> stack(sink, ShapeLookup::none(), 2);
  // 1 calls 2 calls 3 calls 4: 3 and 4 are below the limit of 2; 2 keeps its whole time.
  stack.onEvents(std::vector<Event>{enter(10, 1), enter(20, 2), enter(30, 3), enter(40, 4),
                                    leave(50, 4), leave(60, 3), leave(70, 2), enter(80, 5),
                                    leave(90, 5), leave(100, 1)});
  EXPECT_THAT(sink.calls, ::testing::ElementsAre(finished(2, 1, 1, 20, 70),
                                                 finished(5, 1, 1, 80, 90),
                                                 finished(1, kNoCaller, 0, 10, 100)));
  EXPECT_EQ(stack.diagnostics().count(Stat::calls_below_max_depth), 2u);
  EXPECT_EQ(stack.diagnostics().count(Stat::unmatched_exits), 0u);
  // A recursion far deeper than the limit costs the limit's frames, whatever its depth.
  std::vector<Event> deep;
  for (uint32_t i = 0; i < 100000; ++i)
    deep.push_back(enter(200 + i, 7));
  for (uint32_t i = 0; i < 100000; ++i)
    deep.push_back(leave(300000 + i, 7));
  RecordingSink deep_sink;
  CallStack<RecordingSink> limited(deep_sink);
  limited.onEvents(deep);
  EXPECT_EQ(deep_sink.calls.size(), kDefaultMaxDepth);
  EXPECT_EQ(limited.diagnostics().count(Stat::calls_below_max_depth), 100000 - kDefaultMaxDepth);
  EXPECT_EQ(limited.openCalls(), 0u);
}

TEST(CallStackTest, ShapesAreLookedUpOrInterned) {
  const auto events = eventsOf({call(1, {call(2), call(3, {call(2)})})});
  ShapeTable interned;
  RecordingSink a;
  CallStack<RecordingSink> intern(a, ShapeLookup::intern(interned));
  intern.onEvents(events);
  ShapeTable expected;
  testing::shapeOf(expected, call(1, {call(2), call(3, {call(2)})}));
  ASSERT_EQ(interned.size(), expected.size());
  EXPECT_EQ(a.calls.back().shape, interned.size() - 1);

  // Looked up in a table that lacks 3's shape: 3 and its caller come out unknown (null).
  ShapeTable partial;
  const ShapeId two = testing::shape(partial, 2);
  RecordingSink b;
  CallStack<RecordingSink> find(b, ShapeLookup::find(partial));
  find.onEvents(events);
  ASSERT_EQ(b.calls.size(), 4u);
  EXPECT_EQ(b.calls[0].shape, two);
  EXPECT_EQ(b.calls[3].shape, kNullShape);
}

// Per-shape calls, measured calls and duration sums, the way ThreadAnalyzer keeps them.
struct ShapeTotals {
  uint64_t calls = 0, measured = 0;
  unsigned __int128 sum = 0;
};
struct TotalsSink {
  void onEnter(uint32_t, uint32_t, uint64_t) {}
  void onCall(const FinishedCall& c) {
    if (c.shape >= by_shape.size()) by_shape.resize(c.shape + 1);
    ShapeTotals& t = by_shape[c.shape];
    ++t.calls;
    if (c.measured) {
      ++t.measured;
      t.sum += c.exit_ns - c.enter_ns;
    }
  }
  void onReset() {}
  std::vector<ShapeTotals> by_shape;
};

// One step of a thread's input, fed to both reconstructions alike.
struct Step {
  enum Kind { kBatch, kGapMarker } kind = kBatch;
  uint64_t sequence = 0;
  std::vector<Event> events;
  uint64_t dropped = 0;
};

// The same steps into every reconstruction given.
template <typename... Reconstructions>
void feed(const std::vector<Step>& steps, Reconstructions&... reconstructions) {
  for (const Step& step : steps) {
    if (step.kind == Step::kBatch)
      (reconstructions.onBatch(step.sequence, step.events), ...);
    else
      (reconstructions.onGapMarker(step.dropped), ...);
  }
}

void expectSameCalls(const std::vector<Step>& steps, uint32_t max_depth = kDefaultMaxDepth) {
  ThreadAnalyzerSettings settings;
  settings.max_depth = max_depth;
  ThreadAnalyzer fused(settings);
  ShapeTable shapes;
  TotalsSink sink;
  CallStack<TotalsSink> generic(sink, ShapeLookup::intern(shapes), max_depth);
  feed(steps, fused, generic);
  ASSERT_EQ(fused.openCalls(), generic.openCalls());
  fused.onEnd();
  generic.onEnd();
  const ThreadResult& result = fused.result();
  ASSERT_EQ(result.shapes.size(), shapes.size());
  for (ShapeId id = 1; id < shapes.size(); ++id) {
    ASSERT_EQ(result.shapes.function(id), shapes.function(id)) << id;
    const auto a = result.shapes.children(id), b = shapes.children(id);
    ASSERT_TRUE(std::equal(a.begin(), a.end(), b.begin(), b.end())) << id;
    const ShapeState& state = result.shape_states[id];
    const ShapeTotals totals = id < sink.by_shape.size() ? sink.by_shape[id] : ShapeTotals{};
    EXPECT_EQ(state.calls, totals.calls) << id;
    EXPECT_EQ(state.stats.moments.count(), totals.measured) << id;
    EXPECT_TRUE(state.stats.moments.sum() == totals.sum) << id;
  }
  EXPECT_EQ(result.events, generic.events());
  for (Stat stat : {Stat::gap_markers, Stat::events_dropped, Stat::batch_sequence_gaps,
                    Stat::batch_sequence_regressions, Stat::duplicate_batches,
                    Stat::frames_discarded_at_gap,
                    Stat::exits_after_gap, Stat::unmatched_exits, Stat::frames_closed_by_outer_exit,
                    Stat::unwind_exits, Stat::abandoned_exits, Stat::timestamp_regressions,
                    Stat::function_ids_out_of_range,
                    Stat::calls_below_max_depth, Stat::frames_open_at_thread_end})
    EXPECT_EQ(result.diagnostics.count(stat), generic.diagnostics().count(stat)) << statName(stat);
}

TEST(CallStackTest, SameCallsAsThreadAnalyzerOnEveryRule) {
  const std::vector<std::vector<Step>> cases = {
      {{Step::kBatch, 0, eventsOf({call(1, {call(2), call(3, {call(2)}), call(2)})})}},
      {{Step::kBatch, 0, {enter(10, 1), enter(20, 2), enter(30, 3), leave(90, 1)}}},
      {{Step::kBatch, 0, {enter(10, 1), leave(15, 7), leave(20, 1)}}},
      {{Step::kBatch, 0, {enter(10, 1), enter(20, 2)}},
       {Step::kGapMarker, 0, {}, 3},
       {Step::kBatch, 1, {leave(30, 2), enter(40, 4), leave(50, 4), leave(60, 1), leave(70, 9)}}},
      {{Step::kBatch, 0, {enter(10, 1)}}, {Step::kBatch, 2, {enter(20, 2), leave(30, 2)}},
       {Step::kBatch, 1, {leave(40, 1)}}},
      {{Step::kBatch, 0, {enter(100, 1), enter(90, 2), Event{120, 2, EventKind::UnwindExit},
                          leave(130, 1)}}},
      {{Step::kBatch, 0, {enter(10, 1), enter(20, kMaxFunctionId), leave(30, 1)}}},
      {{Step::kBatch, 0, {enter(10, 1), enter(20, 2), enter(30, 3), Event{40, 3, EventKind::AbandonedExit},
                          Event{40, 2, EventKind::AbandonedExit}, enter(50, 2), leave(60, 2),
                          leave(70, 1)}}},
      {{Step::kBatch, 0, {enter(10, 1), enter(20, 2)}}}, // open at the end
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(i);
    expectSameCalls(cases[i]);
    expectSameCalls(cases[i], 2); // with calls below the maximum depth
  }
}

// Random traces with every kind of damage: stray and missing exits, unwind exits, longjmps with
// and without abandoned exits, clock regressions, gap markers, missing and repeated batches, ids
// out of range.
std::vector<Step> randomTrace(std::mt19937_64& random) {
  std::vector<Step> steps;
  std::vector<uint32_t> open;
  uint64_t time = 1000, sequence = 0;
  auto chance = [&](int percent) { return static_cast<int>(random() % 100) < percent; };
  const int batches = 1 + static_cast<int>(random() % 6);
  for (int b = 0; b < batches; ++b) {
    Step step;
    step.sequence = sequence;
    sequence += chance(10) ? 2 : (chance(5) ? 0 : 1);
    const int events = static_cast<int>(random() % 60);
    for (int e = 0; e < events; ++e) {
      time += random() % 7;
      const uint64_t t = chance(3) ? time - 5 : time;
      if (open.empty() || (open.size() < 12 && chance(55))) {
        const uint32_t f = chance(1) ? kMaxFunctionId + 1 : static_cast<uint32_t>(random() % 6);
        step.events.push_back(enter(t, f));
        open.push_back(f);
      } else if (chance(4)) {
        step.events.push_back(leave(t, static_cast<uint32_t>(random() % 8))); // stray
      } else {
        // Exit the top, or (longjmp) one further down: unrecorded, or as the runtime records it,
        // the jumped-over frames' abandoned exits at the time of the jump.
        size_t depth = open.size() - 1;
        if (chance(8)) {
          depth = random() % open.size();
          if (chance(50))
            while (open.size() > depth + 1) {
              step.events.push_back(Event{t, open.back(), EventKind::AbandonedExit});
              open.pop_back();
            }
        }
        const auto kind = chance(5) ? EventKind::UnwindExit : EventKind::Exit;
        step.events.push_back(Event{t, open[depth], kind});
        open.resize(depth);
      }
    }
    steps.push_back(std::move(step));
    if (chance(10)) {
      steps.push_back(Step{Step::kGapMarker, 0, {}, random() % 5});
      if (chance(50)) open.clear();
    }
  }
  return steps;
}

TEST(CallStackTest, SameCallsAsThreadAnalyzerOnRandomDamagedTraces) {
  std::mt19937_64 random(20261124);
  for (int i = 0; i < 3000; ++i) {
    SCOPED_TRACE(i);
    // Every third trace with a maximum depth its calls reach.
    expectSameCalls(randomTrace(random), i % 3 == 0 ? 1 + static_cast<uint32_t>(i % 7) : kDefaultMaxDepth);
    if (::testing::Test::HasFailure()) break;
  }
}

// A sink with the leaf path (onLeaf) gets the same finished calls, in the same order, as one
// without it; only the calls it gets through onLeaf have no onEnter.
struct LeafSink : RecordingSink {
  void onLeaf(const FinishedCall& c) {
    calls.push_back(c);
    ++leaves;
  }
  size_t leaves = 0;
};

TEST(CallStackTest, TheLeafPathGivesTheSameCalls) {
  std::mt19937_64 random(20261125);
  size_t leaves = 0;
  for (int i = 0; i < 1000; ++i) {
    SCOPED_TRACE(i);
    RecordingSink plain;
    LeafSink leafy;
    ShapeTable shapes_a, shapes_b;
    CallStack<RecordingSink> a(plain, ShapeLookup::intern(shapes_a));
    CallStack<LeafSink> b(leafy, ShapeLookup::intern(shapes_b));
    feed(randomTrace(random), a, b);
    a.onEnd();
    b.onEnd();
    ASSERT_EQ(plain.calls, leafy.calls);
    ASSERT_EQ(plain.enters.size(), leafy.enters.size() + leafy.leaves);
    ASSERT_EQ(plain.resets, leafy.resets);
    leaves += leafy.leaves;
  }
  EXPECT_GT(leaves, 0u);
}

} // namespace
} // namespace shapetrace::analyzer
