// The scoped flame trees of the report: one bounded replay of the recording.
#include "report/scope_trees.h"

#include "call_stack.h"
#include "extensions/flame.h"
#include "replay.h"

#include <algorithm>
#include <set>
#include <tuple>

namespace shapetrace::analyzer::report {
namespace {

constexpr size_t kNone = SIZE_MAX;

// Adds `from` (a candidate's tree) into `into`, by stack; calls whose stack `into` has no room for
// are counted in `truncated`.
void addTree(FlameTree& into, const FlameTree& from, uint64_t& truncated) {
  std::vector<uint32_t> image(from.size(), FlameTree::kRoot);
  for (uint32_t id = 1; id < from.size(); ++id) {
    const FlameNode& n = from[id];
    const uint32_t parent = image[n.parent];
    image[id] = parent == FlameTree::kNoNode ? FlameTree::kNoNode : into.child(parent, n.function);
    if (image[id] == FlameTree::kNoNode) {
      truncated += n.calls;
      continue;
    }
    into[image[id]].add(n);
  }
}

// What the pass looks for, shared by every thread.
struct Wanted {
  std::vector<size_t> cluster_slot;  // by cluster id
  std::vector<size_t> function_slot; // by function index
  std::vector<bool> candidate;       // by function index: a candidate's function
  std::set<std::tuple<uint64_t, uint32_t, uint64_t, uint32_t>> outliers; // process, thread, start, fn
  size_t max_nested = 8;
  size_t max_nodes = 4096;
};

// One thread's calls into the scope trees (a call-stack sink, call_stack.h).
class ScopeTreeSink {
public:
  ScopeTreeSink(const Wanted& wanted, const Analysis& analysis, const ThreadKey& thread,
                ScopeTrees& out)
      : wanted_(wanted), analysis_(analysis), thread_(thread), out_(out) {}

  void onEnter(uint32_t function, uint32_t, uint64_t) {
    frames_.push_back({function, 0});
    for (size_t k = 0; k < open_; ++k) {
      Candidate& c = candidates_[k];
      const uint32_t parent = c.path.back();
      c.path.push_back(parent == FlameTree::kNoNode ? parent : c.tree.child(parent, function));
    }
    if (function >= wanted_.candidate.size() || !wanted_.candidate[function]) return;
    if (open_ == wanted_.max_nested) {
      ++out_.missed_calls;
      return;
    }
    if (open_ == candidates_.size()) candidates_.emplace_back();
    Candidate& c = candidates_[open_++];
    c.tree = FlameTree(wanted_.max_nodes);
    c.path.assign(1, c.tree.child(FlameTree::kRoot, function));
    c.function = function;
    c.frame = frames_.size() - 1;
    c.pending.clear();
  }

  void onCall(const FinishedCall& call) {
    const Frame frame = frames_.back();
    frames_.pop_back();
    const uint64_t duration = call.measured ? call.exit_ns - call.enter_ns : 0;
    const uint64_t self = duration > frame.callee_ns ? duration - frame.callee_ns : 0;
    if (call.measured && !frames_.empty()) frames_.back().callee_ns += duration;
    for (size_t k = 0; k < open_; ++k) {
      Candidate& c = candidates_[k];
      const uint32_t node = c.path.back();
      c.path.pop_back();
      if (node == FlameTree::kNoNode) {
        ++out_.truncated_calls;
        continue;
      }
      FlameNode& n = c.tree[node];
      ++n.calls;
      if (!call.measured) continue;
      ++n.measured;
      n.total_ns += duration;
      n.self_ns += self;
    }
    if (open_ > 0 && candidates_[open_ - 1].frame == frames_.size()) close(call);
  }

  // The open calls were discarded: so is every open candidate, but the trees of the finished calls
  // waiting on them are a cluster's outermost calls after all.
  // An outermost call of an outlier function cut here keeps the calls it finished, among its
  // typical calls (it has no end, so it is no outlier), as `export --function` keeps them.
  void onReset() {
    for (size_t k = open_; k-- > 0;) {
      Candidate& c = candidates_[k];
      for (Pending& p : c.pending)
        addRoot(out_.cluster_trees[p.slot], p.tree);
      bool outermost = true;
      for (size_t j = 0; j < k; ++j)
        outermost = outermost && candidates_[j].function != c.function;
      if (outermost && c.function < wanted_.function_slot.size() &&
          wanted_.function_slot[c.function] != kNone)
        addRoot(out_.typical_trees[wanted_.function_slot[c.function]], c.tree);
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
    FlameTree tree;
  };
  struct Candidate {
    FlameTree tree;
    std::vector<uint32_t> path; // per frame from the candidate's up: its node (kNoNode: none)
    uint32_t function = 0;
    size_t frame = 0;             // its frame's index
    std::vector<Pending> pending; // calls of a cluster under it, waiting for its own cluster
  };

  void addRoot(ScopeTree& scope, const FlameTree& tree) {
    ++scope.roots;
    addTree(scope.tree, tree, out_.truncated_calls);
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
    const ClusterId cluster = call.shape != kNullShape && call.shape < analysis_.clustering.cluster_of_shape.size()
                                  ? analysis_.clustering.cluster_of_shape[call.shape]
                                  : kNoCluster;
    const size_t slot = cluster < wanted_.cluster_slot.size() ? wanted_.cluster_slot[cluster] : kNone;
    // Calls of other clusters waiting on this one: not nested in a call of their cluster here.
    for (Pending& p : c.pending) {
      if (p.slot == slot) {
        ++out_.cluster_trees[p.slot].nested;
      } else if (holder != nullptr) {
        holder->pending.push_back(std::move(p));
      } else {
        addRoot(out_.cluster_trees[p.slot], p.tree);
      }
    }
    c.pending.clear();
    if (holder == nullptr && c.function < wanted_.function_slot.size() &&
        wanted_.function_slot[c.function] != kNone) {
      const size_t f = wanted_.function_slot[c.function];
      const bool outlier =
          wanted_.outliers.count({thread_.process, thread_.thread, call.enter_ns, c.function}) > 0;
      addRoot(outlier ? out_.outlier_trees[f] : out_.typical_trees[f], c.tree);
    }
    if (slot == kNone) return;
    if (holder != nullptr)
      holder->pending.push_back({slot, std::move(c.tree)});
    else
      addRoot(out_.cluster_trees[slot], c.tree);
  }

  const Wanted& wanted_;
  const Analysis& analysis_;
  ThreadKey thread_;
  ScopeTrees& out_;
  std::vector<Frame> frames_;
  std::vector<Candidate> candidates_; // [0, open_) are open, outermost first
  size_t open_ = 0;
};

} // namespace

ScopeTrees readScopeTrees(recording::RecordingReader& reader, const Analysis& analysis,
                          const ScopeTreeLimits& limits) {
  ScopeTrees out;
  for (const ThreadSummary& t : analysis.threads)
    out.events += t.events;
  if (limits.max_events == 0) return out;

  Wanted wanted;
  wanted.max_nested = std::max<size_t>(limits.max_nested, 1);
  wanted.max_nodes = limits.max_nodes;
  const size_t functions = analysis.functions.size();
  wanted.candidate.assign(functions, false);
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
    wanted.cluster_slot[c] = out.clusters.size();
    out.clusters.push_back(c);
    out.cluster_trees.emplace_back(limits.max_nodes);
    if (clusters[c].function < functions) wanted.candidate[clusters[c].function] = true;
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
    wanted.candidate[f] = true;
  }
  if (out.clusters.empty() && out.functions.empty()) return out;

  // Each thread from its start, for its share of the event budget.
  ThreadEvents events(reader, analysis);
  const uint32_t max_depth = analysis.settings.thread.max_depth;
  for (const ThreadSummary& t : analysis.threads) {
    const auto share = static_cast<uint64_t>(
        static_cast<long double>(limits.max_events) * t.events / std::max<uint64_t>(out.events, 1));
    const uint64_t budget = out.events <= limits.max_events ? UINT64_MAX : std::max<uint64_t>(share, 1);
    ScopeTreeSink sink(wanted, analysis, t.key, out);
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
        stack.onBatch(events.sequence(), events.events());
        read += events.events().size();
        reading = read < budget;
        break;
      }
    }
    stack.onEnd();
    out.events_read += std::min(read, t.events);
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
  nlohmann::ordered_json clusters = nlohmann::ordered_json::array();
  for (size_t i = 0; i < trees.clusters.size(); ++i) {
    const ClusterId c = trees.clusters[i];
    nlohmann::ordered_json j;
    j["cluster"] = c;
    j["roots"] = trees.cluster_trees[i].roots;
    j["nested"] = trees.cluster_trees[i].nested;
    j["calls"] = analysis.cluster_calls[c];
    j["nodes"] = treeColumns(trees.cluster_trees[i].tree);
    clusters.push_back(std::move(j));
  }
  json["clusters"] = std::move(clusters);
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
                     {"nodes", treeColumns(trees.outlier_trees[i].tree)}};
    j["typical"] = {{"roots", trees.typical_trees[i].roots},
                    {"nodes", treeColumns(trees.typical_trees[i].tree)}};
    functions.push_back(std::move(j));
  }
  json["functions"] = std::move(functions);
  return json;
}

} // namespace shapetrace::analyzer::report
