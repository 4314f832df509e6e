// Per-thread reconstruction: shapes and DAG nodes of finished calls, statistics, outliers, the
// occurrence timeline, and every resynchronisation case (gaps, missing batches, unmatched exits,
// longjmp-like escapes, clock regressions, open calls at the end).
#include "thread_analyzer.h"
#include "trace_builder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

namespace shapetrace::analyzer {
namespace {

using testing::call;
using testing::eventsOf;

Event enter(uint64_t t, uint32_t f) { return Event{t, f, EventKind::Enter}; }
Event leave(uint64_t t, uint32_t f) { return Event{t, f, EventKind::Exit}; }

ShapeId leafOf(const ThreadAnalyzer& a, uint32_t function) {
  for (ShapeId id = 1; id < a.shapes().size(); ++id)
    if (a.shapes().function(id) == function && a.shapes().isLeaf(id)) return id;
  return kNullShape;
}

TEST(ThreadAnalyzerTest, ShapesOfFinishedCalls) {
  ThreadAnalyzer a;
  // main(1) calls a(2) three times and b(3) once, then once more the same with one a.
  a.onEvents(eventsOf({call(1, {call(2), call(2), call(3), call(2)}), call(1, {call(2), call(3)})}));
  a.onEnd();
  EXPECT_EQ(a.calls(), 8u);
  EXPECT_EQ(a.events(), 16u);
  ASSERT_EQ(a.shapes().size(), 4u); // null, [2], [3], [1,{[2],[3]}]
  const ShapeId main_shape = 3;
  EXPECT_EQ(a.shapes().function(main_shape), 1u);
  EXPECT_THAT(a.shapes().children(main_shape), ::testing::ElementsAre(leafOf(a, 2), leafOf(a, 3)));
  EXPECT_EQ(a.shapeStates()[main_shape].stats.moments.count(), 2u);
  EXPECT_EQ(a.functionStates()[2].stats.moments.count(), 4u);
  // Each call spends 10 ns besides its children: main's calls last 50 and 30 ns.
  EXPECT_EQ(a.functionStates()[1].stats.moments.min(), 30u);
  EXPECT_EQ(a.functionStates()[1].stats.moments.max(), 50u);
  EXPECT_EQ(a.diagnostics(), Diagnostics{});
}

TEST(ThreadAnalyzerTest, InclusiveTimeCountsARecursiveChainOnce) {
  ThreadAnalyzer a;
  // main(1) -> f(2) -> g(3) -> f(2) -> f(2), then a leaf f(2) called from main: each call spends
  // 10 ns besides its children. The chain's outer f lasts 40 ns and holds f calls of 20 and 10 ns.
  a.onEvents(eventsOf({call(1, {call(2, {call(3, {call(2, {call(2)})})}), call(2)})}));
  a.onEnd();
  const auto states = a.functionStates();
  EXPECT_TRUE(states.at(2).stats.moments.sum() == 40u + 20u + 10u + 10u); // every level
  EXPECT_EQ(states.at(2).inclusive_ns, 40u + 10u); // the chain once, and the leaf
  EXPECT_EQ(states.at(3).inclusive_ns, 30u);
  EXPECT_EQ(states.at(1).inclusive_ns, 60u);
}

TEST(ThreadAnalyzerTest, FramesLostAtAGapAreNoLongerOpen) {
  ThreadAnalyzer a;
  // f(2) opens, the gap discards it; f's later calls are outermost again.
  a.onEvents(std::vector<Event>{enter(100, 2)});
  a.onGapMarker(5, 0);
  a.onEvents(eventsOf({call(2, {}, 40), call(2, {call(2, {}, 5)}, 5)}, 1000));
  a.onEnd();
  EXPECT_EQ(a.functionStates().at(2).inclusive_ns, 40u + 10u);
}

TEST(ThreadAnalyzerTest, DagKeepsExactSequencesWithCountSumAndSquares) {
  ThreadAnalyzer a;
  a.onEvents(eventsOf({call(1, {call(2), call(3)}), call(1, {call(3), call(2)}),
                       call(1, {call(2), call(3)}, 20)}));
  // One shape for main, two exact sequences.
  EXPECT_EQ(a.shapes().size(), 4u);
  ASSERT_EQ(a.dag().size(), 5u); // null, [2], [3], [1:(2,3)], [1:(3,2)]
  const ShapeId two_three = 3;
  EXPECT_EQ(a.dag().function(two_three), 1u);
  EXPECT_EQ(a.dag().children(two_three).size(), 2u);
  const DagStats& s = a.dagStats()[two_three];
  EXPECT_EQ(s.count, 2u);
  EXPECT_TRUE(s.sum == 30u + 40u);
  EXPECT_TRUE(s.sum_squares == 30u * 30u + 40u * 40u);
}

TEST(ThreadAnalyzerTest, ALoopThatNeverEndsKeepsBoundedChildrenAndItsShape) {
  // main(1) runs a loop of 200,000 requests (2 calling 3, or 4 alone) and is still open: its
  // children are kept as a set once there are too many, not one entry per call.
  ThreadAnalyzer a;
  uint64_t t = 1;
  std::vector<Event> events{enter(t++, 1)};
  for (int i = 0; i < 200'000; ++i) {
    if (i % 3 == 0) {
      events.push_back(enter(t++, 4));
      events.push_back(leave(t++, 4));
    } else {
      events.push_back(enter(t++, 2));
      events.push_back(enter(t++, 3));
      events.push_back(leave(t++, 3));
      events.push_back(leave(t++, 2));
    }
    if (events.size() >= 4096) {
      a.onEvents(events);
      events.clear();
      // Checked after every batch: at most the bound and the batch.
      EXPECT_LE(a.openChildEntries(), kMaxSequencedChildren + 4096);
    }
  }
  a.onEvents(events);
  EXPECT_LE(a.openChildEntries(), kMaxSequencedChildren + 4096);
  EXPECT_EQ(a.calls(), 200'000u + 133'333u);
  // It ends: its shape is [1, {[2,{[3]}], [4]}], as without the bound; its DAG node is not kept.
  a.onEvents(std::vector<Event>{leave(t++, 1)});
  a.onEnd();
  ShapeId main_shape = kNullShape;
  for (ShapeId id = 1; id < a.shapes().size(); ++id)
    if (a.shapes().function(id) == 1) main_shape = id;
  ASSERT_NE(main_shape, kNullShape);
  EXPECT_EQ(a.shapes().children(main_shape).size(), 2u);
  EXPECT_EQ(a.shapeStates()[main_shape].calls, 1u);
  EXPECT_EQ(a.diagnostics().count(Stat::dag_calls_not_interned), 1u);
  EXPECT_EQ(a.openChildEntries(), 0u);
}

TEST(ThreadAnalyzerTest, UnmatchedExitIsCountedAndIgnored) {
  ThreadAnalyzer a;
  a.onEvents({{enter(10, 1), leave(20, 9), leave(30, 1)}});
  EXPECT_EQ(a.diagnostics().count(Stat::unmatched_exits), 1u);
  EXPECT_EQ(a.calls(), 1u);
  EXPECT_EQ(a.functionStates()[1].stats.moments.max(), 20u);
}

TEST(ThreadAnalyzerTest, LongjmpLikeEscapeClosesInnerCallsUnmeasured) {
  ThreadAnalyzer a;
  a.onEvents({{enter(10, 1), enter(20, 2), enter(30, 3), leave(100, 1)}});
  EXPECT_EQ(a.diagnostics().count(Stat::frames_closed_by_outer_exit), 2u);
  EXPECT_EQ(a.openCalls(), 0u);
  EXPECT_EQ(a.calls(), 3u);
  // Shapes are kept: [1,{[2,{[3]}]}] has depth 3.
  ASSERT_EQ(a.shapes().size(), 4u);
  EXPECT_EQ(a.shapes().depth(3), 3u);
  // Only the call that saw its exit is measured.
  EXPECT_EQ(a.functionStates()[1].stats.moments.count(), 1u);
  EXPECT_EQ(a.functionStates()[2].stats.moments.count(), 0u);
  EXPECT_EQ(a.functionStates()[2].calls, 1u);
  // Every DAG node has its statistics, the unmeasured ones too (empty).
  ASSERT_EQ(a.dag().size(), 4u);
  ASSERT_EQ(a.dagStats().size(), 4u);
  EXPECT_EQ(a.dagStats()[2].count, 0u); // [2:(3)], closed without its exit
  EXPECT_EQ(a.dagStats()[3].count, 1u); // [1:(2)]
}

TEST(ThreadAnalyzerTest, GapDiscardsOpenCallsAndExpectsTheirExits) {
  ThreadAnalyzer a;
  a.onEvents({{enter(10, 1), enter(20, 2), enter(21, 5), leave(22, 5)}});
  a.onGapMarker(7);
  a.onEvents({{leave(40, 2), leave(50, 1), enter(60, 4), leave(70, 4)}});
  const Diagnostics& d = a.diagnostics();
  EXPECT_EQ(d.count(Stat::gap_markers), 1u);
  EXPECT_EQ(d.count(Stat::events_dropped), 7u);
  EXPECT_EQ(d.count(Stat::frames_discarded_at_gap), 2u);
  EXPECT_EQ(d.count(Stat::exits_after_gap), 2u);
  EXPECT_EQ(d.count(Stat::unmatched_exits), 0u);
  // Calls finished before the gap and after it are analysed; the cut ones are not.
  EXPECT_NE(leafOf(a, 5), kNullShape);
  EXPECT_NE(leafOf(a, 4), kNullShape);
  EXPECT_EQ(a.shapes().size(), 3u);
  EXPECT_EQ(a.calls(), 2u);
}

TEST(ThreadAnalyzerTest, MissingBatchIsAGap) {
  ThreadAnalyzer a;
  const std::vector<Event> first{enter(10, 1), enter(20, 2)};
  const std::vector<Event> third{leave(50, 1)};
  a.onBatch(0, first);
  a.onBatch(2, third);
  EXPECT_EQ(a.diagnostics().count(Stat::batch_sequence_gaps), 1u);
  EXPECT_EQ(a.diagnostics().count(Stat::frames_discarded_at_gap), 2u);
  EXPECT_EQ(a.diagnostics().count(Stat::exits_after_gap), 1u);
  a.onBatch(2, {}); // the same batch again: read once
  EXPECT_EQ(a.diagnostics().count(Stat::duplicate_batches), 1u);
  a.onBatch(1, {}); // the missing one, late
  EXPECT_EQ(a.diagnostics().count(Stat::batch_sequence_regressions), 1u);
}

TEST(ThreadAnalyzerTest, ClockRegressionIsClamped) {
  ThreadAnalyzer a;
  a.onEvents({{enter(100, 1), leave(90, 1)}});
  EXPECT_EQ(a.diagnostics().count(Stat::timestamp_regressions), 1u);
  EXPECT_EQ(a.functionStates()[1].stats.moments.max(), 0u);
}

TEST(ThreadAnalyzerTest, UnwindExitFinishesTheCall) {
  ThreadAnalyzer a;
  a.onEvents({{enter(10, 1), enter(20, 2), Event{30, 2, EventKind::UnwindExit},
               Event{40, 1, EventKind::UnwindExit}}});
  EXPECT_EQ(a.diagnostics().count(Stat::unwind_exits), 2u);
  EXPECT_EQ(a.calls(), 2u);
  EXPECT_EQ(a.diagnostics().count(Stat::unmatched_exits), 0u);
}

TEST(ThreadAnalyzerTest, AbandonedExitFinishesTheCallMeasured) {
  ThreadAnalyzer a;
  a.onEvents({{enter(10, 1), enter(20, 2), enter(25, 3), Event{30, 3, EventKind::AbandonedExit},
               Event{30, 2, EventKind::AbandonedExit}, enter(35, 2), leave(38, 2),
               leave(40, 1)}});
  EXPECT_EQ(a.diagnostics().count(Stat::abandoned_exits), 2u);
  EXPECT_EQ(a.diagnostics().count(Stat::frames_closed_by_outer_exit), 0u);
  EXPECT_EQ(a.calls(), 4u);
  // Both calls of 2 are measured: 10 ns until the jump, 3 ns after it.
  EXPECT_EQ(a.functionStates()[2].stats.moments.count(), 2u);
  EXPECT_EQ(a.functionStates()[2].stats.moments.max(), 10u);
}

TEST(ThreadAnalyzerTest, OpenCallsAtTheEndAreCounted) {
  ThreadAnalyzer a;
  a.onEvents({{enter(10, 1), enter(20, 2)}});
  a.onEnd();
  EXPECT_EQ(a.diagnostics().count(Stat::frames_open_at_thread_end), 2u);
  EXPECT_EQ(a.calls(), 0u);
}

TEST(ThreadAnalyzerTest, HugeFunctionIdIsAGap) {
  ThreadAnalyzer a;
  a.onEvents({{enter(10, 1), enter(20, kMaxFunctionId), leave(30, 1)}});
  EXPECT_EQ(a.diagnostics().count(Stat::function_ids_out_of_range), 1u);
  EXPECT_EQ(a.diagnostics().count(Stat::frames_discarded_at_gap), 1u);
  EXPECT_EQ(a.calls(), 0u);
}

TEST(ThreadAnalyzerTest, LongLoopKeepsOneChildEntryPerDistinctShape) {
  ThreadAnalyzer a;
  std::vector<testing::Call> children;
  for (int i = 0; i < 10000; ++i)
    children.push_back(call(static_cast<uint32_t>(2 + i % 3)));
  a.onEvents(eventsOf({call(1, children)}));
  ASSERT_EQ(a.shapes().size(), 5u);
  EXPECT_EQ(a.shapes().children(4).size(), 3u);
}

// A DAG node's children may still wait in the queue of nodes to intern when their parent
// finishes, or when the queue is interned while the parent is open; fed in spans of 7 events, a
// parent of 1000 children (of two kinds, each with a child) sees both, many times.
TEST(ThreadAnalyzerTest, DagChildrenKeepTheirNodesAcrossQueueFlushes) {
  ThreadAnalyzer a;
  std::vector<testing::Call> children;
  for (int i = 0; i < 1000; ++i)
    children.push_back(i % 3 == 0 ? call(2, {call(4)}) : call(3, {call(4), call(4)}));
  const std::vector<Event> events = eventsOf({call(1, children), call(1, children)});
  for (size_t at = 0; at < events.size(); at += 7)
    a.onEvents(std::span(events).subspan(at, std::min<size_t>(7, events.size() - at)));
  const ShapeTable& dag = a.dag();
  ASSERT_EQ(dag.size(), 5u); // null, [4], [2:(4)], [3:(4,4)], [1:(...)]
  const ShapeId two = 2, three = 3, main_node = 4;
  EXPECT_THAT(dag.children(two), ::testing::ElementsAre(1u));
  EXPECT_THAT(dag.children(three), ::testing::ElementsAre(1u, 1u));
  const auto main_children = dag.children(main_node);
  ASSERT_EQ(main_children.size(), 1000u);
  for (size_t i = 0; i < main_children.size(); ++i)
    ASSERT_EQ(main_children[i], i % 3 == 0 ? two : three) << "child " << i;
  EXPECT_EQ(a.dagStats()[main_node].count, 2u);
  EXPECT_EQ(a.dagStats()[three].count, 2u * 666u);
}

// Shapes come from DAG nodes; once the DAG is full, a call whose node is new (or has such a
// child) is not interned, is counted, and still gets its shape from its children's.
TEST(ThreadAnalyzerTest, FullDagStillGivesEveryCallItsShape) {
  ThreadAnalyzerSettings small;
  small.max_dag_nodes = 3; // null, [2], [3], then one more before the DAG is full
  std::vector<testing::Call> calls;
  for (int i = 0; i < 3; ++i) {
    calls.push_back(call(1, {call(2), call(3)}));
    calls.push_back(call(1, {call(3), call(2), call(3)})); // the same shape, a new sequence
    calls.push_back(call(4, {call(1, {call(2)})}));       // a node whose child is not interned
  }
  const std::vector<Event> events = eventsOf(calls);
  ThreadAnalyzer full(small), unlimited;
  full.onEvents(events);
  unlimited.onEvents(events);

  ASSERT_EQ(full.dag().size(), 4u); // null, [2], [3], [1:(2,3)]
  EXPECT_EQ(full.dagStats()[3].count, 3u);
  EXPECT_EQ(full.dagStats()[1].count, 9u); // [2]: interned before the DAG filled up
  // Not interned: 3 x [1:(3,2,3)], 3 x [1:(2)] and their 3 parents [4:(...)].
  EXPECT_EQ(full.diagnostics().count(Stat::dag_calls_not_interned), 9u);
  EXPECT_EQ(unlimited.diagnostics().count(Stat::dag_calls_not_interned), 0u);
  ASSERT_EQ(full.shapes().size(), unlimited.shapes().size());
  for (ShapeId id = 1; id < full.shapes().size(); ++id) {
    EXPECT_EQ(full.shapes().function(id), unlimited.shapes().function(id));
    EXPECT_THAT(full.shapes().children(id),
                ::testing::ElementsAreArray(unlimited.shapes().children(id)));
    EXPECT_EQ(full.shapeStates()[id].calls, unlimited.shapeStates()[id].calls);
  }
  // null, [2], [3], [1,{[2],[3]}], [1,{[2]}] and [4,{[1,{[2]}]}].
  EXPECT_EQ(full.shapes().size(), 6u);
}

// Most leaf calls are finished straight from their adjacent enter and exit, without a frame; fed
// one event at a time (so no enter ever has its exit beside it) every call takes the general
// path. Both must give the same shapes, DAG, statistics, timeline and outliers.
TEST(ThreadAnalyzerTest, LeafCallsGiveTheSameResultsWithOrWithoutTheirExitAlongside) {
  std::vector<testing::Call> calls;
  for (int i = 0; i < 200; ++i) {
    const uint64_t own = 20 + static_cast<uint64_t>(i * 53 % 89) + (i == 150 ? 5000 : 0);
    calls.push_back(call(1, {call(2, {}, own), call(3, {call(2), call(4, {}, own)}), call(2)}));
    calls.push_back(call(4, {}, own));
  }
  const std::vector<Event> events = eventsOf(calls);
  ThreadAnalyzer whole, one_by_one;
  whole.onEvents(events);
  for (const Event& event : events)
    one_by_one.onEvents({&event, 1});
  for (ThreadAnalyzer* a : {&whole, &one_by_one})
    a->onEnd();

  EXPECT_EQ(whole.calls(), one_by_one.calls());
  ASSERT_EQ(whole.shapes().size(), one_by_one.shapes().size());
  for (ShapeId id = 1; id < whole.shapes().size(); ++id) {
    EXPECT_EQ(whole.shapes().function(id), one_by_one.shapes().function(id));
    EXPECT_THAT(whole.shapes().children(id),
                ::testing::ElementsAreArray(one_by_one.shapes().children(id)));
    const Moments& m = whole.shapeStates()[id].stats.moments;
    const Moments& n = one_by_one.shapeStates()[id].stats.moments;
    EXPECT_EQ(m.count(), n.count());
    EXPECT_EQ(m.mean(), n.mean());
    EXPECT_EQ(m.m2(), n.m2());
    EXPECT_EQ(whole.timeline().cells(id), one_by_one.timeline().cells(id));
  }
  ASSERT_EQ(whole.dag().size(), one_by_one.dag().size());
  for (ShapeId id = 1; id < whole.dag().size(); ++id) {
    EXPECT_THAT(whole.dag().children(id), ::testing::ElementsAreArray(one_by_one.dag().children(id)));
    EXPECT_EQ(whole.dagStats()[id].count, one_by_one.dagStats()[id].count);
    EXPECT_TRUE(whole.dagStats()[id].sum_squares == one_by_one.dagStats()[id].sum_squares);
  }
  const auto functions = whole.functionStates(), others = one_by_one.functionStates();
  ASSERT_EQ(functions.size(), others.size());
  for (const auto& [f, state] : functions) {
    EXPECT_EQ(state.calls, others.at(f).calls);
    EXPECT_EQ(state.outliers, others.at(f).outliers);
    EXPECT_EQ(state.stats.moments.m2(), others.at(f).stats.moments.m2());
  }
  EXPECT_EQ(functions.at(4).calls, 400u);
  const auto outliers = whole.outliers();
  ASSERT_EQ(outliers.size(), one_by_one.outliers().size());
  ASSERT_FALSE(outliers.empty());
  // The 5000 ns leaf call in the 151st main, and that main itself.
  EXPECT_TRUE(std::any_of(outliers.begin(), outliers.end(), [](const Outlier& o) {
    return o.function == 2 && o.duration_ns > 5000 && o.function_outlier;
  }));
  EXPECT_EQ(whole.diagnostics(), one_by_one.diagnostics());
}

// A function's moments are its shape's while it has one shape, then its own: either way they
// are Welford's over all its measured calls, as a two-pass computation gives them.
TEST(ThreadAnalyzerTest, FunctionMomentsCoverEveryShapeOfTheFunction) {
  ThreadAnalyzer a;
  std::vector<testing::Call> calls;
  std::vector<double> durations; // of function 1
  for (int i = 0; i < 300; ++i) {
    const uint64_t own = 50 + static_cast<uint64_t>(i * 37 % 101);
    if (i < 100 || i % 4 != 0) {
      calls.push_back(call(1, {}, own));
      durations.push_back(static_cast<double>(own));
    } else {
      calls.push_back(call(1, {call(2, {}, 5)}, own)); // a second shape, from the 101st call
      durations.push_back(static_cast<double>(own + 5));
    }
  }
  a.onEvents(eventsOf(calls));
  double mean = 0, m2 = 0;
  for (double d : durations)
    mean += d / static_cast<double>(durations.size());
  for (double d : durations)
    m2 += (d - mean) * (d - mean);
  const Moments m = a.functionStates()[1].stats.moments;
  EXPECT_EQ(m.count(), 300u);
  EXPECT_NEAR(m.mean(), mean, 1e-9 * mean);
  EXPECT_NEAR(m.variance(), m2 / 300.0, 1e-9 * m2 / 300.0);
  EXPECT_EQ(a.shapeStates()[leafOf(a, 1)].stats.moments.count(), 250u);
}

// The 20 calls of the outlier test below, the 1000 ns one made so by a 890 ns wait of the tracer
// (lossless recording, ring full) inside it, placed exactly between its events as the runtime puts
// it; and a leaf with a wait between its enter and exit. No outlier: the tracer's time is not the
// program's. The open calls' starts move later by the wait, so their durations exclude it.
TEST(ThreadAnalyzerTest, TracerWaitsAreTakenOutOfTheOpenCalls) {
  std::vector<testing::Call> calls;
  for (int i = 0; i < 20; ++i)
    calls.push_back(call(1, {}, i % 2 == 0 ? 100 : 110));
  calls.push_back(call(2, {call(1, {}, 100)}, 10));
  std::vector<Event> events = eventsOf(calls);
  const size_t leaf_exit = events.size() - 2; // the inner call's exit
  // 890 ns after the inner call's enter: every event from its exit on is 890 ns later.
  for (size_t i = leaf_exit; i < events.size(); ++i)
    events[i].timestamp += 890;
  const uint64_t wait_start = events[leaf_exit - 1].timestamp;
  const std::vector<wire::TracerWait> waits{{uint32_t(leaf_exit), wait_start, 890}};
  ThreadAnalyzer a;
  a.onBatch(0, events, waits);
  a.onEnd();
  EXPECT_THAT(a.outliers(), ::testing::IsEmpty());
  EXPECT_EQ(a.functionStates()[1].stats.moments.max(), 110u);
  EXPECT_EQ(a.functionStates()[2].stats.moments.max(), 110u); // 10 of its own, 100 of its child's
  EXPECT_EQ(a.diagnostics().count(Stat::tracer_waits), 1u);
  EXPECT_EQ(a.diagnostics().count(Stat::tracer_wait_ns), 890u);
}

// 20 calls of 100 or 110 ns (mean 105, sd 5), then one of 1000 ns: an outlier against both its
// function and its shape ("same work, slower"). Then a call of the same function with a child
// that takes long: an outlier for the function only ("did more work": a new shape).
TEST(ThreadAnalyzerTest, OutliersAgainstFunctionAndShape) {
  ThreadAnalyzer a;
  std::vector<testing::Call> calls;
  for (int i = 0; i < 20; ++i)
    calls.push_back(call(1, {}, i % 2 == 0 ? 100 : 110));
  calls.push_back(call(1, {}, 1000));
  calls.push_back(call(1, {call(2, {}, 2000)}, 100));
  a.onEvents(eventsOf(calls));
  const auto outliers = a.outliers();
  ASSERT_EQ(outliers.size(), 2u);
  // The most time lost first: 2100 ns lost 1952 ns over its function's mean of 147.6 (only
  // about 10 sd, the statistics now including the 1000 ns call); 1000 ns lost 895 ns over 105
  // (179 sd).
  const Outlier& more_work = outliers[0];
  EXPECT_TRUE(more_work.function_outlier);
  EXPECT_FALSE(more_work.shape_outlier);
  EXPECT_EQ(more_work.duration_ns, 2100u);
  EXPECT_EQ(more_work.function_count, 21u);
  EXPECT_DOUBLE_EQ(excessNs(more_work), 2100.0 - more_work.function_mean);
  const Outlier& slower = outliers[1];
  EXPECT_TRUE(slower.function_outlier);
  EXPECT_TRUE(slower.shape_outlier);
  EXPECT_EQ(slower.duration_ns, 1000u);
  EXPECT_DOUBLE_EQ(slower.function_mean, 105.0);
  EXPECT_DOUBLE_EQ(slower.function_sd, 5.0);
  EXPECT_EQ(slower.function_count, 20u);
  EXPECT_DOUBLE_EQ(slower.score, (1000.0 - 105.0) / 5.0);
  EXPECT_DOUBLE_EQ(excessNs(slower), 1000.0 - 105.0);
  EXPECT_GT(slower.score, more_work.score);
  EXPECT_EQ(slower.start_ns, 1000u + 20u * 105u);
  EXPECT_EQ(a.functionStates()[1].outliers, 2u);
}

// main(9) calls f(1) 20 times, then once with a slow child (2100 ns, judged from the DAG queue
// only after main returned); after main, an exit-time call of f takes 5000 ns. Both are outliers;
// the exit-time one is marked at exit and listed after the run's, though it lost more time.
TEST(ThreadAnalyzerTest, OutliersAfterMainReturnedAreMarkedAtExitAndListedLast) {
  ThreadAnalyzer a;
  a.setMainFunction(9);
  std::vector<testing::Call> in_main;
  for (int i = 0; i < 20; ++i)
    in_main.push_back(call(1, {}, i % 2 == 0 ? 100 : 110));
  in_main.push_back(call(1, {call(2, {}, 2000)}, 100));
  a.onEvents(eventsOf({call(9, in_main), call(1, {}, 5000)}));
  const auto outliers = a.outliers();
  ASSERT_EQ(outliers.size(), 2u);
  EXPECT_EQ(outliers[0].duration_ns, 2100u);
  EXPECT_FALSE(outliers[0].at_exit);
  EXPECT_EQ(outliers[1].duration_ns, 5000u);
  EXPECT_TRUE(outliers[1].at_exit);
  EXPECT_GT(excessNs(outliers[1]), excessNs(outliers[0]));
}

// Without main known (a library traced alone), nothing is at exit.
TEST(ThreadAnalyzerTest, WithoutMainNoOutlierIsAtExit) {
  ThreadAnalyzer a;
  std::vector<testing::Call> calls;
  for (int i = 0; i < 20; ++i)
    calls.push_back(call(1, {}, i % 2 == 0 ? 100 : 110));
  a.onEvents(eventsOf({call(9, calls), call(1, {}, 5000)}));
  ASSERT_EQ(a.outliers().size(), 1u);
  EXPECT_FALSE(a.outliers()[0].at_exit);
}

// Calls with children wait in a queue before they are accounted; a leaf call of the same
// function is still judged against all the calls that finished before it.
TEST(ThreadAnalyzerTest, LeafCallIsJudgedAfterTheQueuedCallsOfItsFunction) {
  ThreadAnalyzer a;
  std::vector<testing::Call> calls{call(1, {}, 105)}; // its leaf shape exists from here on
  for (int i = 0; i < 20; ++i)
    calls.push_back(call(1, {call(2, {}, 10)}, i % 2 == 0 ? 90 : 100));
  calls.push_back(call(1, {}, 1000));
  a.onEvents(eventsOf(calls));
  const auto outliers = a.outliers();
  ASSERT_EQ(outliers.size(), 1u);
  EXPECT_EQ(outliers[0].duration_ns, 1000u);
  EXPECT_TRUE(outliers[0].function_outlier);
  EXPECT_FALSE(outliers[0].shape_outlier); // its shape's second call
  EXPECT_EQ(outliers[0].function_count, 21u);
  EXPECT_DOUBLE_EQ(outliers[0].function_mean, 105.0);
  EXPECT_NEAR(outliers[0].function_sd, std::sqrt(20.0 * 25.0 / 21.0), 1e-12);
}

TEST(ThreadAnalyzerTest, OutlierListIsBounded) {
  ThreadAnalyzerSettings options;
  options.max_outliers = 3;
  options.outlier_min_samples = 2;
  ThreadAnalyzer a(options);
  std::vector<testing::Call> calls;
  for (int i = 0; i < 200; ++i)
    calls.push_back(call(1, {}, i % 10 == 9 ? 1000u + static_cast<uint64_t>(i) : 100u + i % 2));
  a.onEvents(eventsOf(calls));
  const auto outliers = a.outliers();
  ASSERT_EQ(outliers.size(), 3u);
  EXPECT_GE(outliers[0].score, outliers[1].score);
  EXPECT_GE(outliers[1].score, outliers[2].score);
}

TEST(OccurrenceTimelineTest, CoarsensAndConservesCountsAndTime) {
  OccurrenceTimeline t(4);
  t.start(0);
  t.record(1, 0, 10);  // bin 0 at shift 0... coarsens as needed
  t.record(1, 10, 20);
  t.record(2, 0, 100);
  uint64_t count = 0, busy = 0;
  for (const auto& cell : t.cells(1)) {
    count += cell.count;
    busy += cell.busy_ns;
  }
  EXPECT_EQ(count, 2u);
  EXPECT_EQ(busy, 20u);
  // 100 ns over at most 4 bins: bins of 32 ns (shift 5) from bin 0.
  EXPECT_EQ(t.shift(), 5u);
  ASSERT_EQ(t.cells(2).size(), 4u);
  EXPECT_EQ(t.cells(2)[0], (TimelineCell{0, 1, 32}));
  EXPECT_EQ(t.cells(2)[3], (TimelineCell{3, 0, 4}));
  EXPECT_EQ(t.cells(1).size(), 1u);
  EXPECT_EQ(t.cells(1)[0], (TimelineCell{0, 2, 20}));
  t.coarsenTo(7);
  ASSERT_EQ(t.cells(2).size(), 1u);
  EXPECT_EQ(t.cells(2)[0], (TimelineCell{0, 1, 100}));
}

} // namespace
} // namespace shapetrace::analyzer
