// The explain extension (explain/explain.h) on stream items through the Analyzer: calls of a
// function as data points, their inputs from annotations (the innermost open call, the last value,
// calls without one left out), the tree naming the function of the slow path, the per-thread
// sample, and the errors a user can cause.
#include "analyzer.h"
#include "explain/explain.h"
#include "function_names.h"
#include "analyzer/trace_builder.h"

#include <gtest/gtest.h>

namespace shapetrace::analyzer {
namespace {

using testing::call;
using Json = nlohmann::ordered_json;

constexpr uint32_t kServe = 1, kParse = 2, kSlow = 3, kMain = 4;
constexpr uint64_t kProcess = 9;

wire::StreamItem moduleTable() {
  wire::ModuleTable table;
  table.module_id = "test";
  const char* names[] = {"", "serve(int)", "parse", "slowPath", "main"};
  for (uint32_t id = kServe; id <= kMain; ++id)
    table.functions.push_back(
        wire::FunctionInfo{id, std::string("_Z") + names[id], names[id], "t.cpp", id});
  return wire::StreamItem{kProcess, table};
}

wire::StreamItem annotation(uint32_t thread, uint64_t time, const std::string& key, int64_t value) {
  return wire::StreamItem{kProcess, wire::Annotation{thread, time, key, value}};
}

// A thread serving requests: request i has size 1 + i % 20; every third takes the slow path,
// ten times as long per unit of size. Each request annotates its size just after it starts.
struct Requests {
  std::vector<wire::StreamItem> items;
  std::vector<uint64_t> starts;
};
Requests requests(uint32_t thread, size_t count) {
  Requests out;
  std::vector<Event> events;
  uint64_t time = 1000;
  for (size_t i = 0; i < count; ++i) {
    const uint64_t size = 1 + i % 20;
    const bool slow = i % 3 == 0;
    std::vector<testing::Call> children = {call(kParse, {}, 10)};
    if (slow)
      children.push_back(call(kSlow, {}, 1000 * size));
    out.starts.push_back(time);
    out.items.push_back(annotation(thread, time + 1, "size", static_cast<int64_t>(size)));
    testing::appendEvents(call(kServe, children, 100 * size), time, events);
    time += 50;
  }
  out.items.insert(out.items.begin(), testing::batchItem(kProcess, thread, 0, std::move(events)));
  return out;
}

Json explain(const std::vector<wire::StreamItem>& items, ExplainSettings settings,
             unsigned jobs = 1) {
  std::vector<NamedExtension> extensions;
  extensions.push_back({ExplainExtension::kName,
                        std::make_unique<ExplainExtension>(settings, false, kDefaultMaxDepth)});
  Analyzer analyzer({}, jobs, std::move(extensions));
  analyzer.consume(moduleTable());
  for (const auto& item : items)
    analyzer.consume(item);
  analyzer.finish();
  const Analysis analysis = analyzer.snapshot();
  for (const auto& [name, json] : analysis.extensions)
    if (name == ExplainExtension::kName)
      return json;
  throw std::logic_error("no explain result");
}

ExplainSettings serveBySize(uint32_t clusters = 2) {
  ExplainSettings s;
  s.function = "serve";
  s.input_key = "size";
  s.clusters = clusters;
  return s;
}

// The text names functions short, as every text output does; the model keeps the full name.
TEST(ExplainTest, TheTextNamesFunctionsShort) {
  const Requests r = requests(1, 60);
  Json model = explain(r.items, serveBySize());
  ASSERT_FALSE(model.contains("error")) << model.dump();
  model["tree"]["nodes"][0]["predicate"] =
      "calls of void std::vector<kv::Entry, std::allocator<kv::Entry>>::_M_insert_aux<kv::Entry>"
      "(__gnu_cxx::__normal_iterator<kv::Entry*, std::vector<kv::Entry, "
      "std::allocator<kv::Entry>>>, kv::Entry&&) > 0";
  const std::string text = describeExplanation(model);
  EXPECT_NE(text.find("\n  if calls of " +
                      shortFunctionName("void std::vector<kv::Entry, std::allocator<kv::Entry>>::"
                                        "_M_insert_aux<kv::Entry>(__gnu_cxx::__normal_iterator<"
                                        "kv::Entry*, std::vector<kv::Entry, std::allocator<kv::"
                                        "Entry>>>, kv::Entry&&)") +
                      " > 0:\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("__normal_iterator"), std::string::npos) << text;
}

TEST(ExplainTest, TheTreeNamesTheSlowPath) {
  const Requests r = requests(1, 60);
  const Json model = explain(r.items, serveBySize());
  ASSERT_FALSE(model.contains("error")) << model.dump();
  EXPECT_EQ(model["points"], 60);
  EXPECT_EQ(model["left_out"], 0);
  EXPECT_EQ(model["k"], 2);
  const Json& root = model["tree"]["nodes"][0];
  EXPECT_EQ(root["predicate"], "calls of slowPath > 0");
  EXPECT_EQ(root["ref"]["kind"], "function");
  EXPECT_EQ(model["tree"]["height"], 1);
  EXPECT_EQ(model["tree"]["accuracy"], 1.0);
  EXPECT_EQ(model["tree"]["point_accuracy"], 1.0);
  EXPECT_EQ(model["clusters"][0]["accuracy"], 1.0);
  EXPECT_EQ(model["clusters"][1]["accuracy"], 1.0);
  EXPECT_NE(describeExplanation(model).find(
                "  (the mean over the clusters of their calls predicted right: cluster 1 100.0%, "
                "cluster 2 100.0%; of all calls: 100.0%)\n"),
            std::string::npos)
      << describeExplanation(model);
  // The slow cluster's line: 1000 + 100 ns per unit of size, plus the fixed part.
  const uint32_t slow = model["tree"]["nodes"][root["yes"].get<size_t>()]["cluster"];
  const Json& line = model["clusters"][slow];
  EXPECT_EQ(line["points"], 20);
  EXPECT_NEAR(line["slope_ns"].get<double>(), 1100.0, 1e-6);
  const Json& other = model["clusters"][1 - slow];
  EXPECT_NEAR(other["slope_ns"].get<double>(), 100.0, 1e-6);
  // Every point is in the scatter data, in thread then time order.
  ASSERT_EQ(model["data"].size(), 60u);
  EXPECT_EQ(model["data"][5]["x"], 6.0);
  EXPECT_EQ(model["data"][5]["start_ns"], r.starts[5]);
  EXPECT_EQ(model["data"][5]["thread"], 1);
}

TEST(ExplainTest, AlgorithmOnePicksTwoLines) {
  const Json model = explain(requests(1, 60).items, serveBySize(0));
  ASSERT_FALSE(model.contains("error")) << model.dump();
  EXPECT_EQ(model["k"], 2);
  EXPECT_EQ(model["k_chosen"], "smallest within the error bound");
  EXPECT_EQ(model["rms_by_k"].size(), 2u);
}

TEST(ExplainTest, AnnotationsBelongToTheInnermostOpenCallAndTheLastCounts) {
  // serve [1000, 1100) holds serve [1010, 1040); serve [1200, 1250) has two annotations; serve
  // [1300, 1310) has none; an annotation of another key changes nothing.
  std::vector<Event> events = {
      {1000, kServe, EventKind::Enter}, {1010, kServe, EventKind::Enter},
      {1040, kServe, EventKind::Exit},  {1100, kServe, EventKind::Exit},
      {1200, kServe, EventKind::Enter}, {1250, kServe, EventKind::Exit},
      {1300, kServe, EventKind::Enter}, {1310, kServe, EventKind::Exit},
  };
  const std::vector<wire::StreamItem> items = {
      testing::batchItem(kProcess, 1, 0, events),
      annotation(1, 1020, "size", 7), // the inner call
      annotation(1, 1050, "size", 5), // the outer call, after the inner one ended
      annotation(1, 1210, "size", 1), // replaced by the next
      annotation(1, 1240, "size", 2),
      annotation(1, 1305, "other", 9), // another key
      annotation(2, 1305, "size", 9),  // another thread
  };
  ExplainSettings s = serveBySize(1);
  s.tree.min_leaf = 1;
  const Json model = explain(items, s);
  ASSERT_FALSE(model.contains("error")) << model.dump();
  EXPECT_EQ(model["points"], 3);
  EXPECT_EQ(model["left_out"], 1);
  std::map<uint64_t, double> input_by_start;
  for (const Json& p : model["data"])
    input_by_start[p["start_ns"].get<uint64_t>()] = p["x"].get<double>();
  EXPECT_EQ(input_by_start, (std::map<uint64_t, double>{{1000, 5}, {1010, 7}, {1200, 2}}));
}

TEST(ExplainTest, WithoutAKeyTheInputIsThePosition) {
  ExplainSettings s = serveBySize();
  s.input_key.clear();
  const Json model = explain(requests(1, 30).items, s);
  ASSERT_FALSE(model.contains("error")) << model.dump();
  EXPECT_EQ(model["input"], "position");
  EXPECT_EQ(model["data"][0]["x"], 1.0);
  EXPECT_EQ(model["data"][29]["x"], 30.0);
}

TEST(ExplainTest, EachThreadKeepsASampleOfItsCalls) {
  std::vector<wire::StreamItem> items = requests(1, 50).items;
  for (auto& item : requests(2, 50).items)
    items.push_back(item);
  ExplainSettings s = serveBySize();
  s.max_points = 10;
  const Json model = explain(items, s, 2);
  ASSERT_FALSE(model.contains("error")) << model.dump();
  EXPECT_EQ(model["seen"], 100);
  EXPECT_EQ(model["points"], 20);
  // The same input, the same sample.
  EXPECT_EQ(explain(items, s, 1)["data"], model["data"]);
}

TEST(ExplainTest, ErrorsSayWhatIsMissing) {
  const Requests r = requests(1, 10);
  ExplainSettings s = serveBySize();
  s.input_key = "bytes";
  EXPECT_EQ(explain(r.items, s)["error"],
            "no call of 'serve' has an annotation 'bytes' (annotation keys in the recording: "
            "size)");
  s = serveBySize();
  s.function = "handle";
  EXPECT_EQ(explain(r.items, s)["error"], "no function named 'handle' in the recording");
  EXPECT_EQ(explain(r.items, serveBySize(11))["error"],
            "10 calls (data points) for 11 clusters: each cluster needs at least one");
  s = serveBySize();
  s.function = "main";
  EXPECT_EQ(explain(r.items, s)["error"], "no finished call of 'main' in the recording");
}

TEST(ExplainTest, FunctionsAreNamedAsScopesNameThem) {
  const Requests r = requests(1, 12);
  for (const char* name : {"serve", "serve(int)", "_Zserve(int)"}) {
    ExplainSettings s = serveBySize();
    s.function = name;
    const Json model = explain(r.items, s);
    EXPECT_FALSE(model.contains("error")) << name << ": " << model.dump();
  }
}

} // namespace
} // namespace shapetrace::analyzer
