// The flame extension (extensions/flame.h) and the calling-context tree (flame_tree.h): the folded
// stacks of generated traces (recursion, several threads and processes, unwind exits, longjmp-like
// escapes, gaps) equal a straightforward stack walk over the same events, byte for byte after
// sorting; recursion folding on 003's examples; the bound on distinct stacks; the JSON result.
#include "analyzer.h"
#include "flame/flame_extension.h"
#include "analyzer/trace_builder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>

namespace shapetrace::analyzer {
namespace {

using testing::batchItem;
using testing::call;
using testing::eventsOf;
using Json = nlohmann::ordered_json;

// Process p names function id i "f<(i + p) % 6>": the same function has different ids in
// different processes, so the merge must go by identity.
wire::StreamItem moduleTable(uint64_t process) {
  wire::ModuleTable table;
  table.module_id = "test";
  for (uint32_t id = 0; id < 6; ++id) {
    const std::string name = "f" + std::to_string((id + process) % 6);
    table.functions.push_back(wire::FunctionInfo{id, "_Z" + name, name, "t.cpp", id});
  }
  return wire::StreamItem{process, table};
}
std::string nameIn(uint64_t process, uint32_t id) { return "f" + std::to_string((id + process) % 6); }

// A random thread: enters (often recursive: the same function again, or one seen below), exits of
// the top call (some as unwind exits), escapes to a deeper frame's function (longjmp), exits of
// functions not on the stack, and now and then a gap marker; it ends with calls still open.
std::vector<wire::StreamItem> randomThread(uint64_t process, uint32_t thread, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<wire::StreamItem> items;
  std::vector<Event> events;
  std::vector<uint32_t> stack;
  uint64_t time = 1000 + seed;
  uint64_t sequence = 0;
  for (int i = 0; i < 4000; ++i) {
    time += rng() % 50;
    const uint32_t r = rng() % 100;
    if (stack.empty() || (r < 48 && stack.size() < 40)) {
      auto f = static_cast<uint32_t>(rng() % 6);
      if (!stack.empty() && r < 12) f = stack.back();                   // direct recursion
      else if (!stack.empty() && r < 20) f = stack[rng() % stack.size()]; // indirect
      stack.push_back(f);
      events.push_back({time, f, EventKind::Enter});
    } else if (r < 90) {
      events.push_back({time, stack.back(), r < 80 ? EventKind::Exit : EventKind::UnwindExit});
      stack.pop_back();
    } else if (r < 95) {
      // longjmp: the exit of a function deeper down (the nearest frame of it from the top).
      const uint32_t f = stack[rng() % stack.size()];
      events.push_back({time, f, EventKind::Exit});
      while (stack.back() != f)
        stack.pop_back();
      stack.pop_back();
    } else if (r < 98) {
      events.push_back({time, static_cast<uint32_t>(6 + rng() % 3), EventKind::Exit}); // not on the stack
    } else {
      items.push_back(batchItem(process, thread, sequence++, std::move(events)));
      events.clear();
      items.push_back(wire::StreamItem{process, wire::Gap{thread, 3}});
      stack.clear();
    }
    if (events.size() >= 300) {
      items.push_back(batchItem(process, thread, sequence++, std::move(events)));
      events.clear();
    }
  }
  items.push_back(batchItem(process, thread, sequence++, std::move(events)));
  return items;
}

// The independent computation: walk each thread's events with a stack of (stack text, enter time,
// measured callees' time); an exit finds the nearest frame of its function from the top, the
// frames above it end unmeasured (their time stays their caller's own), it ends measured; a gap
// empties the stack. Self time per stack text, summed over threads.
// Only the calls that end in [from_ns, to_ns) count (a time window's tree, flame_slices.h).
std::string walkFolded(const std::vector<wire::StreamItem>& items, uint64_t from_ns = 0,
                       uint64_t to_ns = UINT64_MAX) {
  struct Frame {
    std::string stack;
    uint32_t function;
    uint64_t enter, callees;
  };
  std::map<std::pair<uint64_t, uint32_t>, std::vector<Frame>> stacks;
  std::map<std::pair<uint64_t, uint32_t>, uint64_t> last;
  std::map<std::string, uint64_t> self;
  for (const wire::StreamItem& item : items) {
    if (const auto* gap = std::get_if<wire::Gap>(&item.body)) {
      stacks[{item.process, gap->thread}].clear();
      continue;
    }
    const auto* batch = std::get_if<wire::EventBatch>(&item.body);
    if (batch == nullptr) continue;
    auto& stack = stacks[{item.process, batch->thread}];
    for (const Event& e : batch->events) {
      const uint64_t t = std::max(e.timestamp, last[{item.process, batch->thread}]);
      last[{item.process, batch->thread}] = t;
      if (e.kind == EventKind::Enter) {
        const std::string name = nameIn(item.process, e.function_id);
        stack.push_back({stack.empty() ? name : stack.back().stack + ";" + name, e.function_id, t, 0});
        continue;
      }
      size_t i = stack.size();
      while (i > 0 && stack[i - 1].function != e.function_id)
        --i;
      if (i == 0) continue;
      stack.resize(i);
      const Frame frame = stack.back();
      stack.pop_back();
      const uint64_t duration = t - frame.enter;
      if (t >= from_ns && t < to_ns) self[frame.stack] += duration - std::min(duration, frame.callees);
      if (!stack.empty()) stack.back().callees += duration;
    }
  }
  std::string out;
  for (const auto& [stack, ns] : self) // std::map: sorted
    if (ns > 0) out += stack + " " + std::to_string(ns) + "\n";
  return out;
}

// The folded stacks of a merged tree (model function indices), lines sorted.
std::string folded(const FlameTree& tree, const Analysis& a) {
  const std::string text =
      tree.foldedStacks([&](uint32_t f) -> std::string_view { return a.functions[f].name; });
  std::vector<std::string> lines;
  for (size_t b = 0; b < text.size();) {
    const size_t e = text.find('\n', b);
    lines.push_back(text.substr(b, e - b));
    b = e + 1;
  }
  std::sort(lines.begin(), lines.end());
  std::string out;
  for (const auto& line : lines)
    out += line + "\n";
  return out;
}

struct FlameRun {
  Analysis analysis;
  MergedFlame flame;
};

FlameRun run(const std::vector<wire::StreamItem>& items, unsigned jobs = 1,
             size_t max_nodes = FlameExtension::kDefaultMaxNodes,
             uint32_t max_slices = FlameSlices::kDefaultMaxSlices,
             FlameExtension** kept = nullptr) {
  std::vector<NamedExtension> extensions;
  auto flame = std::make_unique<FlameExtension>(max_nodes, kDefaultMaxDepth, max_slices);
  if (kept != nullptr) *kept = flame.get();
  FlameExtension* extension = flame.get();
  extensions.push_back({"flame", std::move(flame)});
  static std::vector<std::unique_ptr<Analyzer>> analyzers; // kept alive for `kept`
  auto analyzer_owner = std::make_unique<Analyzer>(AnalysisSettings{}, jobs, std::move(extensions));
  Analyzer& analyzer = *analyzer_owner;
  if (kept != nullptr) analyzers.push_back(std::move(analyzer_owner));
  for (const auto& item : items)
    analyzer.consume(item);
  analyzer.finish();
  FlameRun r;
  r.analysis = analyzer.snapshot();
  FunctionIndex functions(r.analysis, nullptr);
  r.flame = extension->merged(functions);
  return r;
}

std::vector<wire::StreamItem> generated() {
  std::vector<wire::StreamItem> items = {moduleTable(1), moduleTable(2)};
  // Threads of two processes, interleaved batch by batch as a recording interleaves them.
  std::vector<std::vector<wire::StreamItem>> threads = {
      randomThread(1, 10, 1), randomThread(1, 11, 2), randomThread(2, 10, 3)};
  for (size_t i = 0;; ++i) {
    bool any = false;
    for (const auto& t : threads)
      if (i < t.size()) {
        items.push_back(t[i]);
        any = true;
      }
    if (!any) break;
  }
  return items;
}

TEST(FlameTest, FoldedStacksEqualAStraightforwardStackWalk) {
  const auto items = generated();
  const std::string expected = walkFolded(items);
  ASSERT_GT(std::count(expected.begin(), expected.end(), '\n'), 100) << "a rich enough trace";
  for (unsigned jobs : {1u, 3u}) {
    const FlameRun r = run(items, jobs);
    EXPECT_EQ(folded(r.flame.tree, r.analysis), expected) << "jobs " << jobs;
    EXPECT_GT(r.analysis.diagnostics.count(Stat::frames_closed_by_outer_exit), 0u);
    EXPECT_GT(r.analysis.diagnostics.count(Stat::unwind_exits), 0u);
    EXPECT_GT(r.analysis.diagnostics.count(Stat::gap_markers), 0u);
  }
}

// A tree with the merged tree's nodes and the values of slices [first, last).
FlameTree windowTree(const FlameTree& whole, const std::vector<FlameSlice>& slices, size_t first,
                     size_t last) {
  FlameTree tree;
  for (uint32_t id = 1; id < whole.size(); ++id)
    tree.child(whole[id].parent, whole[id].function);
  for (size_t s = first; s < last; ++s)
    for (size_t i = 0; i < slices[s].nodes.size(); ++i) {
      FlameNode& node = tree[slices[s].nodes[i]];
      const FlameValues& v = slices[s].values[i];
      node.add({0, 0, v.calls, v.measured, v.total_ns, v.self_ns});
    }
  return tree;
}

TEST(FlameTest, ATimeWindowsTreeIsTheWalkOfTheCallsThatEndedInIt) {
  const auto items = generated();
  // 64 slices a thread (widened a few times over the trace), and 5 (widened often).
  for (const uint32_t max_slices : {64u, 5u}) {
    FlameExtension* extension = nullptr;
    FlameRun r = run(items, 2, FlameExtension::kDefaultMaxNodes, max_slices, &extension);
    FunctionIndex functions(r.analysis, nullptr);
    unsigned shift = 0;
    const std::vector<FlameSlice> slices = extension->mergedSlices(r.flame, shift);
    ASSERT_GE(slices.size(), 3u) << max_slices;
    EXPECT_GT(shift, FlameSlices::kFirstShift) << "the slices were widened";
    // Every slice, every run of slices, and all of them (= the whole tree, calls included).
    for (size_t first = 0; first < slices.size(); ++first)
      for (const size_t last : {first + 1, std::min(slices.size(), first + 3), slices.size()}) {
        const uint64_t from = slices[first].index << shift;
        const uint64_t to = last == slices.size() ? UINT64_MAX : slices[last].index << shift;
        EXPECT_EQ(folded(windowTree(r.flame.tree, slices, first, last), r.analysis),
                  walkFolded(items, from, to))
            << max_slices << " slices " << first << ".." << last;
      }
    const FlameTree all = windowTree(r.flame.tree, slices, 0, slices.size());
    for (uint32_t id = 1; id < all.size(); ++id) {
      EXPECT_EQ(all[id].calls, r.flame.tree[id].calls) << id;
      EXPECT_EQ(all[id].measured, r.flame.tree[id].measured) << id;
      EXPECT_EQ(all[id].total_ns, r.flame.tree[id].total_ns) << id;
    }
    // The JSON result holds the same slices.
    const Json json = extension->result(r.analysis, functions);
    ASSERT_EQ(json["slices"]["slices"].size(), slices.size());
    EXPECT_EQ(json["slices"]["width_ns"], uint64_t{1} << shift);
    EXPECT_EQ(json["slices"]["slices"][1]["start_ns"], slices[1].index << shift);
    EXPECT_EQ(json["slices"]["slices"][1]["nodes"], Json(slices[1].nodes));
  }
}

TEST(FlameTest, SlicesPastTheirEntryBoundWidenAndStillAddUp) {
  // Two nodes alternate in every 1 us slice; at most 8 closed entries forces widening.
  FlameSlices bounded(1000, 8);
  FlameSlices free(1000, SIZE_MAX);
  uint64_t calls = 0;
  for (uint64_t t = 0; t < 200; ++t) {
    bounded.add(1 + t % 2, t << 10, true, 10, 5);
    free.add(1 + t % 2, t << 10, true, 10, 5);
    ++calls;
  }
  EXPECT_GT(bounded.shift(), FlameSlices::kFirstShift);
  EXPECT_LE(FlameSlices::entries(bounded.slices()), 8u + 2u) << "closed entries + the current";
  const auto coarse = FlameSlices::coarsened(free.slices(), free.shift(), bounded.shift());
  const auto kept = bounded.slices();
  ASSERT_EQ(coarse.size(), kept.size());
  for (size_t s = 0; s < kept.size(); ++s) {
    EXPECT_EQ(coarse[s].index, kept[s].index);
    EXPECT_EQ(coarse[s].nodes, kept[s].nodes);
    for (size_t i = 0; i < kept[s].nodes.size(); ++i)
      EXPECT_EQ(coarse[s].values[i].self_ns, kept[s].values[i].self_ns);
  }
  uint64_t counted = 0;
  for (const auto& s : kept)
    for (const auto& v : s.values)
      counted += v.calls;
  EXPECT_EQ(counted, calls);
}

TEST(FlameTest, EachThreadsTreeIsItsOwnWalk) {
  const auto items = generated();
  const FlameRun r = run(items, 2);
  ASSERT_EQ(r.flame.threads.size(), 3u);
  for (const MergedFlame::Thread& t : r.flame.threads) {
    std::vector<wire::StreamItem> own = {moduleTable(t.key.process)};
    for (const auto& item : items) {
      const auto* batch = std::get_if<wire::EventBatch>(&item.body);
      const auto* gap = std::get_if<wire::Gap>(&item.body);
      const uint32_t thread = batch ? batch->thread : gap ? gap->thread : UINT32_MAX;
      if (item.process == t.key.process && thread == t.key.thread) own.push_back(item);
    }
    EXPECT_EQ(folded(t.tree, r.analysis), walkFolded(own));
    // The thread's values sit on the merged nodes it names.
    for (size_t i = 0; i < t.nodes.size(); ++i)
      EXPECT_EQ(r.flame.tree[t.nodes[i]].function, t.values[i].function == UINT32_MAX
                                                       ? UINT32_MAX
                                                       : r.analysis.functionIndex(t.key.process, t.values[i].function));
  }
}

TEST(FlameTest, CallsTotalAndSelfOfAKnownTree) {
  // f1 (self 10) calls f2 (self 4) and f3 (self 6), which calls f2 (self 4).
  const auto events = eventsOf({call(1, {call(2, {}, 4), call(3, {call(2, {}, 4)}, 6)}, 10)});
  const FlameRun r = run({moduleTable(0), batchItem(0, 1, 0, events)});
  const FlameTree& t = r.flame.tree;
  const uint32_t f1 = r.analysis.functionIndex(0, 1), f2 = r.analysis.functionIndex(0, 2),
                 f3 = r.analysis.functionIndex(0, 3);
  const uint32_t n1 = t.find(FlameTree::kRoot, f1);
  const uint32_t n12 = t.find(n1, f2), n13 = t.find(n1, f3);
  const uint32_t n132 = t.find(n13, f2);
  ASSERT_NE(n132, FlameTree::kNoNode);
  EXPECT_EQ(t.size(), 5u);
  EXPECT_EQ(t[n1].total_ns, 24u);
  EXPECT_EQ(t[n1].self_ns, 10u);
  EXPECT_EQ(t[n12].total_ns, 4u);
  EXPECT_EQ(t[n13].total_ns, 10u);
  EXPECT_EQ(t[n13].self_ns, 6u);
  EXPECT_EQ(t[n132].calls, 1u);
  EXPECT_EQ(t.totalSelfNs(), 24u);
  EXPECT_EQ(folded(t, r.analysis), "f1 10\nf1;f2 4\nf1;f3 6\nf1;f3;f2 4\n");
}

// Builds a tree from folded-stack lines ("a;b;c self"), one call per line.
FlameTree treeOf(const std::vector<std::pair<std::string, uint64_t>>& stacks,
                 std::vector<std::string>& names) {
  FlameTree tree;
  for (const auto& [stack, self] : stacks) {
    uint32_t node = FlameTree::kRoot;
    size_t begin = 0;
    while (begin <= stack.size()) {
      const size_t end = std::min(stack.find(';', begin), stack.size());
      const std::string name = stack.substr(begin, end - begin);
      auto it = std::find(names.begin(), names.end(), name);
      if (it == names.end()) it = names.insert(names.end(), name);
      node = tree.child(node, static_cast<uint32_t>(it - names.begin()));
      begin = end + 1;
    }
    tree[node].calls += 1;
    tree[node].self_ns += self;
  }
  for (size_t i = tree.size(); i-- > 1;) { // inclusive = self below
    tree[static_cast<uint32_t>(i)].total_ns += tree[static_cast<uint32_t>(i)].self_ns;
    tree[tree[static_cast<uint32_t>(i)].parent].total_ns += tree[static_cast<uint32_t>(i)].total_ns;
  }
  return tree;
}

std::string text(const FlameTree& tree, const std::vector<std::string>& names) {
  std::string s = tree.foldedStacks([&](uint32_t f) -> std::string_view { return names[f]; });
  std::vector<std::string> lines;
  for (size_t b = 0; b < s.size();) {
    const size_t e = s.find('\n', b);
    lines.push_back(s.substr(b, e - b));
    b = e + 1;
  }
  std::sort(lines.begin(), lines.end());
  std::string out;
  for (const auto& l : lines)
    out += l + "\n";
  return out;
}

TEST(FlameTest, RecursionFoldingAsThePaperDefinesIt) {
  std::vector<std::string> names;
  // 003, section 2: a merge sort's deep recursion, and `a` occasionally calling `b`, which calls `a`.
  const FlameTree tree = treeOf({{"main;sort;sort;sort;merge", 5},
                                 {"main;sort;sort;merge", 3},
                                 {"main;sort;merge", 2},
                                 {"main;sort;sort", 1},
                                 {"main;a;b;a;c", 7},
                                 {"main;a;b", 4},
                                 {"main;a", 1}},
                                names);
  // Direct: a frame of the same function as its parent folds into it; a -> b -> a stays.
  EXPECT_EQ(text(tree.folded(RecursionFold::kDirect), names),
            "main;a 1\nmain;a;b 4\nmain;a;b;a;c 7\nmain;sort 1\nmain;sort;merge 10\n");
  // Indirect (fully folded, the funky graph's): the second `a` folds into the top-most one, so
  // its callee c becomes a's; the sequence through b is lost.
  EXPECT_EQ(text(tree.folded(RecursionFold::kIndirect), names),
            "main;a 1\nmain;a;b 4\nmain;a;c 7\nmain;sort 1\nmain;sort;merge 10\n");
  const FlameTree full = tree.folded(RecursionFold::kIndirect);
  // Inclusive time is the self time below, not double counted; calls add up.
  const uint32_t main = full.find(FlameTree::kRoot, 0);
  EXPECT_EQ(full[main].total_ns, 23u);
  const uint32_t sort = full.find(main, 1);
  EXPECT_EQ(full[sort].total_ns, 11u);
  EXPECT_EQ(full[sort].calls, 1u); // the line "main;sort;sort" ends in a sort call
  EXPECT_EQ(full.totalSelfNs(), tree.totalSelfNs());
  // Without folding, the tree is unchanged.
  EXPECT_EQ(text(tree.folded(RecursionFold::kNone), names), text(tree, names));
}

TEST(FlameTest, PastTheBoundNewStacksCountAsTheirCallersOwnTime) {
  // f1 { f2 { f3 } } with room for the root and two nodes: f3's call has no node.
  const auto events = eventsOf({call(1, {call(2, {call(3, {}, 8)}, 4)}, 10)});
  const FlameRun r = run({moduleTable(0), batchItem(0, 1, 0, events)}, 1, 3);
  EXPECT_EQ(r.flame.truncated_calls, 1u);
  EXPECT_EQ(r.flame.tree.size(), 3u);
  EXPECT_EQ(folded(r.flame.tree, r.analysis), "f1 10\nf1;f2 12\n");
}

TEST(FlameTest, TheJsonResultIsColumnsWithThreads) {
  const auto events = eventsOf({call(1, {call(2, {}, 4)}, 10)});
  Analyzer analyzer({}, 1, makeExtensions(selectExtensions("flame"), {}));
  analyzer.consume(moduleTable(0));
  analyzer.consume(batchItem(0, 1, 0, events));
  analyzer.consume(batchItem(0, 2, 0, events));
  analyzer.finish();
  const Analysis a = analyzer.snapshot();
  ASSERT_EQ(a.extensions.size(), 1u);
  const Json& j = a.extensions[0].second;
  EXPECT_EQ(j["nodes"]["parent"], Json::parse("[-1, 0, 1]"));
  EXPECT_EQ(j["nodes"]["function"][0], -1);
  EXPECT_EQ(j["nodes"]["calls"], Json::parse("[2, 2, 2]"));
  EXPECT_EQ(j["nodes"]["total_ns"], Json::parse("[28, 28, 8]"));
  EXPECT_EQ(j["nodes"]["self_ns"], Json::parse("[0, 20, 8]"));
  ASSERT_EQ(j["threads"].size(), 2u);
  EXPECT_EQ(j["threads"][1]["thread"], 2);
  EXPECT_EQ(j["threads"][1]["nodes"], Json::parse("[1, 2]"));
  EXPECT_EQ(j["threads"][1]["total_ns"], Json::parse("[14, 4]"));
  EXPECT_EQ(j["truncated_calls"], 0);
}

} // namespace
} // namespace shapetrace::analyzer
