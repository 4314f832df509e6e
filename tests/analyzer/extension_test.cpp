// Extensions of the model (extension.h): the --extensions selection, and the callers extension on
// real stream items through the Analyzer: exact calls and inclusive/exclusive times by caller,
// merged over threads, named by identity, in the JSON model under "extensions".
#include "analyzer.h"
#include "extensions/callers.h"
#include "extensions/summaries.h"
#include "model_json.h"
#include "trace_builder.h"

#include <gmock/gmock.h>
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
                 unsigned jobs = 1) {
  Analyzer analyzer({}, jobs, makeExtensions(selectExtensions(selection), {}));
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

} // namespace
} // namespace shapetrace::analyzer
