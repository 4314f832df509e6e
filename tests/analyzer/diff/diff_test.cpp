// `shapetrace diff` (diff/run_diff.h) on constructed pairs of runs with known injected changes:
// each is found and ranked first; runs of the same workload with different noise report nothing;
// matching does not depend on ids or on the order shapes first appeared; bad input is refused.
#include "analyzer.h"
#include "diff/run_diff.h"
#include "model_json.h"
#include "analyzer/trace_builder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

namespace shapetrace::analyzer {
namespace {

using testing::batchItem;
using testing::call;
using testing::Call;
using testing::eventsOf;

constexpr uint32_t kMain = 1, kServe = 2, kGet = 3, kPut = 4, kScan = 5, kWait = 6;

wire::StreamItem names(uint64_t process) {
  wire::ModuleTable table;
  table.module_id = "kv";
  const char* names[] = {"", "main", "serve", "get", "put", "scan", "waitForFlush"};
  for (uint32_t id = 1; id <= 6; ++id)
    table.functions.push_back(wire::FunctionInfo{id, std::string("_Z") + names[id], names[id],
                                                 "kv.cpp", id});
  return wire::StreamItem{process, table};
}

// What one run does: `requests` calls of serve, each a get, a put or a scan (by `mix`), with
// durations around the given ones (+-10% noise from `seed`).
struct Workload {
  int requests = 3000;
  double put_share = 0.3, scan_share = 0.1;
  uint64_t get_ns = 100, put_ns = 200, scan_ns = 400;
  double wait_share = 0;  // puts that also wait for a flush
  uint64_t wait_ns = 5000;
  bool scans = true;
  uint64_t seed = 1;
  uint32_t thread = 1;
};

nlohmann::ordered_json runOf(const Workload& w, uint64_t process = 7) {
  std::mt19937_64 random(w.seed);
  std::uniform_real_distribution<double> unit(0, 1);
  auto noisy = [&](uint64_t ns) {
    return static_cast<uint64_t>(static_cast<double>(ns) * (0.9 + 0.2 * unit(random)));
  };
  std::vector<Call> requests;
  for (int i = 0; i < w.requests; ++i) {
    const double r = unit(random);
    Call work;
    if (r < w.put_share) {
      work = call(kPut, {}, noisy(w.put_ns));
      if (unit(random) < w.wait_share) work.children.push_back(call(kWait, {}, noisy(w.wait_ns)));
    } else if (w.scans && r < w.put_share + w.scan_share) {
      work = call(kScan, {}, noisy(w.scan_ns));
    } else {
      work = call(kGet, {}, noisy(w.get_ns));
    }
    requests.push_back(call(kServe, {work}, noisy(50)));
  }
  Analyzer analyzer;
  analyzer.consume(names(process));
  analyzer.consume(batchItem(process, w.thread, 0, eventsOf({call(kMain, requests, 10)})));
  analyzer.finish();
  return toJson(analyzer.snapshot());
}

TEST(DiffTest, ANewChildCallIsFoundRankedFirstAndDescribed) {
  Workload base;
  Workload now = base;
  now.wait_share = 0.2; // some puts now wait for a flush
  now.seed = 2;
  const RunDiff d = diffRuns(runOf(base), runOf(now));
  ASSERT_FALSE(d.shapes.empty());
  const ShapeChange& top = d.shapes.front();
  EXPECT_EQ(top.function, "put");
  EXPECT_EQ(top.kind, ChangeKind::kNew);
  EXPECT_THAT(top.also_calls, ::testing::ElementsAre("waitForFlush"));
  EXPECT_EQ(top.nearest_distance, 0.5); // the put without the wait: one child more
  ASSERT_FALSE(d.explanations.empty());
  EXPECT_THAT(d.explanations.front(), ::testing::HasSubstr("a new shape of put that also calls "
                                                           "waitForFlush"));
  // put got slower as a function, and that is what its new shape explains.
  EXPECT_THAT(d.explanations.front(), ::testing::StartsWith("put got slower"));
}

// main's one call holds a new shape of serve in NEW: main's only cluster on each side shares no
// shape, and is one reshaped row, not main vanished and main new.
TEST(DiffTest, AFunctionsLoneClustersAreMatchedEvenWithoutASharedShape) {
  Workload base;
  Workload now = base;
  now.wait_share = 0.2;
  now.seed = 2;
  const RunDiff d = diffRuns(runOf(base), runOf(now));
  std::vector<ClusterChange> mains;
  for (const ClusterChange& c : d.clusters)
    if (c.function == "main") mains.push_back(c);
  ASSERT_EQ(mains.size(), 1u);
  EXPECT_GE(mains[0].base_cluster, 0);
  EXPECT_GE(mains[0].new_cluster, 0);
  EXPECT_EQ(mains[0].shared, 0);
  EXPECT_EQ(mains[0].base_calls, 1u);
  EXPECT_EQ(mains[0].new_calls, 1u);
  // Clusters matched by their shapes are untouched: serve's get path shares its shape.
  EXPECT_TRUE(std::any_of(d.clusters.begin(), d.clusters.end(), [](const ClusterChange& c) {
    return c.function == "serve" && c.shared > 0;
  }));
}

TEST(DiffTest, AFunctionSlowerInOneShapeOnlyIsThatShape) {
  Workload base;
  Workload now = base;
  now.scan_ns = 800; // scans only
  now.seed = 3;
  const RunDiff d = diffRuns(runOf(base), runOf(now));
  ASSERT_FALSE(d.shapes.empty());
  EXPECT_EQ(d.shapes.front().kind, ChangeKind::kSlower);
  EXPECT_EQ(d.shapes.front().function, "scan");
  for (const ShapeChange& c : d.shapes) {
    EXPECT_NE(c.function, "get") << changeKindName(c.kind);
    EXPECT_NE(c.function, "put") << changeKindName(c.kind);
  }
}

TEST(DiffTest, AShapeWhoseFrequencyDoubledIsMoreFrequent) {
  Workload base;
  Workload now = base;
  now.scan_share = 0.2; // twice the scans, as a share of serve's calls
  now.seed = 4;
  const RunDiff d = diffRuns(runOf(base), runOf(now));
  const auto it = std::find_if(d.shapes.begin(), d.shapes.end(), [](const ShapeChange& c) {
    return c.kind == ChangeKind::kMoreFrequent;
  });
  ASSERT_NE(it, d.shapes.end());
  EXPECT_EQ(it->function, "serve");
  EXPECT_NEAR(it->new_share / it->base_share, 2.0, 0.3);
}

// `scan` walks a tree recursively: 2 deep in most requests and 4 deep in the others, which grow
// from 1% to 10%. The change is told of "scan recursing 4 deep", not by a shape number alone.
nlohmann::ordered_json recursiveRun(double deep_share, uint64_t seed) {
  std::mt19937_64 random(seed);
  std::uniform_real_distribution<double> unit(0, 1);
  const auto walk = [](uint32_t depth) {
    Call c = call(kScan, {}, 100);
    for (uint32_t d = 1; d < depth; ++d) c = call(kScan, {c}, 100);
    return c;
  };
  std::vector<Call> requests;
  for (int i = 0; i < 3000; ++i)
    requests.push_back(call(kServe, {walk(unit(random) < deep_share ? 4 : 2)}, 50));
  Analyzer analyzer;
  analyzer.consume(names(7));
  analyzer.consume(batchItem(7, 1, 0, eventsOf({call(kMain, requests, 10)})));
  analyzer.finish();
  return toJson(analyzer.snapshot());
}

TEST(DiffTest, ARecursiveShapeIsToldByItsDepth) {
  const RunDiff d = diffRuns(recursiveRun(0.01, 1), recursiveRun(0.10, 2));
  const auto deep = std::find_if(d.shapes.begin(), d.shapes.end(), [](const ShapeChange& c) {
    return c.function == "scan" && c.kind == ChangeKind::kMoreFrequent;
  });
  ASSERT_NE(deep, d.shapes.end());
  EXPECT_EQ(deep->recursion_depth, 4u);
  std::string told;
  for (const std::string& text : d.explanations) told += text + "\n";
  EXPECT_THAT(told, ::testing::HasSubstr("the shape of scan recursing 4 deep (shape "));
  EXPECT_THAT(told, ::testing::Not(::testing::HasSubstr(" 0% -> 0%")));
  EXPECT_EQ(diffJson(d)["shapes"][static_cast<size_t>(deep - d.shapes.begin())]["recursion_depth"], 4);
}

TEST(DiffTest, AVanishedPathIsReported) {
  Workload base;
  Workload now = base;
  now.scans = false;
  now.seed = 5;
  const RunDiff d = diffRuns(runOf(base), runOf(now));
  // The cause: serve no longer calls scan. The scan's own shape went with it, and main's shape
  // that held serve's changed because of it.
  std::vector<std::string> causes, derived;
  for (const ShapeChange& c : d.shapes)
    if (c.kind == ChangeKind::kVanished) (c.derived ? derived : causes).push_back(c.function);
  EXPECT_THAT(causes, ::testing::ElementsAre("serve"));
  EXPECT_THAT(derived, ::testing::UnorderedElementsAre("scan", "main"));
  // Told first, as what made serve faster: the calls that scanned now take a plain serve's time.
  ASSERT_FALSE(d.explanations.empty());
  EXPECT_THAT(d.explanations.front(), ::testing::StartsWith("serve got faster"));
  EXPECT_THAT(d.explanations.front(),
              ::testing::HasSubstr("of it is a shape of serve that called scan no longer occurs"));
  // main's new shape (without the scan) is a consequence, not a sentence of its own.
  for (const std::string& text : d.explanations)
    EXPECT_THAT(text, ::testing::Not(::testing::HasSubstr("a new shape of main")));
}

TEST(DiffTest, CallersOfASlowerFunctionAreToldAfterIt) {
  // Every put waits for a flush in NEW: serve's and main's shapes change with put's, and their
  // time moves by as much as put's. The cause (put) is told first; serve's slower sentence, if
  // any, comes after it.
  Workload base;
  Workload now = base;
  now.wait_share = 1;
  now.seed = 3;
  const RunDiff d = diffRuns(runOf(base), runOf(now));
  ASSERT_FALSE(d.explanations.empty());
  EXPECT_THAT(d.explanations.front(), ::testing::StartsWith("put got slower"));
  EXPECT_THAT(d.explanations.front(),
              ::testing::HasSubstr("a new shape of put that also calls waitForFlush"));
  for (const ShapeChange& c : d.shapes)
    if (c.function == "serve" || c.function == "main") EXPECT_TRUE(c.derived) << c.function;
}

TEST(DiffTest, TheTimeASlowerShapeMovedIsItsCallsTimesTheChangeOfItsMean) {
  // NEW serves half as many requests, its puts twice as slow. What the put shape moved is its
  // NEW calls times the change of its mean, per second of NEW; not the change of its total time
  // per second, which the smaller number of requests would make look like less.
  Workload base;
  base.requests = 4000;
  Workload now = base;
  now.requests = 2000;
  now.put_ns = 400;
  now.seed = 9;
  const RunDiff d = diffRuns(runOf(base), runOf(now));
  const auto put = std::find_if(d.shapes.begin(), d.shapes.end(), [](const ShapeChange& c) {
    return c.function == "put" && c.kind == ChangeKind::kSlower;
  });
  ASSERT_NE(put, d.shapes.end());
  const double expected = static_cast<double>(put->now.count) *
                          (put->now.mean_ns - put->base.mean_ns) / d.new_seconds;
  EXPECT_NEAR(put->impact_ns_per_s, expected, 1e-6 * expected);
  // And the function's sentence attributes all of put's change to that shape.
  ASSERT_FALSE(d.explanations.empty());
  EXPECT_THAT(d.explanations.front(),
              ::testing::StartsWith("put got slower"));
  EXPECT_THAT(d.explanations.front(), ::testing::HasSubstr("100% of it is the shape of put"));
}

TEST(DiffTest, TheSameWorkloadWithOtherNoiseChangesNothing) {
  for (uint64_t seed = 10; seed < 15; ++seed) {
    Workload base, now;
    base.seed = seed;
    now.seed = seed + 100;
    const RunDiff d = diffRuns(runOf(base), runOf(now));
    EXPECT_TRUE(d.shapes.empty()) << "seed " << seed << ": " << d.explanations.front();
    EXPECT_TRUE(d.explanations.empty());
    EXPECT_TRUE(regressions(d, 1).empty());
  }
}

TEST(DiffTest, MatchingIgnoresIdsAndTheOrderShapesAppeared) {
  Workload base;
  base.wait_share = 0.1;
  // NEW: the same run, but its shapes first appear in another order (scans first) and on another
  // process and thread: every shape id differs.
  Workload now = base;
  now.seed = 99;
  now.thread = 42;
  const nlohmann::ordered_json a = runOf(base), b = runOf(now, 1234);
  ASSERT_NE(a["shapes"].dump(), b["shapes"].dump());
  const RunDiff d = diffRuns(a, b);
  EXPECT_TRUE(d.shapes.empty()) << d.explanations.front();
}

TEST(DiffTest, RegressionsPassTheGateOnlyWhenLargeAndSignificant) {
  Workload base;
  Workload now = base;
  now.get_ns = 150;
  now.seed = 6;
  const RunDiff d = diffRuns(runOf(base), runOf(now));
  EXPECT_THAT(regressions(d, 20), ::testing::Contains(::testing::StartsWith("function get +")));
  EXPECT_THAT(regressions(d, 80), ::testing::Not(::testing::Contains(
                                      ::testing::StartsWith("function get"))));
}

TEST(DiffTest, BadInputIsNamed) {
  const nlohmann::ordered_json good = runOf(Workload{});
  nlohmann::ordered_json other = good;
  for (auto& f : other["functions"]) {
    f["name"] = "other_" + f["name"].get<std::string>();
    f["mangled"] = "_Zother_" + f["mangled"].get<std::string>();
  }
  try {
    diffRuns(good, other);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("no function in common"));
  }
  nlohmann::ordered_json future = good;
  future["version"] = 2;
  try {
    diffRuns(good, future);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "NEW is an analysis model of version 2; this shapetrace reads version 1");
  }
  EXPECT_THROW(diffRuns(nlohmann::ordered_json{{"format", "shapetrace-report"}}, good),
               std::invalid_argument);
}

} // namespace
} // namespace shapetrace::analyzer

namespace shapetrace::analyzer {
namespace {

TEST(DiffFiltering, TheWarningNamesTenFunctionsPerListAndCountsTheRest) {
  FilteringDifference d;
  EXPECT_EQ(filteringWarning(d), "");
  for (int i = 0; i < 12; ++i) d.throttled_only_new.push_back("ns::f" + std::to_string(i) + "(int)");
  d.filtered_only_base = {"hash"};
  EXPECT_EQ(filteringWarning(d),
            "FILTERED DIFFERENTLY: the runs did not record the same functions, so the shapes that "
            "call these differ by what was recorded, not by what the program did (filtered out at "
            "build only in BASE: hash; throttled only in NEW: ns::f0, ns::f1, ns::f2, ns::f3, "
            "ns::f4, ns::f5, ns::f6, ns::f7, ns::f8, ns::f9 and 2 more)");
}

} // namespace
} // namespace shapetrace::analyzer
