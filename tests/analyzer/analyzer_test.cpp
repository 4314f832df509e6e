// The Analyzer on StreamItems: names from module tables, Tables 1-2 per thread and cumulative,
// clusters across threads, the JSON model, determinism, and parallel == sequential byte for byte.
#include "analyzer.h"
#include "model_json.h"
#include "scope.h"
#include "thread_analyzer.h"
#include "thread_fold.h"
#include "trace_builder.h"
#include "support/memory.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>
#include <set>

namespace shapetrace::analyzer {
namespace {

using ::testing::ElementsAre;
using testing::batchItem;
using testing::call;
using testing::Call;
using testing::eventsOf;

wire::StreamItem moduleTable(uint64_t process) {
  wire::ModuleTable table;
  table.module_id = "test";
  for (uint32_t id : {1u, 2u, 3u, 4u})
    table.functions.push_back(
        wire::FunctionInfo{id, "_Z2f" + std::to_string(id), "f" + std::to_string(id) + "()",
                           "test.cpp", 10 * id});
  return wire::StreamItem{process, table};
}

// Thread 1: main(1){a(2), b(3){a}}; thread 2: main{a}, c(4){a}; thread 3: like thread 1.
std::vector<wire::StreamItem> threeThreads() {
  std::vector<wire::StreamItem> items{moduleTable(7)};
  const Call t1 = call(1, {call(2), call(3, {call(2)})});
  items.push_back(wire::StreamItem{7, wire::ThreadStart{1, 0, "first"}});
  items.push_back(batchItem(7, 1, 0, eventsOf({t1})));
  items.push_back(batchItem(7, 2, 0, eventsOf({call(1, {call(2)}), call(4, {call(2)})})));
  items.push_back(batchItem(7, 3, 0, eventsOf({t1})));
  items.push_back(wire::StreamItem{7, wire::ThreadEnd{1, 99, 0, 0, 1}});
  return items;
}

Analysis run(const std::vector<wire::StreamItem>& items, unsigned jobs = 1,
             AnalysisSettings settings = {}) {
  Analyzer analyzer(settings, jobs);
  for (const auto& item : items)
    analyzer.consume(item);
  analyzer.finish();
  return analyzer.snapshot();
}

TEST(AnalyzerTest, TablesOneAndTwoPerThreadAndCumulative) {
  const Analysis a = run(threeThreads());
  ASSERT_EQ(a.threads.size(), 3u);
  EXPECT_EQ(a.threads[0].name, "first");
  EXPECT_TRUE(a.threads[0].ended);
  EXPECT_FALSE(a.threads[1].ended);
  // Shapes (leaves not counted): thread 1 has b{a} and main{a,b{a}}; thread 2 main{a}, c{a}.
  auto t1 = [&](size_t i) { return a.threads[i].counts; };
  EXPECT_EQ(t1(0).shapes_in_thread, 2u);
  EXPECT_EQ(t1(0).additional_shapes, 2u);
  EXPECT_EQ(t1(0).all_shapes, 2u);
  EXPECT_EQ(t1(1).shapes_in_thread, 2u);
  EXPECT_EQ(t1(1).additional_shapes, 2u);
  EXPECT_EQ(t1(1).all_shapes, 4u);
  EXPECT_EQ(t1(2).shapes_in_thread, 2u);
  EXPECT_EQ(t1(2).additional_shapes, 0u);
  EXPECT_EQ(t1(2).all_shapes, 4u);
  // Clusters: {a} (trivial), {b{a}}, {main{a}, main{a,b{a}}} (distance 1.0), {c{a}}.
  ASSERT_EQ(a.clustering.clusters.size(), 4u);
  EXPECT_EQ(a.clustering.clusters[2].shapes.size(), 2u);
  EXPECT_EQ(a.clustering.clusters[2].max_distance, 1.0);
  EXPECT_EQ(t1(0).clusters_in_thread, 2u);
  EXPECT_EQ(t1(0).all_clusters, 2u);
  EXPECT_EQ(t1(1).clusters_in_thread, 2u);
  EXPECT_EQ(t1(1).additional_clusters, 1u);
  EXPECT_EQ(t1(1).all_clusters, 3u);
  EXPECT_EQ(t1(2).additional_clusters, 0u);
  EXPECT_EQ(t1(2).all_clusters, 3u);
  // Names come from the module table.
  ASSERT_EQ(a.functions.size(), 4u);
  EXPECT_EQ(a.functions[0].name, "f1()");
  EXPECT_EQ(a.functions[0].mangled, "_Z2f1");
  EXPECT_EQ(a.functions[0].line, 10u);
  EXPECT_EQ(a.functions[1].calls, 6u); // a: twice on each thread
  EXPECT_EQ(a.calls, 4u + 4u + 4u);
  EXPECT_EQ(a.diagnostics.count(Stat::unknown_function_ids), 0u);
}

// Two processes of one program: f5 left out by a rule and f6 by the minimum size in both tables,
// f2 throttled in both; f3 throttled in one, its count known from that process's end.
TEST(AnalyzerTest, FunctionsLeftOutAreCountedOncePerFunction) {
  std::vector<wire::StreamItem> items;
  for (uint64_t process : {7u, 8u}) {
    wire::StreamItem table = moduleTable(process);
    auto& functions = std::get<wire::ModuleTable>(table.body).functions;
    functions.push_back({5, "_Z2f5", "f5()", "test.cpp", 50, wire::Exclusion::kByRule});
    functions.push_back({6, "_Z2f6", "f6()", "test.cpp", 60, wire::Exclusion::kBySize});
    items.push_back(table);
    wire::StreamItem batch = batchItem(process, 1, 0, eventsOf({call(1, {call(2), call(3)})}));
    auto& throttles = std::get<wire::EventBatch>(batch.body).throttles;
    throttles.push_back({2, 100 + process, 2, 100});
    if (process == 7) throttles.push_back({4, 200, 3, 100});
    items.push_back(batch);
  }
  wire::ProcessEnd end;
  end.throttled_calls = {{2, 40}, {3, 9}};
  items.push_back(wire::StreamItem{7, end});
  const Analysis a = run(items);

  ASSERT_EQ(a.excluded.size(), 2u);
  EXPECT_EQ(a.functions[a.excluded[0].function].name, "f5()");
  EXPECT_EQ(a.excluded[0].by, wire::Exclusion::kByRule);
  EXPECT_EQ(a.functions[a.excluded[1].function].name, "f6()");
  EXPECT_EQ(a.excluded[1].by, wire::Exclusion::kBySize);
  EXPECT_EQ(a.functions[a.excluded[0].function].calls, 0u);
  // f2 in both processes, then f3: three marks, two functions.
  ASSERT_EQ(a.throttled.size(), 3u);
  EXPECT_EQ(throttledFunctionCount(a), 2u);
  EXPECT_EQ(filteredLine(a), "FILTERED: 2 functions filtered out at build, 2 throttled (calls the "
                             "recording does not hold; see docs/analyzer.md, \"Filtered and "
                             "throttled functions\")");
  const auto model = toJson(a);
  EXPECT_EQ(model["summary"]["functions_filtered_at_build"], 2);
  EXPECT_EQ(model["summary"]["functions_throttled"], 2);
  EXPECT_EQ(model["excluded"][0]["by"], "rule");
  EXPECT_EQ(model["excluded"][1]["by"], "size");
  EXPECT_EQ(model["excluded"][1]["function"], a.excluded[1].function);
}

// A module table that names main (mangled "main") lets each of the process's threads mark the
// outliers that started after main returned: here an exit-time call of f2 of 5000 ns after 20
// calls of 100-110 ns inside main. The mark reaches the model's JSON.
TEST(AnalyzerTest, OutliersAfterMainAreMarkedAtExitThroughTheModuleTable) {
  wire::StreamItem table = moduleTable(7);
  std::get<wire::ModuleTable>(table.body).functions.push_back({5, "main", "main", "test.cpp", 1});
  std::vector<Call> in_main;
  for (int i = 0; i < 20; ++i)
    in_main.push_back(call(2, {}, i % 2 == 0 ? 100 : 110));
  const Analysis a =
      run({table, batchItem(7, 1, 0, eventsOf({call(5, in_main), call(2, {}, 5000)}))});
  ASSERT_EQ(a.outliers.size(), 1u);
  EXPECT_TRUE(a.outliers[0].at_exit);
  const auto model = toJson(a);
  EXPECT_EQ(model["outliers"][0].value("at_exit", false), true) << model["outliers"].dump();
}

TEST(AnalyzerTest, ARecordingThatLeftNothingOutHasNoFilteredHeadline) {
  const Analysis a = run(threeThreads());
  EXPECT_TRUE(a.excluded.empty());
  EXPECT_EQ(filteredLine(a), "");
  const auto model = toJson(a);
  EXPECT_FALSE(model.contains("excluded"));
  EXPECT_EQ(model["summary"]["functions_filtered_at_build"], 0);
}

TEST(AnalyzerTest, WithoutClusteringTheShapesAreKeptAndNotClustered) {
  // What `explain` asks for: shapes and calls as with clustering, no cluster, ribbon or table.
  AnalysisSettings settings;
  settings.cluster_shapes = false;
  const Analysis a = run(threeThreads(), 1, settings);
  const Analysis clustered = run(threeThreads());
  EXPECT_EQ(a.shapes.size(), clustered.shapes.size());
  EXPECT_EQ(a.calls, clustered.calls);
  EXPECT_TRUE(a.clustering.clusters.empty());
  EXPECT_EQ(a.clustering.cluster_of_shape,
            std::vector<ClusterId>(clustered.shapes.size(), kNoCluster));
  EXPECT_TRUE(a.ribbons.empty());
  ASSERT_EQ(a.threads.size(), 3u);
  EXPECT_EQ(a.threads[1].counts.all_shapes, 0u); // Tables 1-2 not counted
  EXPECT_TRUE(a.threads[1].ribbons.empty());
}

TEST(AnalyzerTest, UnknownFunctionIdsAreNamedAndCounted) {
  const Analysis a = run({batchItem(1, 1, 0, eventsOf({call(42)}))});
  ASSERT_EQ(a.functions.size(), 1u);
  EXPECT_EQ(a.functions[0].name, "fn#42");
  EXPECT_FALSE(a.functions[0].known);
  EXPECT_EQ(a.diagnostics.count(Stat::unknown_function_ids), 1u);
}

// Crafted input: one call of the largest function id on each of 64 threads, 2 KB of events. Tables
// dense by function id made that 4 GB a thread; now it costs what its events do.
TEST(AnalyzerTest, TheLargestFunctionIdCostsWhatItsEventsCost) {
  const int64_t before = shapetrace::testing::peakRssMib();
  Analyzer analyzer(AnalysisSettings{}, 1);
  analyzer.consume(moduleTable(7));
  for (uint32_t thread = 1; thread <= 64; ++thread)
    analyzer.consume(batchItem(7, thread, 0, eventsOf({call(kMaxFunctionId - 1, {call(1)})})));
  const Analysis analysis = analyzer.snapshot();
  EXPECT_EQ(analysis.calls, 128u);
  EXPECT_EQ(analysis.threads.size(), 64u);
  EXPECT_EQ(analysis.diagnostics.count(Stat::function_ids_out_of_range), 0u);
  if (shapetrace::testing::kPeakRssMeasuresTheCode) {
    EXPECT_LT(shapetrace::testing::peakRssMib() - before, 200);
  }
}

// The thread's end says how many batches it sent: those after the last one received are lost (a
// missing segment, a cut recording), and no later batch would show it.
TEST(AnalyzerTest, ALostTailIsCountedFromTheThreadsEnd) {
  Analyzer analyzer(AnalysisSettings{}, 1);
  for (uint64_t sequence : {0u, 1u, 3u})
    analyzer.consume(batchItem(7, 1, sequence, eventsOf({call(1)})));
  analyzer.consume(wire::StreamItem{7, wire::ThreadEnd{1, 99, 8, 0, 6}});
  analyzer.consume(batchItem(7, 2, 0, eventsOf({call(1)})));
  analyzer.consume(wire::StreamItem{7, wire::ThreadEnd{2, 99, 2, 0, 1}});
  const Analysis analysis = analyzer.snapshot();
  ASSERT_EQ(analysis.threads.size(), 2u);
  EXPECT_EQ(analysis.threads[0].diagnostics.count(Stat::batch_sequence_gaps), 1u);
  EXPECT_EQ(analysis.threads[0].diagnostics.count(Stat::batches_lost_at_end), 2u);
  EXPECT_EQ(analysis.threads[1].diagnostics.count(Stat::batches_lost_at_end), 0u);
  EXPECT_EQ(statSeverity(Stat::batches_lost_at_end), Severity::kDataLoss);
  EXPECT_EQ(inputLossLine(analysis),
            "LOSS: the input is not what was recorded: 2 event batches lost at threads' ends, 1 "
            "event batches missing before others; threads 1 (see diagnostics)");
}

// A duplicated frame or segment repeats batches: each is read once, and the copy is counted.
TEST(AnalyzerTest, ARepeatedBatchIsReadOnceAndCounted) {
  Analyzer analyzer(AnalysisSettings{}, 1);
  for (uint64_t sequence : {0u, 1u, 2u, 1u, 0u, 2u, 3u})
    analyzer.consume(batchItem(7, 1, sequence, eventsOf({call(1, {call(2)})})));
  const Analysis analysis = analyzer.snapshot();
  EXPECT_EQ(analysis.calls, 8u);
  EXPECT_EQ(analysis.events, 16u);
  EXPECT_EQ(analysis.diagnostics.count(Stat::duplicate_batches), 3u);
  EXPECT_EQ(analysis.diagnostics.count(Stat::batch_sequence_regressions), 0u);
  EXPECT_EQ(statSeverity(Stat::duplicate_batches), Severity::kDataLoss);
}

// A batch that comes late (after a later one: counted missing then) is not a repeat.
TEST(AnalyzerTest, ALateBatchIsARegressionNotARepeat) {
  Analyzer analyzer(AnalysisSettings{}, 1);
  for (uint64_t sequence : {0u, 2u, 1u, 1u})
    analyzer.consume(batchItem(7, 1, sequence, eventsOf({call(1)})));
  const Analysis analysis = analyzer.snapshot();
  EXPECT_EQ(analysis.calls, 3u);
  EXPECT_EQ(analysis.diagnostics.count(Stat::batch_sequence_gaps), 1u);
  EXPECT_EQ(analysis.diagnostics.count(Stat::batch_sequence_regressions), 1u);
  EXPECT_EQ(analysis.diagnostics.count(Stat::duplicate_batches), 1u);
}

TEST(AnalyzerTest, GapItemsReachTheirThread) {
  std::vector<wire::StreamItem> items{
      batchItem(1, 5, 0, {{Event{10, 1, EventKind::Enter}}}),
      wire::StreamItem{1, wire::Gap{5, 3, 0, 10, 20}},
      batchItem(1, 5, 1, {{Event{30, 1, EventKind::Exit}}}),
  };
  const Analysis a = run(items);
  EXPECT_EQ(a.diagnostics.count(Stat::gap_markers), 1u);
  EXPECT_EQ(a.diagnostics.count(Stat::events_dropped), 3u);
  EXPECT_EQ(a.diagnostics.count(Stat::exits_after_gap), 1u);
  EXPECT_EQ(a.threads[0].diagnostics.count(Stat::frames_discarded_at_gap), 1u);
}

// A random multi-threaded trace with repetition, gaps and sequence jumps.
std::vector<wire::StreamItem> randomTrace(uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<wire::StreamItem> items{moduleTable(1)};
  std::function<Call(int)> random_call = [&](int depth) {
    Call c = call(static_cast<uint32_t>(rng() % 6 + 1), {}, 10 + rng() % 200);
    const int n = depth > 0 ? static_cast<int>(rng() % 4) : 0;
    for (int i = 0; i < n; ++i) {
      const Call child = random_call(depth - 1);
      for (uint64_t r = rng() % 3 + 1; r > 0; --r)
        c.children.push_back(child);
    }
    return c;
  };
  std::vector<uint64_t> time(6, 1000), sequence(6, 0);
  for (int round = 0; round < 60; ++round) {
    const auto thread = static_cast<uint32_t>(rng() % 6);
    std::vector<Call> calls;
    for (int i = 0; i < 5; ++i)
      calls.push_back(random_call(4));
    auto events = eventsOf(calls, time[thread]);
    time[thread] = events.back().timestamp + 100;
    if (rng() % 10 == 0) items.push_back(wire::StreamItem{1, wire::Gap{thread, 2, 0, 0, 0}});
    if (rng() % 15 == 0) ++sequence[thread];
    items.push_back(batchItem(1, thread, sequence[thread]++, std::move(events)));
  }
  // The process ended as it said (a stream without it would count processes_without_end).
  items.push_back({1, wire::ProcessEnd{*std::max_element(time.begin(), time.end()), 0, 0, 0,
                                       wire::EndReason::Exit, ""}});
  return items;
}

TEST(AnalyzerTest, ParallelEqualsSequentialByteForByte) {
  const auto items = randomTrace(4);
  const std::string sequential = toJson(run(items, 1), {true}).dump();
  EXPECT_EQ(toJson(run(items, 1), {true}).dump(), sequential);
  EXPECT_EQ(toJson(run(items, 3), {true}).dump(), sequential);
  EXPECT_EQ(toJson(run(items, 2), {true}).dump(), sequential);
}

TEST(AnalyzerTest, PlannedWorkersGiveTheSameModel) {
  const auto items = randomTrace(4);
  const std::string sequential = toJson(run(items, 1), {true}).dump();
  Analyzer planned({}, 2);
  planned.planWorkers({{{1, 0}, 10}, {{1, 3}, 50}, {{1, 5}, 20}}); // the others: round-robin
  for (const auto& item : items)
    planned.consume(item);
  planned.finish();
  EXPECT_EQ(toJson(planned.snapshot(), {true}).dump(), sequential);
}

// The threads of a kvstore recording (millions of events, in order of appearance): round-robin
// over two workers gives one 66.5 M and the other 43.7 M; largest first 55.7 M and 54.4 M.
TEST(AnalyzerTest, LargestFirstPlanBalancesTheWorkers) {
  const std::map<ThreadKey, uint64_t> work = {
      {{1, 0}, 2'607}, {{1, 1}, 9'181}, {{1, 2}, 75},     {{1, 3}, 0},      {{1, 4}, 17'241},
      {{1, 5}, 17'260}, {{1, 6}, 17'271}, {{1, 7}, 17'233}, {{1, 8}, 29'264}};
  const auto plan = largestFirstPlan(work, 2);
  ASSERT_EQ(plan.size(), work.size());
  std::vector<uint64_t> load(2, 0);
  for (const auto& [thread, worker] : plan)
    load.at(worker) += work.at(thread);
  EXPECT_EQ(load, (std::vector<uint64_t>{29'264 + 17'241 + 9'181,
                                          17'271 + 17'260 + 17'233 + 2'607 + 75}));
  EXPECT_EQ(largestFirstPlan(work, 1), (std::map<ThreadKey, size_t>{
                                           {{1, 0}, 0}, {{1, 1}, 0}, {{1, 2}, 0}, {{1, 3}, 0},
                                           {{1, 4}, 0}, {{1, 5}, 0}, {{1, 6}, 0}, {{1, 7}, 0},
                                           {{1, 8}, 0}}));
}

TEST(AnalyzerTest, SnapshotDoesNotDisturbTheAnalysis) {
  const auto items = randomTrace(5);
  Analyzer analyzer({}, 2);
  for (size_t i = 0; i < items.size(); ++i) {
    analyzer.consume(items[i]);
    if (i == items.size() / 2) {
      const Analysis half = analyzer.snapshot();
      EXPECT_GT(half.calls, 0u);
    }
  }
  analyzer.finish();
  EXPECT_EQ(toJson(analyzer.snapshot()).dump(), toJson(run(items)).dump());
}

TEST(AnalyzerTest, MergedStatisticsEqualOneThreadsWorth) {
  // The same calls split over two threads or on one thread give the same counts and sums.
  const Call c = call(1, {call(2, {}, 30), call(3, {}, 70)}, 15);
  std::vector<Event> both = eventsOf({c, c, c, c});
  const Analysis one = run({batchItem(1, 1, 0, both)});
  const Analysis two = run({batchItem(1, 1, 0, eventsOf({c, c})), batchItem(1, 2, 0, eventsOf({c, c}))});
  ASSERT_EQ(one.shapes.size(), two.shapes.size());
  for (ShapeId s = 1; s < one.shapes.size(); ++s) {
    EXPECT_EQ(one.shape_states[s].stats.moments.count(), two.shape_states[s].stats.moments.count());
    EXPECT_TRUE(one.shape_states[s].stats.moments.sum() == two.shape_states[s].stats.moments.sum());
    EXPECT_DOUBLE_EQ(one.shape_states[s].stats.moments.mean(),
                     two.shape_states[s].stats.moments.mean());
  }
  ASSERT_EQ(one.dag.size(), two.dag.size());
  EXPECT_EQ(one.dag_stats.back().count, 4u);
  EXPECT_EQ(two.dag_stats.back().count, 4u);
}

TEST(AnalyzerTest, InclusiveTimeIsSummedOverThreadsWithTheBusiestThreadApart) {
  // f(2) recursive on thread 1 (outer call 40 ns), called twice on thread 2 (20 ns each).
  const Analysis a = run({batchItem(1, 1, 0, eventsOf({call(1, {call(2, {call(2, {}, 15)}, 25)})})),
                          batchItem(1, 2, 0, eventsOf({call(1, {call(2, {}, 20), call(2, {}, 20)})}))});
  const auto f = std::find_if(a.functions.begin(), a.functions.end(),
                              [](const FunctionSummary& s) { return s.name == "fn#2"; });
  ASSERT_NE(f, a.functions.end());
  EXPECT_EQ(f->inclusive_ns, 40u + 40u);
  EXPECT_EQ(f->busiest_thread_ns, 40u);
  EXPECT_EQ(f->threads, 2u);
  EXPECT_TRUE(f->stats.moments.sum() == 40u + 15u + 40u);
}

TEST(AnalyzerTest, MergedDagNodesKeepTheirShapes) {
  const Analysis a = run(randomTrace(6), 2);
  ASSERT_GT(a.dag.size(), 10u);
  for (ShapeId node = 1; node < a.dag.size(); ++node) {
    // A node's shape: its function and the set of its children's shapes (Def. 5.2).
    const ShapeId shape = a.dag.payload(node);
    ASSERT_NE(shape, kNullShape) << node;
    EXPECT_EQ(a.shapes.function(shape), a.dag.function(node));
    std::vector<ShapeId> children;
    for (ShapeId child : a.dag.children(node))
      children.push_back(a.dag.payload(child));
    children.resize(canonicalizeChildSet(children));
    const auto expected = a.shapes.children(shape);
    EXPECT_EQ(children, std::vector<ShapeId>(expected.begin(), expected.end())) << node;
  }
}

// The merge takes plain per-thread results: copies of them, made without the analyzers (as a
// result from another process would arrive), merge to the same model.
TEST(AnalyzerTest, ResultsMergeTheSameWithoutTheirAnalyzers) {
  const auto items = randomTrace(7);
  std::map<ThreadKey, ThreadAnalyzer> analyzers;
  std::map<std::pair<uint64_t, uint32_t>, wire::FunctionInfo> functions;
  for (const auto& item : items) {
    if (const auto* batch = std::get_if<wire::EventBatch>(&item.body))
      analyzers[ThreadKey{item.process, batch->thread}].onBatch(batch->sequence, batch->events);
    if (const auto* gap = std::get_if<wire::Gap>(&item.body))
      analyzers[ThreadKey{item.process, gap->thread}].onGapMarker(gap->dropped, gap->after_sequence);
    if (const auto* table = std::get_if<wire::ModuleTable>(&item.body))
      for (const auto& f : table->functions)
        functions[{item.process, f.id}] = f;
  }
  std::map<ThreadKey, ThreadResult> copies;
  for (auto& [key, analyzer] : analyzers) {
    analyzer.onEnd();
    copies.emplace(key, analyzer.result());
  }
  analyzers.clear();
  std::vector<ThreadInput> inputs;
  for (const auto& [key, result] : copies)
    inputs.push_back(ThreadInput{key, "", false, &result});
  const FunctionResolver resolve = [&](uint64_t process, uint32_t id) -> const wire::FunctionInfo* {
    auto it = functions.find({process, id});
    return it == functions.end() ? nullptr : &it->second;
  };
  const Analysis merged = analyze(inputs, resolve, AnalysisSettings{});
  EXPECT_EQ(toJson(merged, {true, true}).dump(), toJson(run(items), {true, true}).dump());
}

// A process whose end never came lost what it had not sent: counted once per process when the
// input ends, never before (a live process is still running); an ExitStatus of a process that
// never connected (key 0) names no process.
TEST(AnalyzerTest, ProcessesWithoutTheirEndAreCountedAsDataLoss) {
  const Call c = call(1, {call(2, {}, 30)}, 15);
  std::vector<wire::StreamItem> items{batchItem(1, 7, 0, eventsOf({c})),
                                      batchItem(2, 8, 0, eventsOf({c})),
                                      {2, wire::ProcessEnd{500, 4, 0, 0, wire::EndReason::Exit, ""}},
                                      {3, wire::ExitStatus{99, 600, -1, 9, false}},
                                      {0, wire::ExitStatus{98, 600, 0, 0, false}}};
  Analyzer analyzer;
  for (const auto& item : items) analyzer.consume(item);
  EXPECT_EQ(analyzer.snapshot().diagnostics.count(Stat::processes_without_end), 0u);
  analyzer.finish();
  // Process 1 never ended; process 3 is known only from record's ExitStatus: killed.
  EXPECT_EQ(analyzer.snapshot().diagnostics.count(Stat::processes_without_end), 2u);
  EXPECT_EQ(statSeverity(Stat::processes_without_end), Severity::kDataLoss);
}

TEST(AnalyzerTest, DagStatisticsAreSummedOnlyWhenAsked) {
  const Call c = call(1, {call(2, {}, 30), call(3, {}, 70)}, 15);
  const std::vector<wire::StreamItem> items{batchItem(1, 1, 0, eventsOf({c, c})),
                                            batchItem(1, 2, 0, eventsOf({c}))};
  AnalysisSettings without;
  without.sum_dag_statistics = false;
  const Analysis counted = run(items, 1, without);
  const Analysis summed = run(items);
  EXPECT_TRUE(counted.dag_stats.empty());
  ASSERT_EQ(summed.dag_stats.size(), summed.dag.size());
  EXPECT_EQ(summed.dag_stats.back().count, 3u);
  // The same model apart from the listing, which cannot be made without the statistics.
  EXPECT_EQ(toJson(counted).dump(), toJson(summed).dump());
  EXPECT_EQ(toJson(counted)["summary"]["dag_nodes"], 3);
  EXPECT_THROW(toJson(counted, {false, true}), std::logic_error);
  EXPECT_EQ(toJson(summed, {false, true})["dag"].size(), 3u);
}

TEST(AnalyzerTest, JsonModelHasEveryPart) {
  const Analysis a = run(threeThreads());
  const auto json = toJson(a, {true});
  EXPECT_EQ(json["format"], "shapetrace-analysis");
  EXPECT_EQ(json["version"], kModelVersion);
  EXPECT_EQ(json["settings"]["cluster_threshold"], 1.5);
  EXPECT_EQ(json["summary"]["shapes"], 5);
  EXPECT_EQ(json["functions"].size(), 4u);
  EXPECT_EQ(json["functions"][0]["name"], "f1()");
  const auto& shape = json["shapes"][2]; // main{a, b{a}}, id 3
  EXPECT_EQ(shape["id"], 3);
  EXPECT_EQ(shape["function"], 0);
  EXPECT_EQ(shape["children"], nlohmann::ordered_json::array({1, 2}));
  EXPECT_EQ(shape["depth"], 3);
  EXPECT_EQ(shape["stats"]["count"], 2);
  EXPECT_EQ(json["clusters"].size(), 4u);
  EXPECT_EQ(json["clusters"][2]["max_distance"], 1.0);
  EXPECT_EQ(json["threads"][1]["table1"]["all_shapes"], 4);
  EXPECT_EQ(json["threads"][1]["table2"]["additional_clusters"], 1);
  EXPECT_FALSE(json["threads"][0]["timeline"].empty());
  EXPECT_EQ(json["diagnostics"].size(), kStatCount);
  EXPECT_EQ(json["diagnostics"][0]["name"], "gap_markers");
  EXPECT_EQ(json["diagnostics"][0]["severity"], "data_loss");
  // Distances: per base function, a square matrix over its shapes.
  const auto& main_distances = json["distances"][0];
  EXPECT_EQ(main_distances["function"], 0);
  EXPECT_EQ(main_distances["shapes"], nlohmann::ordered_json::array({3, 4}));
  EXPECT_EQ(main_distances["matrix"], nlohmann::ordered_json::parse("[[0.0,1.0],[1.0,0.0]]"));
  EXPECT_FALSE(toJson(a).contains("distances"));
}

TEST(AnalyzerTest, TimelineCellsAddUpToTheCalls) {
  const Analysis a = run(randomTrace(6));
  for (const ThreadSummary& thread : a.threads) {
    uint64_t cells_count = 0;
    for (const auto& ribbon : thread.timeline)
      for (const ClusterCells& cluster : ribbon)
        for (const TimelineCell& cell : cluster.cells)
          cells_count += cell.count;
    EXPECT_EQ(cells_count, thread.calls);
  }
}

// A thread-per-request service: `count` threads of process 7, each started, making 12 calls of
// f1{f2} (thread 5's last one slow: an outlier of its shape), and ended, in turn.
std::vector<wire::StreamItem> shortThreads(uint32_t count) {
  std::vector<wire::StreamItem> items{moduleTable(7)};
  for (uint32_t thread = 1; thread <= count; ++thread) {
    const uint64_t start = uint64_t{thread} * 100'000;
    std::vector<Call> calls;
    for (int i = 0; i < 12; ++i)
      calls.push_back(call(1, {call(2)}, thread == 5 && i == 11 ? 50'000 : 10 + (thread + i) % 3));
    if (thread % 2 == 0) calls.push_back(call(3)); // two shapes of threads
    items.push_back({7, wire::ThreadStart{thread, start, "request"}});
    items.push_back(batchItem(7, thread, 0, eventsOf(calls, start + 10)));
    items.push_back({7, wire::ThreadEnd{thread, start + 90'000, 0, 0, 1}});
  }
  return items;
}

uint64_t timelineCalls(const ThreadSummary& thread) {
  uint64_t calls = 0;
  for (const auto& ribbon : thread.timeline)
    for (const ClusterCells& cluster : ribbon)
      for (const TimelineCell& cell : cluster.cells)
        calls += cell.count;
  return calls;
}

// Past the ended threads kept whole, the first to end are folded into their process' entry: the
// model's figures are those of every thread taken apart, and the folded ones are one entry.
TEST(AnalyzerTest, EndedThreadsPastTheKeptOnesAreFolded) {
  const auto items = shortThreads(300);
  AnalysisSettings folding;
  folding.kept_ended_threads = 2;
  const Analysis whole = run(items);
  const Analysis folded = run(items, 1, folding);
  ASSERT_EQ(whole.threads.size(), 300u);
  // The 258th end folds the 256 that ended first, leaving 2; 42 more end after them.
  ASSERT_EQ(folded.threads.size(), 45u);
  const ThreadSummary& entry = folded.threads.back();
  EXPECT_EQ(entry.key, (ThreadKey{7, kFoldedThreadsId}));
  EXPECT_EQ(entry.folded_threads, 256u);
  EXPECT_EQ(entry.name, "256 threads folded");
  EXPECT_TRUE(entry.ended);
  EXPECT_EQ(folded.threads.front().key, (ThreadKey{7, 257}));
  EXPECT_EQ(threadCount(folded), 300u);
  EXPECT_EQ(threadCount(whole), 300u);
  EXPECT_EQ(entry.events, 256u * 48 + 128 * 2);
  EXPECT_EQ(entry.calls, 256u * 24 + 128);
  EXPECT_EQ(timelineCalls(entry), entry.calls);

  EXPECT_EQ(folded.events, whole.events);
  EXPECT_EQ(folded.calls, whole.calls);
  EXPECT_EQ(folded.outliers_found, whole.outliers_found);
  EXPECT_EQ(folded.shapes.size(), whole.shapes.size());
  EXPECT_EQ(folded.dag.size(), whole.dag.size());
  EXPECT_EQ(folded.diagnostics, whole.diagnostics);
  ASSERT_EQ(folded.functions.size(), whole.functions.size());
  for (size_t f = 0; f < whole.functions.size(); ++f) {
    EXPECT_EQ(folded.functions[f].identity, whole.functions[f].identity);
    EXPECT_EQ(folded.functions[f].calls, whole.functions[f].calls);
    const Moments& a = folded.functions[f].stats.moments;
    const Moments& b = whole.functions[f].stats.moments;
    EXPECT_EQ(a.count(), b.count());
    EXPECT_NEAR(a.mean(), b.mean(), 1e-9 * b.mean()); // merged in another order
  }
  // The slow call still names its thread, folded or not.
  ASSERT_FALSE(folded.outliers.empty());
  EXPECT_EQ(whole.outliers.front().thread, 5u);
  EXPECT_EQ(folded.outliers.front().thread, 5u);
  EXPECT_EQ(folded.outliers.front().duration_ns, whole.outliers.front().duration_ns);
  EXPECT_EQ(ThreadLabels(folded)(entry.key), "256 threads folded");
  EXPECT_EQ(toJson(folded)["threads"].back()["folded_threads"], 256);
  EXPECT_EQ(toJson(folded)["summary"]["threads"], 300);
  EXPECT_FALSE(toJson(whole)["threads"].back().contains("folded_threads"));
}

TEST(AnalyzerTest, FoldingGivesTheSameModelWithAnyNumberOfWorkers) {
  const auto items = shortThreads(600);
  AnalysisSettings folding;
  folding.kept_ended_threads = 10;
  const std::string sequential = toJson(run(items, 1, folding), {true}).dump();
  EXPECT_EQ(toJson(run(items, 2, folding), {true}).dump(), sequential);
  EXPECT_EQ(toJson(run(items, 3, folding), {true}).dump(), sequential);
}

// A process per request: each started, its module table, one thread of 12 calls of f1{f2} (and
// one of f3 every other process), ended; every 7th process's end never comes.
std::vector<wire::StreamItem> shortProcesses(uint32_t count) {
  std::vector<wire::StreamItem> items;
  for (uint64_t process = 1; process <= count; ++process) {
    const uint64_t start = process * 100'000;
    items.push_back({process, wire::ProcessStart{}});
    items.push_back(moduleTable(process));
    items.push_back({process, wire::ThreadStart{1, start, "request"}});
    std::vector<Call> calls;
    for (uint64_t i = 0; i < 12; ++i)
      calls.push_back(call(1, {call(2)}, process == 5 && i == 11 ? 50'000 : 10 + (process + i) % 3));
    if (process % 2 == 0) calls.push_back(call(3)); // two shapes of threads
    items.push_back(batchItem(process, 1, 0, eventsOf(calls, start + 10)));
    items.push_back({process, wire::ThreadEnd{1, start + 90'000, 0, 0, 1}});
    if (process % 7 != 0) items.push_back({process, wire::ProcessEnd{}});
  }
  return items;
}

// Processes in the model: each process's key once, the folded processes each counted.
uint64_t processCount(const Analysis& analysis) {
  std::set<uint64_t> keys;
  uint64_t folded = 0;
  for (const ThreadSummary& thread : analysis.threads) {
    if (thread.folded_processes > 0) folded += thread.folded_processes;
    else keys.insert(thread.key.process);
  }
  return keys.size() + folded;
}

// Past the ended processes kept whole, the first to end are folded into one entry, their
// functions merged by identity: the model's figures are those of every process taken apart.
TEST(AnalyzerTest, EndedProcessesPastTheKeptOnesAreFolded) {
  auto items = shortProcesses(700);
  // `record` reaps an orphan late: the ExitStatus of a process folded long before.
  items.push_back({1, wire::ExitStatus{101, 0, 0, 0, false}});
  AnalysisSettings folding;
  folding.kept_ended_processes = 10;
  const Analysis whole = run(items);
  for (unsigned jobs : {1u, 2u}) {
    const Analysis folded = run(items, jobs, folding);
    // 600 processes ended; the 266th end folds the 256 that ended first, the 522nd 256 more.
    const ThreadSummary& entry = folded.threads.back();
    EXPECT_EQ(entry.key, (ThreadKey{kFoldedProcessesKey, kFoldedThreadsId}));
    EXPECT_EQ(entry.folded_processes, 512u);
    EXPECT_EQ(entry.folded_threads, 512u);
    EXPECT_EQ(entry.name, "512 processes folded, 512 threads");
    EXPECT_EQ(folded.threads.size(), 700u - 512 + 1);
    EXPECT_EQ(processCount(folded), 700u);
    EXPECT_EQ(processCount(whole), 700u);
    EXPECT_EQ(threadCount(folded), 700u);
    EXPECT_EQ(folded.events, whole.events);
    EXPECT_EQ(folded.calls, whole.calls);
    EXPECT_EQ(entry.calls * 2, entry.events); // every call ended in its thread
    EXPECT_EQ(folded.outliers_found, whole.outliers_found);
    EXPECT_EQ(folded.shapes.size(), whole.shapes.size());
    EXPECT_EQ(folded.dag.size(), whole.dag.size());
    EXPECT_EQ(folded.diagnostics, whole.diagnostics);
    EXPECT_EQ(folded.diagnostics.count(Stat::processes_without_end), 100u);
    ASSERT_EQ(folded.functions.size(), whole.functions.size());
    for (size_t f = 0; f < whole.functions.size(); ++f) {
      EXPECT_EQ(folded.functions[f].identity, whole.functions[f].identity);
      EXPECT_EQ(folded.functions[f].calls, whole.functions[f].calls);
      EXPECT_EQ(folded.functions[f].threads, whole.functions[f].threads);
    }
    // The slow call still names its process and thread, folded or not.
    ASSERT_FALSE(folded.outliers.empty());
    EXPECT_EQ(whole.outliers.front().process, 5u);
    EXPECT_EQ(folded.outliers.front().process, 5u);
    EXPECT_EQ(folded.outliers.front().thread, 1u);
    EXPECT_EQ(folded.outliers.front().duration_ns, whole.outliers.front().duration_ns);
    EXPECT_EQ(ThreadLabels(folded)(entry.key), "512 processes folded, 512 threads");
    EXPECT_EQ(toJson(folded)["threads"].back()["folded_processes"], 512);
    EXPECT_FALSE(toJson(whole)["threads"].back().contains("folded_processes"));
  }
}

// Memory follows the processes alive: 30,000 short processes, each with its module table, cost
// about what 1,000 do (each kept its folded threads, tables and functions: 7.5 KB a process).
TEST(AnalyzerTest, ThirtyThousandShortProcessesFitInBoundedMemory) {
  const int64_t before = shapetrace::testing::peakRssMib();
  Analyzer analyzer(AnalysisSettings{}, 2);
  for (uint64_t process = 1; process <= 30'000; ++process) {
    const uint64_t start = process * 1000;
    analyzer.consume({process, wire::ProcessStart{}});
    analyzer.consume(moduleTable(process));
    analyzer.consume({process, wire::ThreadStart{1, start, "request"}});
    analyzer.consume(batchItem(process, 1, 0, eventsOf({call(1, {call(2)})}, start + 10)));
    analyzer.consume({process, wire::ThreadEnd{1, start + 50, 4, 0, 1}});
    if (process % 100 != 0) analyzer.consume({process, wire::ProcessEnd{}});
  }
  analyzer.finish();
  const Analysis analysis = analyzer.snapshot();
  EXPECT_EQ(analysis.events, 120'000u);
  EXPECT_EQ(analysis.calls, 60'000u);
  EXPECT_EQ(threadCount(analysis), 30'000u);
  EXPECT_EQ(processCount(analysis), 30'000u);
  EXPECT_EQ(analysis.diagnostics.count(Stat::processes_without_end), 300u);
  EXPECT_EQ(analysis.functions.size(), 2u); // f1 and f2 of every process, by identity
  EXPECT_LE(analysis.threads.size(), 300u + 1000u + 256u + 1u);
  if (shapetrace::testing::kPeakRssMeasuresTheCode) {
    EXPECT_LT(shapetrace::testing::peakRssMib() - before, 80);
  }
}

// Memory follows the threads alive: 100,000 threads that each ended cost what 1,000 kept whole and
// the folded entry do, not 100,000 analyses (about 9 KB each before: 883 MB).
TEST(AnalyzerTest, AHundredThousandShortThreadsFitInBoundedMemory) {
  const int64_t before = shapetrace::testing::peakRssMib();
  Analyzer analyzer(AnalysisSettings{}, 2);
  analyzer.consume(moduleTable(7));
  for (uint32_t thread = 1; thread <= 100'000; ++thread) {
    const uint64_t start = uint64_t{thread} * 1000;
    analyzer.consume({7, wire::ThreadStart{thread, start, "request"}});
    analyzer.consume(batchItem(7, thread, 0, eventsOf({call(1, {call(2)})}, start + 10)));
    analyzer.consume({7, wire::ThreadEnd{thread, start + 50, 4, 0, 1}});
  }
  analyzer.finish();
  const Analysis analysis = analyzer.snapshot();
  EXPECT_EQ(analysis.events, 400'000u);
  EXPECT_EQ(threadCount(analysis), 100'000u);
  EXPECT_LE(analysis.threads.size(), 1000u + 256u + 1u);
  if (shapetrace::testing::kPeakRssMeasuresTheCode) {
    EXPECT_LT(shapetrace::testing::peakRssMib() - before, 150);
  }
}

} // namespace
} // namespace shapetrace::analyzer
