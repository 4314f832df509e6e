// The live page's sliding windows (report/recent.h): a window's statistics are exactly those of the
// calls that finished in it (the latest cumulative statistics minus those kept at its start), a
// shape is new in a window when it was first seen in it, and the window says how much of it the
// session covered.
#include "analyzer.h"
#include "report/recent.h"

#include <gtest/gtest.h>

namespace shapetrace::analyzer::report {
namespace {

using Json = nlohmann::ordered_json;

// A thread's calls: `n` calls of f (a leaf of `ns` each), or of g calling f when `nested`.
std::vector<Event> calls(uint64_t& t, uint32_t n, uint64_t ns, bool nested = false) {
  std::vector<Event> events;
  for (uint32_t i = 0; i < n; ++i) {
    if (nested) events.push_back({t, 2, EventKind::Enter});
    events.push_back({t, 1, EventKind::Enter});
    t += ns;
    events.push_back({t, 1, EventKind::Exit});
    if (nested) events.push_back({++t, 2, EventKind::Exit});
    ++t;
  }
  return events;
}

const Json* clusterOf(const Json& window, const Analysis& a, uint32_t function_index) {
  for (const Json& c : window["clusters"])
    if (a.clustering.clusters[c["cluster"].get<size_t>()].function == function_index) return &c;
  return nullptr;
}

TEST(RecentWindowsTest, AWindowHoldsExactlyTheCallsThatFinishedInIt) {
  Analyzer analyzer;
  wire::ModuleTable table{"m", 0, {{1, "f", "f", "m.c", 1}, {2, "g", "g", "m.c", 2}}};
  analyzer.consume({1, table});
  RecentWindows recent({60, 300}, 10);
  uint64_t t = 1000, sequence = 0;
  auto feed = [&](uint32_t n, uint64_t ns, bool nested = false) {
    analyzer.consume({1, wire::EventBatch{7, sequence++, calls(t, n, ns, nested), {}, {}, {}}});
  };
  // Minute 0-4: 100 calls of 1 us every 10 s; at 270 s g appears; the last 60 s: 5 us calls.
  for (int second = 0; second <= 330; second += 10) {
    if (second < 270) feed(100, 1000);
    else if (second == 270) feed(3, 1000, true);
    else feed(100, 5000);
    recent.observe(analyzer.snapshot(), second);
  }
  const Analysis a = analyzer.snapshot();
  const Json json = recent.json(a, 330);
  const uint32_t f = a.function_index.at({1, 1});
  // Last 60 s: the moments at 280..330 finished in it (the start is the moment kept at 270).
  const Json& minute = json["windows"][0];
  EXPECT_EQ(minute["seconds"], 60);
  EXPECT_EQ(minute["covered_s"], 60);
  const Json* fm = clusterOf(minute, a, f);
  ASSERT_NE(fm, nullptr);
  EXPECT_EQ((*fm)["calls"], 600);
  EXPECT_EQ((*fm)["sum_ns"], 600 * 5000);
  EXPECT_EQ((*fm)["mean_ns"], 5000);
  EXPECT_NEAR((*fm)["p99_ns"].get<double>(), 5000, 5000 / 32.0);
  // g first appeared at 270, before this window; in the 5-minute one it is new.
  EXPECT_TRUE(minute["new_shapes"].empty());
  const Json& five = json["windows"][1];
  EXPECT_EQ(five["covered_s"], 300);
  const Json* ff = clusterOf(five, a, f);
  ASSERT_NE(ff, nullptr);
  // After the moment kept at 30: 23 feeds of 1 us calls (40..260), the 3 nested at 270, 6 feeds
  // of 5 us calls.
  EXPECT_EQ((*ff)["calls"], 23 * 100 + 3 + 600);
  // New in it: g's shape [g, {f}] (the f under it is f's old leaf shape).
  EXPECT_EQ(five["new_shapes"].size(), 1u);
  EXPECT_EQ(json["first_seen_s"].size(), a.shapes.size());
}

TEST(RecentWindowsTest, AYoungSessionSaysHowMuchItCovers) {
  Analyzer analyzer;
  analyzer.consume({1, wire::ModuleTable{"m", 0, {{1, "f", "f", "m.c", 1}}}});
  RecentWindows recent({60}, 10);
  recent.observe(analyzer.snapshot(), 0);
  uint64_t t = 1000;
  analyzer.consume({1, wire::EventBatch{7, 0, calls(t, 10, 100), {}, {}, {}}});
  recent.observe(analyzer.snapshot(), 12);
  const Analysis a = analyzer.snapshot();
  const Json json = recent.json(a, 12);
  EXPECT_EQ(json["windows"][0]["covered_s"], 12);
  ASSERT_EQ(json["windows"][0]["clusters"].size(), 1u);
  EXPECT_EQ(json["windows"][0]["clusters"][0]["calls"], 10);
  EXPECT_EQ(json["windows"][0]["new_shapes"].size(), 1u);
}

} // namespace
} // namespace shapetrace::analyzer::report
