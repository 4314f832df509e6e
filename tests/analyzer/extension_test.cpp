// Extensions of the model (extension.h): the --extensions selection, and the callers extension on
// real stream items through the Analyzer: exact calls and inclusive/exclusive times by caller,
// merged over threads, named by identity, in the JSON model under "extensions".
#include "analyzer.h"
#include "extensions/callers.h"
#include "extensions/run_info.h"
#include "extensions/summaries.h"
#include "model_json.h"
#include "support/memory.h"
#include "thread_fold.h"
#include "trace_builder.h"

#include <gmock/gmock.h>
#include <array>
#include <map>
#include <gtest/gtest.h>

namespace shapetrace::analyzer {
namespace {

using testing::batchItem;
using testing::call;
using testing::eventsOf;
using Json = nlohmann::ordered_json;

std::vector<std::string> names(const std::vector<const ExtensionSpec*>& specs) {
  std::vector<std::string> out;
  for (const ExtensionSpec* spec : specs)
    out.emplace_back(spec->name);
  return out;
}

TEST(ExtensionTest, SelectionByNameAllAndNone) {
  EXPECT_THAT(names(selectExtensions("none")), ::testing::IsEmpty());
  EXPECT_THAT(names(selectExtensions("")), ::testing::IsEmpty());
  EXPECT_THAT(names(selectExtensions("all")),
              ::testing::ElementsAre("run_info", "callers", "flame", "summaries"));
  // Any order in, registration order out; repeats and "none" change nothing.
  EXPECT_THAT(names(selectExtensions("callers,run_info,callers,none")),
              ::testing::ElementsAre("run_info", "callers"));
  try {
    selectExtensions("callers,icicle");
    FAIL() << "an unknown name was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "unknown extension 'icicle' (known: run_info, callers, flame, "
                           "summaries; or all, none)");
  }
}

wire::StreamItem moduleTable(uint64_t process) {
  wire::ModuleTable table;
  table.module_id = "test";
  for (uint32_t id : {1u, 2u, 3u})
    table.functions.push_back(wire::FunctionInfo{id, "_Z1f" + std::to_string(id),
                                                 "f" + std::to_string(id), "t.cpp", id});
  return wire::StreamItem{process, table};
}

Analysis analyze(const std::vector<wire::StreamItem>& items, const std::string& selection,
                 unsigned jobs = 1, const AnalysisSettings& settings = {}) {
  Analyzer analyzer(settings, jobs, makeExtensions(selectExtensions(selection), settings));
  for (const auto& item : items)
    analyzer.consume(item);
  analyzer.finish();
  return analyzer.snapshot();
}

const Json& result(const Analysis& a, const std::string& name) {
  for (const auto& [n, json] : a.extensions)
    if (n == name) return json;
  throw std::logic_error("no result " + name);
}

TEST(ExtensionTest, CallersCountsAndTimesEveryCallByItsCaller) {
  // f1 (self 10) calls f2 (self 4) and f3 (self 6), which calls f2 (self 4): by the trace builder,
  // f2's calls take 4 ns each, f3's 6 + 4, f1's 10 + 4 + 10.
  const auto events = eventsOf({call(1, {call(2, {}, 4), call(3, {call(2, {}, 4)}, 6)}, 10)});
  const Analysis a = analyze({moduleTable(7), batchItem(7, 1, 0, events)}, "callers");
  ASSERT_EQ(a.extensions.size(), 1u);
  const Json& edges = result(a, "callers")["edges"];
  const uint32_t f1 = a.functionIndex(7, 1), f2 = a.functionIndex(7, 2), f3 = a.functionIndex(7, 3);
  auto edge = [&](Json caller, uint32_t callee) -> Json {
    for (const Json& e : edges)
      if (e["caller"] == caller && e["callee"] == callee) return e;
    return nullptr;
  };
  ASSERT_EQ(edges.size(), 4u);
  EXPECT_EQ(edge(nullptr, f1), (Json{{"caller", nullptr}, {"callee", f1}, {"calls", 1},
                                     {"measured", 1}, {"total_ns", 24}, {"self_ns", 10}}));
  EXPECT_EQ(edge(f1, f2), (Json{{"caller", f1}, {"callee", f2}, {"calls", 1}, {"measured", 1},
                                {"total_ns", 4}, {"self_ns", 4}}));
  EXPECT_EQ(edge(f3, f2)["total_ns"], 4);
  EXPECT_EQ(edge(f1, f3), (Json{{"caller", f1}, {"callee", f3}, {"calls", 1}, {"measured", 1},
                                {"total_ns", 10}, {"self_ns", 6}}));
}

TEST(ExtensionTest, CallersMergesThreadsAndNamesCallersThatNeverFinished) {
  // Two threads whose f1 never exits (a service's main loop): their f2 calls still name f1.
  const std::vector<Event> open_loop = {{100, 1, EventKind::Enter}, {110, 2, EventKind::Enter},
                                        {130, 2, EventKind::Exit}, {140, 2, EventKind::Enter},
                                        {145, 2, EventKind::Exit}};
  const std::vector<wire::StreamItem> items = {moduleTable(7), batchItem(7, 1, 0, open_loop),
                                               batchItem(7, 2, 0, open_loop)};
  for (unsigned jobs : {1u, 2u}) {
    const Analysis a = analyze(items, "callers", jobs);
    const Json& edges = result(a, "callers")["edges"];
    ASSERT_EQ(edges.size(), 1u);
    const uint32_t f1 = a.functionIndex(7, 1);
    ASSERT_NE(f1, UINT32_MAX) << "the caller was added to the model's functions";
    EXPECT_EQ(a.functions[f1].name, "f1");
    EXPECT_EQ(a.functions[f1].calls, 0u);
    EXPECT_EQ(edges[0]["caller"], f1);
    EXPECT_EQ(edges[0]["calls"], 4);
    EXPECT_EQ(edges[0]["total_ns"], 2 * (20 + 5));
  }
}

TEST(ExtensionTest, CallsClosedByAnOuterExitAreCountedButNotTimed) {
  const std::vector<Event> jump = {{10, 1, EventKind::Enter}, {20, 2, EventKind::Enter},
                                   {30, 3, EventKind::Enter}, {90, 1, EventKind::Exit}};
  const Analysis a = analyze({moduleTable(7), batchItem(7, 1, 0, jump)}, "callers");
  for (const Json& e : result(a, "callers")["edges"]) {
    if (e["callee"] == a.functionIndex(7, 1)) {
      EXPECT_EQ(e["measured"], 1);
      EXPECT_EQ(e["total_ns"], 80);
      EXPECT_EQ(e["self_ns"], 80); // its callees' time is unknown, so none is subtracted
    } else {
      EXPECT_EQ(e["calls"], 1);
      EXPECT_EQ(e["measured"], 0);
      EXPECT_EQ(e["total_ns"], 0);
    }
  }
}

TEST(ExtensionTest, SummariesGiveEveryThreadsPhases) {
  // f1 { f2 x 64 { f3 } }: two levels deep (f1 at 0, f2 at 1, f3 at 2), so f3 is summarised too;
  // the 64 calls of f2 are one phase repeated 64 times (001).
  std::vector<testing::Call> loop(64, call(2, {call(3)}));
  const auto events = eventsOf({call(1, loop)});
  const Analysis a = analyze({moduleTable(7), batchItem(7, 1, 0, events)}, "summaries");
  const Json& s = result(a, "summaries");
  EXPECT_EQ(s["depth"], 2);
  ASSERT_EQ(s["threads"].size(), 1u);
  const Json& t = s["threads"][0];
  EXPECT_EQ(t["events"], 2 + 64 * 4);
  EXPECT_EQ(t["thread_events_read"], events.size());
  EXPECT_EQ(t["thread_events_skipped"], 0);
  const int64_t f1 = a.functionIndex(7, 1), f2 = a.functionIndex(7, 2), f3 = a.functionIndex(7, 3);
  ASSERT_EQ(t["phases"].size(), 3u);
  EXPECT_EQ(t["phases"][0]["label"], Json::array({f1}));
  EXPECT_EQ(t["phases"][1]["repeat"], 64);
  EXPECT_EQ(t["phases"][1]["events"], 64 * 4);
  EXPECT_EQ(t["phases"][1]["label"], Json::array({f2, f3, -1 - f3, -1 - f2}));
  EXPECT_EQ(t["phases"][2]["label"], Json::array({-1 - f1}));

  // Deeper calls are left out, and once the bound is reached the later batches are only counted.
  SummariesExtension shallow(0, 100);
  auto consumer = shallow.consumerFor({7, 1});
  consumer->onBatch(0, eventsOf({call(1, {call(2)})}));
  std::vector<testing::Call> many(200, call(1));
  consumer->onBatch(1, eventsOf(many, 5000));
  consumer->onBatch(2, eventsOf(many, 9000));
  consumer->onEnd();
  Analysis empty;
  FunctionIndex functions(empty, nullptr);
  const Json r = shallow.result(empty, functions);
  EXPECT_EQ(r["threads"][0]["events"], 100);
  EXPECT_EQ(r["threads"][0]["thread_events_read"], 4 + 400);
  EXPECT_EQ(r["threads"][0]["thread_events_skipped"], 400);
}

TEST(ExtensionTest, TheModelHasExtensionsOnlyWhenSomeRan) {
  const std::vector<wire::StreamItem> items = {
      moduleTable(7), batchItem(7, 1, 0, eventsOf({call(1, {call(2)})}))};
  const Json without = toJson(analyze(items, "none"));
  EXPECT_FALSE(without.contains("extensions"));
  const Json with = toJson(analyze(items, "all"));
  ASSERT_TRUE(with.contains("extensions"));
  EXPECT_EQ(with["extensions"].items().begin().key(), "run_info");
  EXPECT_EQ(with["extensions"]["run_info"]["first_ns"], 1000);
  // The core model is the same with or without them.
  Json core = with;
  core.erase("extensions");
  EXPECT_EQ(core.dump(), without.dump());
}

// A thread-per-request service: `count` threads of process 7 in turn, each started, making calls
// whose stacks differ from thread to thread (f1{f2 f3{f2}}, f3 at the root every third thread,
// f1{f1{f2}} every fifth), and ended.
std::vector<wire::StreamItem> shortThreads(uint32_t count) {
  std::vector<wire::StreamItem> items{moduleTable(7)};
  for (uint32_t thread = 1; thread <= count; ++thread) {
    const uint64_t start = uint64_t{thread} * 100'000;
    std::vector<testing::Call> calls{call(1, {call(2, {}, 4 + thread % 7), call(3, {call(2)})})};
    if (thread % 3 == 0) calls.push_back(call(3, {}, 20 + thread % 5));
    if (thread % 5 == 0) calls.push_back(call(1, {call(1, {call(2)})}));
    items.push_back({7, wire::ThreadStart{thread, start, "request"}});
    items.push_back(batchItem(7, thread, 0, eventsOf(calls, start + 10)));
    items.push_back({7, wire::ThreadEnd{thread, start + 90'000, 0, 0, 1}});
  }
  return items;
}

// The callers' edges by (caller, callee) identity: the model's function indices may differ.
std::map<std::pair<std::string, std::string>, std::string> callerEdges(const Analysis& a) {
  std::map<std::pair<std::string, std::string>, std::string> out;
  for (Json e : result(a, "callers")["edges"]) {
    const std::string caller =
        e["caller"].is_null() ? "" : a.functions[e["caller"].get<uint32_t>()].identity;
    const std::string callee = a.functions[e["callee"].get<uint32_t>()].identity;
    e.erase("caller");
    e.erase("callee");
    out[{caller, callee}] = e.dump();
  }
  return out;
}

// The flame tree's values by stack of identities ("f1;f2"), and the same summed over its slices.
struct StackValues {
  std::map<std::string, std::array<uint64_t, 4>> tree, slices;
};
StackValues flameStacks(const Analysis& a) {
  const Json& flame = result(a, "flame");
  const Json& nodes = flame["nodes"];
  std::vector<std::string> stack(nodes["parent"].size());
  StackValues out;
  for (size_t i = 1; i < stack.size(); ++i) {
    const int64_t parent = nodes["parent"][i];
    const std::string name = a.functions[nodes["function"][i].get<uint32_t>()].identity;
    stack[i] = parent == 0 ? name : stack[static_cast<size_t>(parent)] + ";" + name;
    out.tree[stack[i]] = {nodes["calls"][i], nodes["measured"][i], nodes["total_ns"][i],
                          nodes["self_ns"][i]};
  }
  for (const Json& slice : flame["slices"]["slices"])
    for (size_t i = 0; i < slice["nodes"].size(); ++i) {
      auto& v = out.slices[stack[slice["nodes"][i].get<size_t>()]];
      v[0] += slice["calls"][i].get<uint64_t>();
      v[1] += slice["measured"][i].get<uint64_t>();
      v[2] += slice["total_ns"][i].get<uint64_t>();
      v[3] += slice["self_ns"][i].get<uint64_t>();
    }
  return out;
}

// Past the ended threads kept whole, the extensions fold their state of an ended thread with the
// analysis: the callers' totals and the flame tree (and its slices) are the same as without
// folding, the folded threads are one more entry of the flame's threads, and the summaries of the
// folded threads are counted, not kept.
TEST(ExtensionTest, FoldedThreadsGiveTheSameCallersAndFlameGraph) {
  const auto items = shortThreads(300);
  AnalysisSettings folding;
  folding.kept_ended_threads = 2;
  const Analysis whole = analyze(items, "all");
  const Analysis folded = analyze(items, "all", 1, folding);
  ASSERT_EQ(whole.threads.size(), 300u);
  ASSERT_EQ(folded.threads.size(), 45u); // 256 folded at the 258th end; 44 kept, and the fold

  EXPECT_EQ(callerEdges(folded), callerEdges(whole));
  EXPECT_EQ(callerEdges(whole).size(), 6u); // root->f1, f1->f2, f1->f3, f3->f2, root->f3, f1->f1
  const StackValues w = flameStacks(whole), f = flameStacks(folded);
  EXPECT_EQ(f.tree, w.tree);
  EXPECT_EQ(f.slices, w.slices);
  EXPECT_EQ(w.slices, w.tree); // every call is in one slice
  EXPECT_EQ(w.tree.at("_Z1f1;_Z1f1;_Z1f2")[0], 60u);

  // The flame's threads: the 44 not folded as they were, then the process's folded threads, whose
  // calls are those of the 256 threads that ended first.
  const Json& whole_threads = result(whole, "flame")["threads"];
  const Json& folded_threads = result(folded, "flame")["threads"];
  ASSERT_EQ(folded_threads.size(), 45u);
  EXPECT_EQ(folded_threads.back()["thread"], kFoldedThreadsId);
  EXPECT_EQ(folded_threads.front()["thread"], 257);
  auto calls = [](const Json& thread) {
    uint64_t n = 0;
    for (const Json& c : thread["calls"])
      n += c.get<uint64_t>();
    return n;
  };
  uint64_t first_256 = 0;
  for (size_t t = 0; t < 256; ++t)
    first_256 += calls(whole_threads[t]);
  EXPECT_EQ(calls(folded_threads.back()), first_256);
  EXPECT_EQ(calls(folded_threads[0]), calls(whole_threads[256]));

  const Json& summaries = result(folded, "summaries");
  EXPECT_EQ(summaries["folded_threads"], 256);
  ASSERT_EQ(summaries["threads"].size(), 44u);
  EXPECT_EQ(summaries["threads"][0], result(whole, "summaries")["threads"][256]);
  EXPECT_FALSE(result(whole, "summaries").contains("folded_threads"));
}

// The same calls as shortThreads, each thread a process of its own (its module table, its end):
// past the ended processes kept whole, the callers' totals and the flame tree of the folded
// processes, merged by function identity, are those of every process taken apart.
TEST(ExtensionTest, FoldedProcessesGiveTheSameCallersAndFlameGraph) {
  std::vector<wire::StreamItem> items;
  for (const wire::StreamItem& item : shortThreads(300)) {
    if (item.kind() == wire::ItemKind::ModuleTable) continue;
    uint32_t thread = 0;
    if (auto* start = std::get_if<wire::ThreadStart>(&item.body)) thread = start->thread;
    if (auto* batch = std::get_if<wire::EventBatch>(&item.body)) thread = batch->thread;
    if (auto* end = std::get_if<wire::ThreadEnd>(&item.body)) thread = end->thread;
    const uint64_t process = 100 + thread;
    wire::StreamItem moved = item;
    moved.process = process;
    if (item.kind() == wire::ItemKind::ThreadStart) items.push_back(moduleTable(process));
    items.push_back(moved);
    if (item.kind() == wire::ItemKind::ThreadEnd) items.push_back({process, wire::ProcessEnd{}});
  }
  AnalysisSettings folding;
  folding.kept_ended_processes = 2;
  const Analysis whole = analyze(items, "all");
  const Analysis folded = analyze(items, "all", 2, folding);
  ASSERT_EQ(whole.threads.size(), 300u);
  ASSERT_EQ(folded.threads.size(), 300u - 256 + 1);
  EXPECT_EQ(folded.threads.back().folded_processes, 256u);
  EXPECT_EQ(callerEdges(folded), callerEdges(whole));
  const StackValues w = flameStacks(whole), f = flameStacks(folded);
  EXPECT_EQ(f.tree, w.tree);
  EXPECT_EQ(f.slices, w.slices);
  const Json& folded_threads = result(folded, "flame")["threads"];
  EXPECT_EQ(folded_threads.back()["process"], kFoldedProcessesKey);
  EXPECT_EQ(result(folded, "summaries")["folded_threads"], 256);

  // The run's facts: the 44 processes kept whole as they were, the 256 folded counted by how they
  // ended, and every process's pid still known (exports name pids).
  const Json& whole_run = result(whole, "run_info");
  const Json& folded_run = result(folded, "run_info");
  EXPECT_FALSE(whole_run.contains("folded_processes"));
  ASSERT_EQ(whole_run["processes"].size(), 300u);
  EXPECT_EQ(folded_run["processes"],
            Json(std::vector<Json>(whole_run["processes"].begin() + 256, whole_run["processes"].end())));
  EXPECT_EQ(folded_run["folded_processes"],
            (Json{{"count", 256}, {"exited", 256}, {"exited_nonzero", 0}, {"signalled", 0},
                  {"exec", 0}, {"events_dropped", 0}}));
  EXPECT_EQ(folded_run["processes_without_end"], 0);
}

// A folded process is counted by how it ended and keeps only its pid; one without its end stays.
TEST(ExtensionTest, RunInfoCountsFoldedProcessesByHowTheyEnded) {
  RunInfo run;
  auto start = [&](uint64_t process, uint32_t pid) {
    wire::ProcessStart s;
    s.pid = pid;
    s.executable = "/bin/p" + std::to_string(pid);
    s.arguments = {"a long argument list that folding frees"};
    run.observe({process, s});
  };
  auto end = [&](uint64_t process, wire::EndReason reason, int32_t status, uint64_t dropped) {
    wire::ProcessEnd e;
    e.reason = reason;
    e.exit_status = status;
    e.events_dropped = dropped;
    run.observe({process, e});
  };
  start(1, 101), start(2, 102), start(3, 103), start(4, 104), start(5, 105);
  end(1, wire::EndReason::Exit, 0, 0);
  end(2, wire::EndReason::Exit, 3, 7);
  end(3, wire::EndReason::Signal, 9, 0);
  end(4, wire::EndReason::Exec, 0, 0);
  for (uint64_t p = 1; p <= 5; ++p)
    run.foldProcess(p);
  run.foldProcess(1); // folded already: nothing more
  run.observe({2, wire::ExitStatus{102, 0, 3, 0, false}}); // reaped after its fold: nothing new

  const Json json = run.toJson();
  ASSERT_EQ(json["processes"].size(), 1u); // 5 has not ended: kept, and counted as such
  EXPECT_EQ(json["processes"][0]["pid"], 105);
  EXPECT_EQ(json["processes_without_end"], 1);
  EXPECT_EQ(json["folded_processes"],
            (Json{{"count", 4}, {"exited", 2}, {"exited_nonzero", 1}, {"signalled", 1}, {"exec", 1},
                  {"events_dropped", 7}}));
  EXPECT_EQ(run.pids(), (std::map<uint64_t, uint32_t>{{1, 101}, {2, 102}, {3, 103}, {4, 104}, {5, 105}}));
}

TEST(ExtensionTest, FoldedExtensionsAreTheSameWithAnyNumberOfWorkers) {
  const auto items = shortThreads(600);
  AnalysisSettings folding;
  folding.kept_ended_threads = 10;
  const std::string sequential = toJson(analyze(items, "all", 1, folding)).dump();
  EXPECT_EQ(toJson(analyze(items, "all", 2, folding)).dump(), sequential);
  EXPECT_EQ(toJson(analyze(items, "all", 3, folding)).dump(), sequential);
}

// An extension that keeps every thread's state and cannot fold it: the threads it follows are kept
// whole.
class EveryThread final : public Extension {
  class Consumer final : public ThreadConsumer {
    void onBatch(uint64_t, std::span<const Event>, std::span<const wire::TracerWait>) override {}
    void onGapMarker(uint64_t) override {}
    void onEnd() override {}
  };

public:
  std::unique_ptr<ThreadConsumer> consumerFor(const ThreadKey&) override {
    return std::make_unique<Consumer>();
  }
  nlohmann::ordered_json result(const Analysis&, FunctionIndex&) const override { return {}; }
};

TEST(ExtensionTest, ThreadsFollowedByAnExtensionThatCannotFoldAreKeptWhole) {
  AnalysisSettings folding;
  folding.kept_ended_threads = 2;
  std::vector<NamedExtension> extensions = makeExtensions(selectExtensions("all"), folding);
  extensions.push_back({"every_thread", std::make_unique<EveryThread>()});
  Analyzer analyzer(folding, 1, std::move(extensions));
  for (const auto& item : shortThreads(300))
    analyzer.consume(item);
  analyzer.finish();
  const Analysis a = analyzer.snapshot();
  EXPECT_EQ(a.threads.size(), 300u);
  EXPECT_EQ(result(a, "flame")["threads"].size(), 300u);
  EXPECT_FALSE(result(a, "summaries").contains("folded_threads"));
}

// `report` and `live` run every extension: 100,000 threads that each ended cost what 1,000 kept
// whole and the folded entry do (`report` of 30,000 threads took 1.10 GB before).
TEST(ExtensionTest, AHundredThousandShortThreadsWithEveryExtensionFitInBoundedMemory) {
  const int64_t before = shapetrace::testing::peakRssMib();
  Analyzer analyzer(AnalysisSettings{}, 2, makeExtensions(selectExtensions("all"), {}));
  analyzer.consume(moduleTable(7));
  for (uint32_t thread = 1; thread <= 100'000; ++thread) {
    const uint64_t start = uint64_t{thread} * 1000;
    analyzer.consume({7, wire::ThreadStart{thread, start, "request"}});
    analyzer.consume(batchItem(7, thread, 0, eventsOf({call(1, {call(2)})}, start + 10)));
    analyzer.consume({7, wire::ThreadEnd{thread, start + 50, 4, 0, 1}});
  }
  analyzer.finish();
  const Analysis a = analyzer.snapshot();
  EXPECT_EQ(threadCount(a), 100'000u);
  EXPECT_LE(a.threads.size(), 1000u + 256u + 1u);
  EXPECT_EQ(result(a, "flame")["threads"].size(), a.threads.size());
  EXPECT_EQ(result(a, "summaries")["threads"].size() + result(a, "summaries")["folded_threads"].get<size_t>(),
            100'000u);
  if (shapetrace::testing::kPeakRssMeasuresTheCode) {
    EXPECT_LT(shapetrace::testing::peakRssMib() - before, 200);
  }
}

} // namespace
} // namespace shapetrace::analyzer
