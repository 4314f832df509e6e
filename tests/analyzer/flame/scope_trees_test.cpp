// The report's scoped flame trees (report/scope_trees.h): each cluster's tree and each function's
// outlier and typical trees equal the trees of an independent walk of the same calls, the scope
// replay that `shapetrace export --cluster/--function/--instance` uses (summaries/sequences.h),
// on random traces with direct and indirect recursion (calls of a cluster nested in calls of the
// same function and of other clusters) and gaps; and the bounds say what they left out.
#include "analyzer.h"
#include "analyzer/trace_builder.h"
#include "flame/flame_extension.h"
#include "flame/scope_trees.h"
#include "export/scoped_calls.h"
#include "summaries/sequences.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <random>

namespace shapetrace::analyzer::report {
namespace {

namespace fs = std::filesystem;
using analyzer::testing::Call;
using analyzer::testing::batchItem;
using analyzer::testing::eventsOf;

// A random request: function 0 calling a random tree of functions 0-5 (a function often calls
// itself or an ancestor: recursion), some calls much slower than usual (outliers).
Call randomCall(std::mt19937& rng, uint32_t function, std::vector<uint32_t>& stack) {
  Call c{function, {}, 20 + rng() % 40};
  if (rng() % 30 == 0) c.self_ns *= 40;
  stack.push_back(function);
  if (stack.size() < 5)
    for (uint32_t n = rng() % 4; n-- > 0;) {
      const uint32_t r = rng() % 10;
      const uint32_t f = r < 2 ? function : r < 4 ? stack[rng() % stack.size()] : 1 + rng() % 5;
      c.children.push_back(randomCall(rng, f, stack));
    }
  stack.pop_back();
  return c;
}

std::vector<wire::StreamItem> randomTrace(uint32_t seed) {
  std::vector<wire::StreamItem> items;
  wire::ModuleTable table;
  table.module_id = "test";
  for (uint32_t id = 0; id < 6; ++id)
    table.functions.push_back(
        wire::FunctionInfo{id, "_Zf" + std::to_string(id), "f" + std::to_string(id), "t.cpp", id});
  items.push_back(wire::StreamItem{42, table});
  std::mt19937 rng(seed);
  for (uint32_t thread = 1; thread <= 2; ++thread) {
    uint64_t sequence = 0;
    uint64_t time = 1'000'000 * thread;
    for (int batch = 0; batch < 30; ++batch) {
      std::vector<Call> calls;
      std::vector<uint32_t> stack;
      for (int i = 0; i < 20; ++i)
        calls.push_back(randomCall(rng, 0, stack));
      std::vector<Event> events = eventsOf(calls, time);
      time = events.back().timestamp + 100;
      // A gap cuts one batch short now and then: the calls open there are discarded.
      if (batch % 7 == 3) {
        events.resize(events.size() / 2);
        const uint64_t lost = events.back().timestamp;
        items.push_back(batchItem(42, thread, sequence++, std::move(events)));
        items.push_back(wire::StreamItem{42, wire::Gap{thread, 5, wire::kNoSequence, lost, lost}});
        continue;
      }
      // Now and then the tracer made the thread wait mid-batch (lossless recording): what follows
      // is later by the wait, which the calls open across it do not count.
      std::vector<wire::TracerWait> waits;
      if (batch % 5 == 1) {
        const auto at = static_cast<uint32_t>(events.size() / 2);
        constexpr uint64_t kWaitNs = 50'000;
        waits.push_back({at, events[at - 1].timestamp, kWaitNs});
        for (size_t i = at; i < events.size(); ++i)
          events[i].timestamp += kWaitNs;
        time += kWaitNs;
      }
      items.push_back(batchItem(42, thread, sequence++, std::move(events)));
      std::get<wire::EventBatch>(items.back().body).tracer_waits = std::move(waits);
    }
  }
  return items;
}

class ScopeTreesTest : public ::testing::Test {
protected:
  void SetUp() override {
    dir = fs::temp_directory_path() / ("shapetrace-scope-trees-" + std::to_string(::getpid()));
    fs::remove_all(dir);
  }
  void TearDown() override { fs::remove_all(dir); }

  void load(const std::vector<wire::StreamItem>& items) {
    {
      recording::RecordingWriter writer(dir.string());
      for (const auto& item : items)
        ASSERT_TRUE(writer.append(wire::encodeItem(item)));
      ASSERT_TRUE(writer.close());
    }
    Analyzer analyzer({}, 1, {});
    for (const auto& item : items)
      analyzer.consume(item);
    analyzer.finish();
    analysis = analyzer.snapshot();
    reader = std::make_unique<recording::RecordingReader>(dir.string());
  }

  Scope allThreads() const {
    Scope scope;
    for (const ThreadSummary& t : analysis.threads)
      scope.threads.push_back(t.key);
    return scope;
  }
  // The independent walk: the scope's calls replayed from the recording into a tree.
  FlameTree walk(const Scope& scope) {
    exports::ScopedCalls calls(false);
    summaries::replayScope(*reader, analysis, scope, calls);
    return calls.tree();
  }

  fs::path dir;
  Analysis analysis;
  std::unique_ptr<recording::RecordingReader> reader;
};

// A tree as sorted lines "f0;f3;f3 calls measured total self" (nodes without calls left out), so
// that trees with different node ids compare.
std::string lines(const FlameTree& tree) {
  std::vector<std::string> out;
  for (uint32_t id = 1; id < tree.size(); ++id) {
    const FlameNode& n = tree[id];
    if (n.calls == 0) continue;
    std::string stack;
    for (const uint32_t a : tree.stack(id))
      stack += (stack.empty() ? "f" : ";f") + std::to_string(tree[a].function);
    out.push_back(stack + " " + std::to_string(n.calls) + " " + std::to_string(n.measured) + " " +
                  std::to_string(n.total_ns) + " " + std::to_string(n.self_ns));
  }
  std::sort(out.begin(), out.end());
  std::string text;
  for (const auto& line : out)
    text += line + "\n";
  return text;
}

FlameTree sum(const FlameTree& a, const FlameTree& b) {
  FlameTree out;
  for (const FlameTree* t : {&a, &b}) {
    std::vector<uint32_t> image(t->size(), FlameTree::kRoot);
    for (uint32_t id = 1; id < t->size(); ++id) {
      image[id] = out.child(image[(*t)[id].parent], (*t)[id].function);
      out[image[id]].add((*t)[id]);
    }
  }
  return out;
}

TEST_F(ScopeTreesTest, EachClustersTreeIsTheWalkOfItsOutermostCalls) {
  load(randomTrace(1));
  ASSERT_GT(analysis.diagnostics.count(Stat::gap_markers), 0u);
  ScopeTreeLimits limits;
  limits.max_clusters = 1000;
  const ScopeTrees trees = readScopeTrees(*reader, analysis, limits);
  ASSERT_TRUE(trees.complete()) << trees.events_read << " of " << trees.events;
  EXPECT_EQ(trees.missed_calls, 0u);
  EXPECT_EQ(trees.truncated_calls, 0u);
  ASSERT_GT(trees.clusters.size(), 20u) << "a rich enough trace";
  uint64_t roots = 0;
  for (size_t i = 0; i < trees.clusters.size(); ++i) {
    Scope scope = allThreads();
    scope.roots = Scope::Roots::kShapes;
    scope.shapes.assign(analysis.shapes.size(), false);
    for (const ShapeId s : analysis.clustering.clusters[trees.clusters[i]].shapes)
      scope.shapes[s] = true;
    exports::ScopedCalls calls(false);
    const auto stats = summaries::replayScope(*reader, analysis, scope, calls);
    EXPECT_EQ(lines(trees.cluster_trees[i].tree), lines(calls.tree())) << "cluster " << trees.clusters[i];
    EXPECT_EQ(trees.cluster_trees[i].roots, stats.sequences - stats.truncated) << trees.clusters[i];
    roots += trees.cluster_trees[i].roots;
    // Appendix A keeps a shape's ancestors out of its cluster: no call nests in one of its own.
    EXPECT_EQ(trees.cluster_trees[i].nested, 0u);
  }
  EXPECT_GT(roots, 1000u);
}

TEST_F(ScopeTreesTest, EachShapesTreeIsTheWalkOfItsCalls) {
  load(randomTrace(4));
  ScopeTreeLimits limits;
  limits.max_clusters = 1000;
  limits.max_shapes = 100000;
  const ScopeTrees trees = readScopeTrees(*reader, analysis, limits);
  ASSERT_GT(trees.shapes.size(), trees.clusters.size()) << "clusters of several shapes";
  for (size_t i = 0; i < trees.shapes.size(); ++i) {
    Scope scope = allThreads();
    scope.roots = Scope::Roots::kShapes;
    scope.shapes.assign(analysis.shapes.size(), false);
    scope.shapes[trees.shapes[i]] = true;
    EXPECT_EQ(lines(trees.shape_trees[i].tree), lines(walk(scope))) << "shape " << trees.shapes[i];
    EXPECT_EQ(trees.shape_trees[i].roots, analysis.shape_states[trees.shapes[i]].calls);
  }
  limits.max_shapes = 5;
  EXPECT_EQ(readScopeTrees(*reader, analysis, limits).shapes.size(), 5u);
}

TEST_F(ScopeTreesTest, AFunctionsOutlierAndTypicalTreesAreTheWalksOfThoseCalls) {
  load(randomTrace(2));
  const ScopeTrees trees = readScopeTrees(*reader, analysis, ScopeTreeLimits{});
  ASSERT_FALSE(trees.functions.empty());
  for (size_t i = 0; i < trees.functions.size(); ++i) {
    const uint32_t f = trees.functions[i];
    // Outlier and typical calls together are the function's outermost calls.
    Scope all = allThreads();
    all.roots = Scope::Roots::kFunctions;
    all.functions.assign(analysis.functions.size(), false);
    all.functions[f] = true;
    EXPECT_EQ(lines(sum(trees.outlier_trees[i].tree, trees.typical_trees[i].tree)), lines(walk(all)))
        << "function " << f;
    // The outlier tree: each kept outlier of f that is an outermost call, walked alone.
    FlameTree outliers;
    uint64_t roots = 0;
    for (const Outlier& o : analysis.outliers) {
      if (o.function != f) continue;
      Scope one;
      one.threads = {{o.process, o.thread}};
      one.roots = Scope::Roots::kInstance;
      one.instance_ns = o.start_ns;
      one.instance_function = f;
      // Outermost: no call of f encloses it (walk the instance's thread for an enclosing one).
      Scope enclosing = all;
      enclosing.threads = one.threads;
      bool outermost = true;
      // A sequence of the function's outermost calls that holds the outlier: the call (or a call
      // cut by a gap, whose finished calls its sequence keeps) encloses it.
      // (The sequence's start is its enter's time, before the analysis' start of a call that
      // waited for the tracer: the outlier's own sequence is told by its root's times.)
      struct Finder : summaries::SequenceSink {
        uint64_t from = 0, to = 0, root = 0;
        bool inside = false, itself = false;
        void begin(const summaries::SequenceInfo& info) override {
          root = info.start_ns;
          itself = false;
        }
        void enter(uint32_t, uint32_t, uint64_t) override {}
        void exit(uint32_t, uint32_t depth, uint64_t enter_ns, uint64_t exit_ns, bool) override {
          if (depth == 0 && enter_ns == from && exit_ns == to) itself = true;
        }
        void end(uint64_t time_ns) override {
          if (!itself && root <= from && time_ns >= to) inside = true;
        }
      } finder;
      finder.from = o.start_ns;
      finder.to = o.start_ns + o.duration_ns;
      summaries::replayScope(*reader, analysis, enclosing, finder);
      outermost = !finder.inside;
      if (!outermost) continue;
      outliers = sum(outliers, walk(one));
      ++roots;
    }
    EXPECT_EQ(lines(trees.outlier_trees[i].tree), lines(outliers)) << "function " << f;
    EXPECT_EQ(trees.outlier_trees[i].roots, roots);
  }
  EXPECT_GT(trees.outlier_trees[0].roots, 0u);
}

TEST_F(ScopeTreesTest, BoundsSayWhatTheyLeftOut) {
  load(randomTrace(3));
  ScopeTreeLimits limits;
  limits.max_events = 2000;
  limits.max_nested = 1;
  limits.max_clusters = 3;
  limits.max_nodes = 4;
  const ScopeTrees trees = readScopeTrees(*reader, analysis, limits);
  EXPECT_FALSE(trees.complete());
  EXPECT_LT(trees.events_read, trees.events);
  EXPECT_GE(trees.events_read, 2000u) << "each thread reads whole batches up to its share";
  EXPECT_EQ(trees.clusters.size(), 3u);
  EXPECT_GT(trees.missed_calls, 0u) << "recursion past one open candidate";
  EXPECT_GT(trees.truncated_calls, 0u) << "stacks past 4 nodes";
  for (const ScopeTree& t : trees.cluster_trees)
    EXPECT_LE(t.tree.size(), 4u);
  const auto json = scopeTreesJson(trees, analysis, limits);
  EXPECT_EQ(json["complete"], false);
  EXPECT_EQ(json["clusters"].size(), 3u);
  EXPECT_EQ(json["clusters"][0]["calls"], analysis.cluster_calls[trees.clusters[0]]);
  // Clusters by total time, most first.
  EXPECT_GE(analysis.cluster_stats[trees.clusters[0]].moments.sum(),
            analysis.cluster_stats[trees.clusters[1]].moments.sum());
  // The page's bound on nodes: the clusters' trees first, the rest left out and counted.
  limits.max_total_nodes = trees.cluster_trees[0].tree.size();
  const auto small = scopeTreesJson(trees, analysis, limits);
  EXPECT_FALSE(small["clusters"][0]["nodes"].is_null());
  EXPECT_TRUE(small["clusters"][1]["nodes"].is_null());
  EXPECT_EQ(small["left_out_trees"], trees.clusters.size() - 1 + 2 * trees.functions.size() + trees.shapes.size());
  limits.max_events = 0;
  EXPECT_TRUE(readScopeTrees(*reader, analysis, limits).clusters.empty());
}

} // namespace
} // namespace shapetrace::analyzer::report
