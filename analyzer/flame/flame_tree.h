// The exact calling-context tree behind the flame graph ("Visualisations
// for Function Time Profiles"): one node per distinct call stack, node = (parent node, function),
// with the calls that ended there, their inclusive time and their exclusive (self) time. Built from
// every call, not from samples, so its weights are the calls' exact durations.
//
// Node 0 is the root (no function); a node's parent always has a smaller id, so a walk in id order
// visits parents first. Recursion folding (003, section 2) maps each stack onto a shorter one and
// sums the weights that land on the same folded stack:
// - direct: a frame whose function is its parent's function is folded into the parent
//   (merge_sort -> merge_sort -> merge becomes merge_sort -> merge);
// - indirect ("fully folded", as the funky graph is built): a frame whose function appears anywhere
//   among its ancestors is folded into the top-most frame of that function (a -> b -> a -> c
//   becomes a -> c), losing the call sequence between them.
#pragma once

#include "pair_map.h"

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace shapetrace::analyzer {

struct FlameNode {
  uint32_t parent = UINT32_MAX; // UINT32_MAX for the root
  uint32_t function = UINT32_MAX; // UINT32_MAX for the root
  uint64_t calls = 0;    // calls that finished with exactly this stack
  uint64_t measured = 0; // of those, with their own exit: the ones timed below
  uint64_t total_ns = 0; // inclusive time of the measured calls
  uint64_t self_ns = 0;  // exclusive: inclusive minus their measured callees' time
  void add(const FlameNode& other) {
    calls += other.calls;
    measured += other.measured;
    total_ns += other.total_ns;
    self_ns += other.self_ns;
  }
};

enum class RecursionFold { kNone, kDirect, kIndirect };

class FlameTree {
public:
  static constexpr uint32_t kRoot = 0;
  static constexpr uint32_t kNoNode = UINT32_MAX;

  FlameTree() : FlameTree(SIZE_MAX) {}
  explicit FlameTree(size_t max_nodes);

  // The child of `parent` for `function`, added when new; kNoNode when new and the tree already
  // holds max_nodes nodes.
  uint32_t child(uint32_t parent, uint32_t function);
  uint32_t find(uint32_t parent, uint32_t function) const;

  size_t size() const { return nodes_.size(); }
  size_t maxNodes() const { return max_nodes_; }
  const FlameNode& operator[](uint32_t node) const { return nodes_[node]; }
  FlameNode& operator[](uint32_t node) { return nodes_[node]; }
  const std::vector<FlameNode>& nodes() const { return nodes_; }

  // The stack of a node, root first (without the root).
  std::vector<uint32_t> stack(uint32_t node) const;
  // Sum of self_ns over the tree: the time the tree accounts for.
  uint64_t totalSelfNs() const;

  // The tree with recursion folded (see the top of this file). Calls and self time of the stacks
  // that fold together add up; inclusive time is recomputed as the sum of self time below a node
  // (so a recursion is not counted twice). Measured counts add up like calls.
  FlameTree folded(RecursionFold fold) const;

  // Brendan Gregg's folded stacks: one line "f1;f2;...;fn self_ns" per stack with self time > 0,
  // depth first, children in node order (the caller sorts if it wants). `name` gives a function's
  // name.
  std::string foldedStacks(const std::function<std::string_view(uint32_t)>& name) const;

private:
  std::vector<FlameNode> nodes_;
  PairMap children_; // (parent, function) -> node
  size_t max_nodes_;
};

} // namespace shapetrace::analyzer
