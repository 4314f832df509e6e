// The calling-context tree, its recursion folding and its folded-stack text.
#include "flame/flame_tree.h"

#include <algorithm>

namespace shapetrace::analyzer {

FlameTree::FlameTree(size_t max_nodes) : max_nodes_(std::max<size_t>(max_nodes, 1)) {
  nodes_.emplace_back(); // the root
}

uint32_t FlameTree::child(uint32_t parent, uint32_t function) {
  const uint32_t found = children_.find(parent, function);
  if (found != PairMap::kAbsent) return found;
  if (nodes_.size() >= max_nodes_) return kNoNode;
  const auto id = static_cast<uint32_t>(nodes_.size());
  FlameNode node;
  node.parent = parent;
  node.function = function;
  nodes_.push_back(node);
  children_.tryEmplace(parent, function, id);
  return id;
}

uint32_t FlameTree::find(uint32_t parent, uint32_t function) const {
  const uint32_t found = children_.find(parent, function);
  return found == PairMap::kAbsent ? kNoNode : found;
}

std::vector<uint32_t> FlameTree::stack(uint32_t node) const {
  std::vector<uint32_t> out;
  for (; node != kRoot && node != kNoNode; node = nodes_[node].parent)
    out.push_back(node);
  std::reverse(out.begin(), out.end());
  return out;
}

uint64_t FlameTree::totalSelfNs() const {
  uint64_t sum = 0;
  for (const FlameNode& n : nodes_)
    sum += n.self_ns;
  return sum;
}

FlameTree FlameTree::folded(RecursionFold fold) const {
  FlameTree out;
  // Each node's image in `out`, parents first (a parent's id is smaller than its children's).
  std::vector<uint32_t> image(nodes_.size(), kRoot);
  for (uint32_t id = 1; id < nodes_.size(); ++id) {
    const FlameNode& n = nodes_[id];
    const uint32_t parent_image = image[n.parent];
    uint32_t target = kNoNode;
    if (fold == RecursionFold::kDirect) {
      // The parent's image already has direct repeats folded: fold when it is the same function.
      if (parent_image != kRoot && out.nodes_[parent_image].function == n.function)
        target = parent_image;
    } else if (fold == RecursionFold::kIndirect) {
      // The top-most frame of this function on the folded stack, if any (the folded stack has
      // each function at most once, so the first one met walking up is the only one).
      for (uint32_t a = parent_image; a != kRoot; a = out.nodes_[a].parent)
        if (out.nodes_[a].function == n.function) {
          target = a;
          break;
        }
    }
    if (target == kNoNode) target = out.child(parent_image, n.function);
    image[id] = target;
    FlameNode& t = out.nodes_[target];
    t.calls += n.calls;
    t.measured += n.measured;
    t.self_ns += n.self_ns;
  }
  // Inclusive time: the self time below each node, children first.
  for (size_t i = out.nodes_.size(); i-- > 1;) {
    FlameNode& n = out.nodes_[i];
    n.total_ns += n.self_ns;
    out.nodes_[n.parent].total_ns += n.total_ns;
  }
  return out;
}

std::string FlameTree::foldedStacks(const std::function<std::string_view(uint32_t)>& name) const {
  // Depth first with one growing stack text, so memory is the deepest stack, not every node's
  // stack (a million nodes twenty deep would otherwise hold hundreds of megabytes of prefixes).
  const size_t n = nodes_.size();
  std::vector<uint32_t> first(n + 1, 0); // children of node i: order[first[i] .. first[i + 1])
  for (size_t id = 1; id < n; ++id)
    ++first[nodes_[id].parent + 1];
  for (size_t i = 1; i <= n; ++i)
    first[i] += first[i - 1];
  std::vector<uint32_t> order(n > 0 ? n - 1 : 0);
  std::vector<uint32_t> fill(first.begin(), first.end() - 1);
  for (uint32_t id = 1; id < n; ++id)
    order[fill[nodes_[id].parent]++] = id; // children in id order
  std::string text;
  std::string stack;
  struct Visit {
    uint32_t node;
    size_t prefix; // the stack text's length before this node's frame
  };
  std::vector<Visit> pending;
  for (uint32_t k = first[kRoot + 1]; k-- > first[kRoot];)
    pending.push_back({order[k], 0});
  while (!pending.empty()) {
    const Visit v = pending.back();
    pending.pop_back();
    const FlameNode& node = nodes_[v.node];
    stack.resize(v.prefix);
    if (v.prefix != 0) stack += ';';
    // A name with ';' or a newline would split the frame or the line: both become '_' in
    // folded text only.
    for (char c : name(node.function))
      stack += c == ';' || c == '\n' || c == '\r' ? '_' : c;
    if (node.self_ns != 0) {
      text += stack;
      text += ' ';
      text += std::to_string(node.self_ns);
      text += '\n';
    }
    for (uint32_t k = first[v.node + 1]; k-- > first[v.node];)
      pending.push_back({order[k], stack.size()});
  }
  return text;
}

} // namespace shapetrace::analyzer
