// The flame graphs of the report's scopes that the flame extension cannot count online, because a
// call's cluster is known only when it ends (after the calls under it): the calls of a cluster and
// everything under them, and a function's outlier calls against its other calls. Read back from
// the recording after the analysis, in one bounded pass (docs/report.md, "Scoped flame graphs").
//
// Each thread is replayed through the call stream (call_stack.h) with the analysis' shape table,
// so every finished call has the shape, and so the cluster, the analyzer gave it. An open call of a
// function that a chosen cluster or outlier function has is a *candidate*: every call under it is
// logged as it ends, on the node of its stack (relative to the candidate) in the function's context
// tree (counted as the flame extension counts: measured calls timed, self time their time minus
// their measured callees'). When the candidate ends, its cluster decides where its log goes:
// - the scope of a cluster holds its *outermost* calls (a call of the cluster nested in another
//   call of it is already in that one's tree, as `export --cluster` takes them): a candidate with
//   no open caller of the same function is outermost; otherwise its tree waits on that caller and
//   is dropped if the caller turns out to be of the same cluster, passed up otherwise;
// - the scope of a function's outliers holds its outermost calls (no open caller of the same
//   function) that the analysis kept as outliers; its other outermost calls are its typical calls.
//
// Bounds, each reported with the trees: the clusters with the most time (`max_clusters`) and their
// shapes (`max_shapes`, cluster by cluster), the
// functions with the most kept outliers (`max_functions`), at most `max_nested` candidates open at
// once (deeper ones are not counted: `missed_calls`), `max_nodes` distinct stacks under the calls of
// one function (its context tree, shared by its scopes; past it a call on a new stack is counted in
// `truncated_calls` and left out of the trees), and `max_events` events
// read: each thread is read from its start for its share of the budget (its events over all
// events), so a long run's scopes hold the calls of its first part, and say so.
#pragma once

#include "analysis.h"
#include "flame/flame_tree.h"
#include "recording/recording.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <vector>

namespace shapetrace::analyzer {

struct ScopeTreeLimits {
  size_t max_clusters = 40;
  size_t max_shapes = 160; // the chosen clusters' shapes, cluster by cluster
  size_t max_functions = 20;
  size_t max_nested = 8;
  size_t max_nodes = 4096;
  uint64_t max_events = 20'000'000; // 0: no scope trees
  size_t max_total_nodes = size_t{1} << 18; // over every embedded tree (the page's size)
};

struct ScopeTree {
  FlameTree tree;          // functions are analysis function indices; node 0 the root
  uint64_t roots = 0;      // the scope's calls counted (each with everything under it)
  uint64_t nested = 0;     // its calls inside another of its calls (in that one's tree)
  explicit ScopeTree(size_t max_nodes) : tree(max_nodes) {}
};

struct ScopeTrees {
  std::vector<ClusterId> clusters;  // the chosen clusters, most time first
  std::vector<ScopeTree> cluster_trees;
  std::vector<ShapeId> shapes;      // the chosen clusters' shapes
  std::vector<ScopeTree> shape_trees;
  std::vector<uint32_t> functions;  // the chosen outlier functions, most outliers first
  std::vector<ScopeTree> outlier_trees;
  std::vector<ScopeTree> typical_trees;
  uint64_t events_read = 0;
  uint64_t events = 0;        // in the recording's threads
  uint64_t missed_calls = 0;  // candidates past max_nested
  uint64_t truncated_calls = 0; // calls past a tree's max_nodes
  bool complete() const { return events_read >= events; }
};

ScopeTrees readScopeTrees(recording::RecordingReader& reader, const Analysis& analysis,
                          const ScopeTreeLimits& limits);

// {"events_read", "events", "complete", "max_events", "max_nodes", "max_nested", "missed_calls",
//  "truncated_calls", "max_total_nodes", "left_out_trees" (trees past max_total_nodes: the
//  clusters' are embedded first, then the functions', then the shapes'; the others' "nodes" null),
//  "clusters": [{"cluster", "roots", "nested", "calls" (the analysis' count), "nodes": columns}],
//  "shapes": [{"shape", "cluster", "roots", "calls", "nodes"}],
//  "functions": [{"function", "outliers": {"roots", "kept" (the analysis' outliers of it),
//                 "nodes"}, "typical": {"roots", "nodes"}}]}
// (node columns as the flame extension's "nodes", treeColumns).
nlohmann::ordered_json scopeTreesJson(const ScopeTrees& trees, const Analysis& analysis,
                                      const ScopeTreeLimits& limits);

} // namespace shapetrace::analyzer
