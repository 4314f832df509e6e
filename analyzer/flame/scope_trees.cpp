// The scoped flame trees of the report: one bounded replay of the recording.
#include "flame/scope_trees.h"

#include "call_stack.h"
#include "flame/flame_extension.h"
#include "flame/flame_slices.h"
#include "replay.h"

#include <algorithm>
#include <set>
#include <tuple>

namespace shapetrace::analyzer {
namespace {

constexpr size_t kNone = SIZE_MAX;

// A scope's values over its function's context tree (node ids of Wanted::contexts).
using Values = std::vector<FlameValues>;

struct Entry {
  uint32_t node; // in the candidate's function's context tree
  FlameValues values;
};

// What the pass looks for, shared by every thread.
struct Wanted {
  std::vector<size_t> cluster_slot;  // by cluster id
  std::vector<size_t> shape_slot;    // by shape id
  std::vector<size_t> function_slot; // by function index
  std::vector<size_t> context;       // by function index: its context tree, kNone: no candidate
  std::set<std::tuple<uint64_t, uint32_t, uint64_t, uint32_t>> outliers; // process, thread, start, fn
  size_t max_nested = 8;
};

// Where the calls go: per candidate function, the tree of the stacks met under its calls (rooted
// at the function), and per scope the values on that tree's nodes.
struct Accumulators {
  std::vector<FlameTree> contexts;
  std::vector<Values> clusters, shapes, outliers, typical; // by slot
  std::vector<ScopeTree>* cluster_trees = nullptr; // for the roots and nested counts
  std::vector<ScopeTree>* shape_trees = nullptr;
  std::vector<ScopeTree>* outlier_trees = nullptr;
  std::vector<ScopeTree>* typical_trees = nullptr;
};

// One thread's calls into the scope trees (a call-stack sink, call_stack.h). A candidate's calls
// are summed per context node in its log, one log per nesting level, and added to its scope when
// it ends: no tree per call, no hash look-up but the one per call and open candidate, and a log no
// longer than the stacks met under the candidate (a thread's loop would otherwise log every call
// of its thread).
class ScopeTreeSink {
public:
  ScopeTreeSink(const Wanted& wanted, const Analysis& analysis, const ThreadKey& thread,
                Accumulators& acc, ScopeTrees& out)
      : wanted_(wanted), analysis_(analysis), thread_(thread), acc_(acc), out_(out) {}

  void onEnter(uint32_t function, uint32_t, uint64_t) {
    frames_.push_back({function, 0});
    for (size_t k = 0; k < open_; ++k) {
      Candidate& c = candidates_[k];
      const uint32_t parent = c.path.back();
      c.path.push_back(parent == FlameTree::kNoNode ? parent
                                                    : acc_.contexts[c.context].child(parent, function));
    }
    if (function >= wanted_.context.size() || wanted_.context[function] == kNone) return;
    if (open_ == wanted_.max_nested) {
      ++out_.missed_calls;
      return;
    }
    if (open_ == candidates_.size()) candidates_.emplace_back();
    Candidate& c = candidates_[open_++];
    c.function = function;
    c.context = wanted_.context[function];
    c.path.assign(1, acc_.contexts[c.context].child(FlameTree::kRoot, function));
    c.frame = frames_.size() - 1;
    c.clearLog();
    c.pending.clear();
  }

  void onCall(const FinishedCall& call) {
    const Frame frame = frames_.back();
    frames_.pop_back();
    FlameValues v;
    v.calls = 1;
    if (call.measured) {
      const uint64_t duration = call.exit_ns - call.enter_ns;
      v.measured = 1;
      v.total_ns = duration;
      v.self_ns = duration > frame.callee_ns ? duration - frame.callee_ns : 0;
      if (!frames_.empty()) frames_.back().callee_ns += duration;
    }
    for (size_t k = 0; k < open_; ++k) {
      Candidate& c = candidates_[k];
      const uint32_t node = c.path.back();
      c.path.pop_back();
      if (node == FlameTree::kNoNode)
        ++out_.truncated_calls;
      else
        c.addToLog(node, v);
    }
    if (open_ > 0 && candidates_[open_ - 1].frame == frames_.size()) close(call);
  }

  // The open calls were discarded: so is every open candidate, but the calls of a cluster waiting
  // on them are its outermost calls after all, and an outermost call of an outlier function cut
  // here keeps the calls it finished, among its typical calls (it has no end, so it is no
  // outlier), as `export --function` keeps them.
  void onReset() {
    for (size_t k = open_; k-- > 0;) {
      Candidate& c = candidates_[k];
      for (const Pending& p : c.pending)
        addRoot(acc_.clusters[p.slot], (*acc_.cluster_trees)[p.slot], p.log);
      bool outermost = true;
      for (size_t j = 0; j < k; ++j)
        outermost = outermost && candidates_[j].function != c.function;
      if (outermost && wanted_.function_slot[c.function] != kNone) {
        const size_t f = wanted_.function_slot[c.function];
        addRoot(acc_.typical[f], (*acc_.typical_trees)[f], c.log);
      }
    }
    open_ = 0;
    frames_.clear();
  }

private:
  struct Frame {
    uint32_t function;
    uint64_t callee_ns; // the time of its measured callees so far
  };
  struct Pending {
    size_t slot; // into the cluster trees
    std::vector<Entry> log;
  };
  struct Candidate {
    uint32_t function = 0;
    size_t context = 0;
    std::vector<uint32_t> path; // per frame from the candidate's up: its context node
    size_t frame = 0;           // its frame's index
    std::vector<Entry> log;     // its calls so far, summed per context node
    std::vector<uint32_t> entry_of_node; // by context node: 1 + its entry in log, 0: none
    std::vector<Pending> pending; // calls of a cluster under it, waiting for its own cluster

    void addToLog(uint32_t node, const FlameValues& values) {
      if (node >= entry_of_node.size())
        entry_of_node.resize(std::max<size_t>(node + 1, 2 * entry_of_node.size()), 0);
      uint32_t& entry = entry_of_node[node];
      if (entry == 0) {
        log.push_back({node, values});
        entry = static_cast<uint32_t>(log.size());
      } else {
        log[entry - 1].values.add(values);
      }
    }
    void clearLog() {
      for (const Entry& e : log)
        entry_of_node[e.node] = 0;
      log.clear();
    }
  };

  static void addRoot(Values& values, ScopeTree& scope, const std::vector<Entry>& log) {
    ++scope.roots;
    for (const Entry& e : log) {
      if (e.node >= values.size()) values.resize(std::max<size_t>(e.node + 1, values.size() * 2));
      values[e.node].add(e.values);
    }
  }

  void close(const FinishedCall& call) {
    Candidate& c = candidates_[--open_];
    // The nearest open candidate of the same function: the call may be nested in its scope.
    Candidate* holder = nullptr;
    for (size_t k = open_; k-- > 0;)
      if (candidates_[k].function == c.function) {
        holder = &candidates_[k];
        break;
      }
    const auto& of_shape = analysis_.clustering.cluster_of_shape;
    const ClusterId cluster =
        call.shape != kNullShape && call.shape < of_shape.size() ? of_shape[call.shape] : kNoCluster;
    const size_t slot =
        cluster < wanted_.cluster_slot.size() ? wanted_.cluster_slot[cluster] : kNone;
    if (call.shape < wanted_.shape_slot.size() && wanted_.shape_slot[call.shape] != kNone) {
      const size_t k = wanted_.shape_slot[call.shape];
      addRoot(acc_.shapes[k], (*acc_.shape_trees)[k], c.log);
    }
    // Calls of other clusters waiting on this one: not nested in a call of their cluster here.
    for (Pending& p : c.pending) {
      if (p.slot == slot)
        ++(*acc_.cluster_trees)[p.slot].nested;
      else if (holder != nullptr)
        holder->pending.push_back(std::move(p));
      else
        addRoot(acc_.clusters[p.slot], (*acc_.cluster_trees)[p.slot], p.log);
    }
    c.pending.clear();
    if (holder == nullptr && wanted_.function_slot[c.function] != kNone) {
      const size_t f = wanted_.function_slot[c.function];
      const bool outlier =
          wanted_.outliers.count({thread_.process, thread_.thread, call.enter_ns, c.function}) > 0;
      if (outlier)
        addRoot(acc_.outliers[f], (*acc_.outlier_trees)[f], c.log);
      else
        addRoot(acc_.typical[f], (*acc_.typical_trees)[f], c.log);
    }
    if (slot == kNone) return;
    if (holder != nullptr)
      holder->pending.push_back({slot, c.log});
    else
      addRoot(acc_.clusters[slot], (*acc_.cluster_trees)[slot], c.log);
  }

  const Wanted& wanted_;
  const Analysis& analysis_;
  ThreadKey thread_;
  Accumulators& acc_;
  ScopeTrees& out_;
  std::vector<Frame> frames_;
  std::vector<Candidate> candidates_; // [0, open_) are open, outermost first
  size_t open_ = 0;
};

// A scope's tree: the context tree's nodes that have calls in the scope, with its values.
FlameTree scopeTree(const FlameTree& context, const Values& values) {
  FlameTree out;
  std::vector<uint32_t> image(context.size(), FlameTree::kNoNode);
  image[FlameTree::kRoot] = FlameTree::kRoot;
  for (uint32_t id = 1; id < context.size() && id < values.size(); ++id) {
    if (values[id].calls == 0 || image[context[id].parent] == FlameTree::kNoNode) continue;
    image[id] = out.child(image[context[id].parent], context[id].function);
    FlameNode& n = out[image[id]];
    n.calls = values[id].calls;
    n.measured = values[id].measured;
    n.total_ns = values[id].total_ns;
    n.self_ns = values[id].self_ns;
  }
  return out;
}

} // namespace

ScopeTrees readScopeTrees(recording::RecordingReader& reader, const Analysis& analysis,
                          const ScopeTreeLimits& limits) {
  ScopeTrees out;
  for (const ThreadSummary& t : analysis.threads)
    out.events += t.events;
  if (limits.max_events == 0) return out;

  Wanted wanted;
  wanted.max_nested = std::max<size_t>(limits.max_nested, 1);
  Accumulators acc;
  const size_t functions = analysis.functions.size();
  wanted.context.assign(functions, kNone);
  auto candidate = [&](uint32_t f) {
    if (wanted.context[f] != kNone) return;
    wanted.context[f] = acc.contexts.size();
    acc.contexts.emplace_back(limits.max_nodes);
  };
  // Clusters with the most time (the null shape's cluster has no calls of its own).
  const auto& clusters = analysis.clustering.clusters;
  std::vector<ClusterId> order;
  for (ClusterId c = 0; c < clusters.size(); ++c)
    if (c < analysis.cluster_calls.size() && analysis.cluster_calls[c] > 0) order.push_back(c);
  std::sort(order.begin(), order.end(), [&](ClusterId a, ClusterId b) {
    const auto sum_a = analysis.cluster_stats[a].moments.sum();
    const auto sum_b = analysis.cluster_stats[b].moments.sum();
    return sum_a != sum_b ? sum_a > sum_b : a < b;
  });
  if (order.size() > limits.max_clusters) order.resize(limits.max_clusters);
  wanted.cluster_slot.assign(clusters.size(), kNone);
  for (const ClusterId c : order) {
    if (clusters[c].function >= functions) continue;
    wanted.cluster_slot[c] = out.clusters.size();
    out.clusters.push_back(c);
    out.cluster_trees.emplace_back(limits.max_nodes);
    candidate(clusters[c].function);
  }
  wanted.shape_slot.assign(analysis.shapes.size(), kNone);
  for (const ClusterId c : out.clusters)
    for (const ShapeId shape : clusters[c].shapes)
      if (out.shapes.size() < limits.max_shapes && shape < analysis.shapes.size()) {
        wanted.shape_slot[shape] = out.shapes.size();
        out.shapes.push_back(shape);
        out.shape_trees.emplace_back(limits.max_nodes);
      }
  // Functions with the most kept outliers.
  std::vector<uint64_t> kept(functions, 0);
  for (const Outlier& o : analysis.outliers)
    if (o.function < functions) {
      ++kept[o.function];
      wanted.outliers.insert({o.process, o.thread, o.start_ns, o.function});
    }
  std::vector<uint32_t> by_outliers;
  for (uint32_t f = 0; f < functions; ++f)
    if (kept[f] > 0) by_outliers.push_back(f);
  std::sort(by_outliers.begin(), by_outliers.end(), [&](uint32_t a, uint32_t b) {
    return kept[a] != kept[b] ? kept[a] > kept[b] : a < b;
  });
  if (by_outliers.size() > limits.max_functions) by_outliers.resize(limits.max_functions);
  wanted.function_slot.assign(functions, kNone);
  for (const uint32_t f : by_outliers) {
    wanted.function_slot[f] = out.functions.size();
    out.functions.push_back(f);
    out.outlier_trees.emplace_back(limits.max_nodes);
    out.typical_trees.emplace_back(limits.max_nodes);
    candidate(f);
  }
  acc.clusters.resize(out.clusters.size());
  acc.shapes.resize(out.shapes.size());
  acc.shape_trees = &out.shape_trees;
  acc.outliers.resize(out.functions.size());
  acc.typical.resize(out.functions.size());
  acc.cluster_trees = &out.cluster_trees;
  acc.outlier_trees = &out.outlier_trees;
  acc.typical_trees = &out.typical_trees;
  if (out.clusters.empty() && out.functions.empty()) return out;

  // Each thread from its start, for its share of the event budget.
  ThreadEvents events(reader, analysis);
  const uint32_t max_depth = analysis.settings.thread.max_depth;
  for (const ThreadSummary& t : analysis.threads) {
    const auto share = static_cast<uint64_t>(
        static_cast<long double>(limits.max_events) * t.events / std::max<uint64_t>(out.events, 1));
    const uint64_t budget = out.events <= limits.max_events ? UINT64_MAX : std::max<uint64_t>(share, 1);
    ScopeTreeSink sink(wanted, analysis, t.key, acc, out);
    CallStack<ScopeTreeSink> stack(sink, ShapeLookup::find(analysis.shapes), max_depth);
    if (!events.start(t.key, 0)) continue;
    uint64_t read = 0;
    bool reading = true;
    while (reading) {
      switch (events.next()) {
      case ThreadEvents::Kind::kEnd: reading = false; break;
      case ThreadEvents::Kind::kGap: stack.onGapMarker(events.dropped()); break;
      case ThreadEvents::Kind::kUndecodable: stack.onGap(0); break;
      case ThreadEvents::Kind::kBatch:
        stack.onBatch(events.sequence(), events.events(), events.waits());
        read += events.events().size();
        reading = read < budget;
        break;
      }
    }
    stack.onEnd();
    out.events_read += std::min(read, t.events);
  }
  for (size_t i = 0; i < out.clusters.size(); ++i)
    out.cluster_trees[i].tree =
        scopeTree(acc.contexts[wanted.context[clusters[out.clusters[i]].function]], acc.clusters[i]);
  for (size_t i = 0; i < out.shapes.size(); ++i)
    out.shape_trees[i].tree =
        scopeTree(acc.contexts[wanted.context[analysis.shapes.function(out.shapes[i])]], acc.shapes[i]);
  for (size_t i = 0; i < out.functions.size(); ++i) {
    const FlameTree& context = acc.contexts[wanted.context[out.functions[i]]];
    out.outlier_trees[i].tree = scopeTree(context, acc.outliers[i]);
    out.typical_trees[i].tree = scopeTree(context, acc.typical[i]);
  }
  return out;
}

nlohmann::ordered_json scopeTreesJson(const ScopeTrees& trees, const Analysis& analysis,
                                      const ScopeTreeLimits& limits) {
  nlohmann::ordered_json json;
  json["events_read"] = trees.events_read;
  json["events"] = trees.events;
  json["complete"] = trees.complete();
  json["max_events"] = limits.max_events;
  json["max_nodes"] = limits.max_nodes;
  json["max_nested"] = limits.max_nested;
  json["missed_calls"] = trees.missed_calls;
  json["truncated_calls"] = trees.truncated_calls;
  // The page's bound: trees are embedded while their nodes fit in max_total_nodes, the clusters'
  // first, then the outlier functions', then the shapes'; the others get "nodes": null.
  size_t budget = limits.max_total_nodes;
  size_t left_out = 0;
  auto nodes = [&](const FlameTree& tree) -> nlohmann::ordered_json {
    if (tree.size() > budget) {
      ++left_out;
      return nullptr;
    }
    budget -= tree.size();
    return treeColumns(tree);
  };
  std::vector<nlohmann::ordered_json> cluster_nodes, function_nodes, shape_nodes;
  for (const ScopeTree& t : trees.cluster_trees)
    cluster_nodes.push_back(nodes(t.tree));
  for (size_t i = 0; i < trees.functions.size(); ++i) {
    function_nodes.push_back(nodes(trees.outlier_trees[i].tree));
    function_nodes.push_back(nodes(trees.typical_trees[i].tree));
  }
  for (const ScopeTree& t : trees.shape_trees)
    shape_nodes.push_back(nodes(t.tree));
  json["max_total_nodes"] = limits.max_total_nodes;
  json["left_out_trees"] = left_out;
  nlohmann::ordered_json clusters = nlohmann::ordered_json::array();
  for (size_t i = 0; i < trees.clusters.size(); ++i) {
    const ClusterId c = trees.clusters[i];
    nlohmann::ordered_json j;
    j["cluster"] = c;
    j["roots"] = trees.cluster_trees[i].roots;
    j["nested"] = trees.cluster_trees[i].nested;
    j["calls"] = analysis.cluster_calls[c];
    j["nodes"] = std::move(cluster_nodes[i]);
    clusters.push_back(std::move(j));
  }
  json["clusters"] = std::move(clusters);
  nlohmann::ordered_json shapes = nlohmann::ordered_json::array();
  for (size_t i = 0; i < trees.shapes.size(); ++i) {
    const ShapeId shape = trees.shapes[i];
    nlohmann::ordered_json j;
    j["shape"] = shape;
    j["cluster"] = analysis.clustering.cluster_of_shape[shape];
    j["roots"] = trees.shape_trees[i].roots;
    j["calls"] = analysis.shape_states[shape].calls;
    j["nodes"] = std::move(shape_nodes[i]);
    shapes.push_back(std::move(j));
  }
  json["shapes"] = std::move(shapes);
  nlohmann::ordered_json functions = nlohmann::ordered_json::array();
  for (size_t i = 0; i < trees.functions.size(); ++i) {
    const uint32_t f = trees.functions[i];
    nlohmann::ordered_json j;
    j["function"] = f;
    uint64_t kept = 0;
    for (const Outlier& o : analysis.outliers)
      kept += o.function == f;
    j["outliers"] = {{"roots", trees.outlier_trees[i].roots},
                     {"kept", kept},
                     {"nodes", std::move(function_nodes[2 * i])}};
    j["typical"] = {{"roots", trees.typical_trees[i].roots},
                    {"nodes", std::move(function_nodes[2 * i + 1])}};
    functions.push_back(std::move(j));
  }
  json["functions"] = std::move(functions);
  return json;
}

} // namespace shapetrace::analyzer
