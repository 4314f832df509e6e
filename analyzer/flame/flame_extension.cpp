// The calling-context tree of every thread, from the call stream, merged by function identity.
#include "flame/flame_extension.h"

#include "thread_fold.h"

#include <algorithm>

namespace shapetrace::analyzer {

// The node of a call of `function` under the open call on top; kNoNode past the bound.
uint32_t FlameSink::childOfTop(uint32_t function) {
  if (open_.empty()) return tree_.child(FlameTree::kRoot, function);
  const uint32_t parent = open_.back().node;
  return parent == FlameTree::kNoNode ? parent : tree_.child(parent, function);
}

void FlameSink::onEnter(uint32_t function, uint32_t, uint64_t) {
  open_.push_back({childOfTop(function), 0});
}

void FlameSink::onCall(const FinishedCall& call) {
  const Open open = open_.back();
  open_.pop_back();
  account(open.node, call, open.callee_ns);
}

// Most calls: no frame pushed and popped.
void FlameSink::onLeaf(const FinishedCall& call) { account(childOfTop(call.function), call, 0); }

void FlameSink::account(uint32_t node_id, const FinishedCall& call, uint64_t callee_ns) {
  if (node_id == FlameTree::kNoNode) {
    // Past the bound: its time stays in the nearest caller with a node (as that caller's own).
    ++truncated_calls_;
    return;
  }
  FlameNode& node = tree_[node_id];
  ++node.calls;
  if (!call.measured) {
    if (!slices_.empty()) slices_.front().add(node_id, call.exit_ns, false, 0, 0);
    return;
  }
  const uint64_t duration = call.exit_ns - call.enter_ns;
  // A callee's time can exceed its caller's only for timestamps clamped after a regression.
  const uint64_t self = duration > callee_ns ? duration - callee_ns : 0;
  ++node.measured;
  node.total_ns += duration;
  node.self_ns += self;
  if (!open_.empty()) open_.back().callee_ns += duration;
  if (!slices_.empty()) slices_.front().add(node_id, call.exit_ns, true, duration, self);
}

std::unique_ptr<ThreadConsumer> FlameExtension::consumerFor(const ThreadKey& thread) {
  auto consumer =
      std::make_unique<Consumer>(ShapeLookup::none(), max_depth_, max_nodes_, max_slices_);
  consumers_[thread] = consumer.get();
  return consumer;
}

void FlameExtension::foldThread(const ThreadKey& thread) {
  const auto it = consumers_.find(thread);
  if (it == consumers_.end()) return;
  fold(folded_.try_emplace(thread.process, max_nodes_).first->second, it->second->sink());
  consumers_.erase(it);
}

void FlameExtension::foldProcess(uint64_t process,
                                 const std::function<uint32_t(uint32_t)>& function_of) {
  const auto it = folded_.find(process);
  if (it == folded_.end()) return;
  Folded& into = folded_.try_emplace(kFoldedProcessesKey, max_nodes_).first->second;
  const Folded& from = it->second;
  addTree(into, from.tree, from.truncated_calls, &from.slices, from.shift, function_of);
  folded_.erase(it);
}

void FlameExtension::fold(Folded& into, const FlameSink& thread) {
  const FlameSlices* slices = thread.slices();
  const std::vector<FlameSlice> mine = slices != nullptr ? slices->slices() : std::vector<FlameSlice>{};
  addTree(into, thread.tree(), thread.truncatedCalls(), slices != nullptr ? &mine : nullptr,
          slices != nullptr ? slices->shift() : 0, [](uint32_t function) { return function; });
}

// The tree's nodes are added into the folded tree, their functions mapped by `function_of`. Past
// the folded tree's bound, as past a thread's own, a stack's calls are counted as truncated and its
// own time is its nearest caller's (in the tree; the slices leave it out).
void FlameExtension::addTree(Folded& into, const FlameTree& local, uint64_t truncated_calls,
                             const std::vector<FlameSlice>* slices, unsigned shift,
                             const std::function<uint32_t(uint32_t)>& function_of) {
  std::vector<uint32_t> image(local.size(), FlameTree::kRoot); // the folded node, or kNoNode
  for (uint32_t id = 1; id < local.size(); ++id) {
    const FlameNode& n = local[id];
    const uint32_t parent = image[n.parent];
    image[id] =
        parent == FlameTree::kNoNode ? parent : into.tree.child(parent, function_of(n.function));
    if (image[id] != FlameTree::kNoNode) {
      into.tree[image[id]].add(n);
      continue;
    }
    into.truncated_calls += n.calls;
    uint32_t caller = n.parent;
    while (image[caller] == FlameTree::kNoNode)
      caller = local[caller].parent;
    into.tree[image[caller]].self_ns += n.self_ns;
  }
  into.truncated_calls += truncated_calls;
  if (slices == nullptr) return;
  std::vector<FlameSlice> placed_slices;
  placed_slices.reserve(slices->size());
  for (const FlameSlice& slice : *slices) {
    FlameSlice placed;
    placed.index = slice.index;
    for (size_t i = 0; i < slice.nodes.size(); ++i)
      if (image[slice.nodes[i]] != FlameTree::kNoNode) {
        placed.nodes.push_back(image[slice.nodes[i]]);
        placed.values.push_back(slice.values[i]);
      }
    placed_slices.push_back(std::move(placed));
  }
  addSlices(into, std::move(placed_slices), shift);
}

// Only the folded slices a thread's slices fall in are touched (a short thread's are one or two),
// then the slices are widened as a thread's are, to at most max_slices_ of them.
void FlameExtension::addSlices(Folded& into, std::vector<FlameSlice> slices, unsigned shift) {
  const unsigned common = std::max(into.shift, shift);
  into.slices = FlameSlices::coarsened(std::move(into.slices), into.shift, common);
  into.shift = common;
  slices = FlameSlices::coarsened(std::move(slices), shift, common);
  constexpr uint32_t kAbsent = UINT32_MAX;
  into.position.resize(into.tree.size(), kAbsent);
  for (FlameSlice& slice : slices) {
    const auto at = std::lower_bound(
        into.slices.begin(), into.slices.end(), slice.index,
        [](const FlameSlice& s, uint64_t index) { return s.index < index; });
    if (at == into.slices.end() || at->index != slice.index) {
      into.slices.insert(at, std::move(slice));
      continue;
    }
    for (size_t i = 0; i < at->nodes.size(); ++i)
      into.position[at->nodes[i]] = static_cast<uint32_t>(i);
    for (size_t i = 0; i < slice.nodes.size(); ++i) {
      const uint32_t place = into.position[slice.nodes[i]];
      if (place != kAbsent) {
        at->values[place].add(slice.values[i]);
        continue;
      }
      at->nodes.push_back(slice.nodes[i]);
      at->values.push_back(slice.values[i]);
    }
    for (const uint32_t node : at->nodes)
      into.position[node] = kAbsent;
  }
  while (!into.slices.empty() && into.shift < 62 &&
         (into.slices.back().index - into.slices.front().index >= max_slices_ ||
          FlameSlices::entries(into.slices) > FlameSlices::kDefaultMaxEntries)) {
    into.slices = FlameSlices::coarsened(std::move(into.slices), into.shift, into.shift + 1);
    ++into.shift;
  }
}

std::map<ThreadKey, FlameExtension::Part> FlameExtension::parts() const {
  std::map<ThreadKey, Part> out;
  for (const auto& [key, consumer] : consumers_)
    out[key] = Part{&consumer->sink().tree(), consumer->sink().truncatedCalls(),
                    consumer->sink().slices(), nullptr};
  for (const auto& [process, folded] : folded_)
    out[ThreadKey{process, kFoldedThreadsId}] =
        Part{&folded.tree, folded.truncated_calls, nullptr, &folded};
  return out;
}

MergedFlame FlameExtension::merged(FunctionIndex& functions, bool thread_trees) const {
  MergedFlame out;
  for (const auto& [key, part] : parts()) {
    const FlameTree& local = *part.tree;
    MergedFlame::Thread thread;
    thread.key = key;
    thread.nodes.resize(local.size() - 1);
    thread.values.resize(local.size() - 1);
    std::vector<uint32_t> image(local.size(), FlameTree::kRoot);
    std::vector<uint32_t> own(thread_trees ? local.size() : 0, FlameTree::kRoot);
    for (uint32_t id = 1; id < local.size(); ++id) {
      const FlameNode& n = local[id];
      const uint32_t function = functions.indexOf(key.process, n.function);
      image[id] = out.tree.child(image[n.parent], function);
      out.tree[image[id]].add(n);
      if (thread_trees) {
        own[id] = thread.tree.child(own[n.parent], function);
        thread.tree[own[id]].add(n);
      }
      thread.nodes[id - 1] = image[id];
      thread.values[id - 1] = n;
    }
    out.truncated_calls += part.truncated_calls;
    out.threads.push_back(std::move(thread));
  }
  return out;
}

std::vector<FlameSlice> FlameExtension::mergedSlices(const MergedFlame& merged,
                                                    unsigned& shift) const {
  shift = FlameSlices::kFirstShift;
  const std::map<ThreadKey, Part> all = parts();
  for (const auto& [key, part] : all) {
    if (part.slices != nullptr) shift = std::max(shift, part.slices->shift());
    if (part.folded != nullptr && max_slices_ > 0) shift = std::max(shift, part.folded->shift);
  }
  std::map<uint64_t, std::map<uint32_t, FlameValues>> sum; // slice -> merged node -> values
  size_t t = 0;
  for (const auto& [key, part] : all) {
    const MergedFlame::Thread& thread = merged.threads[t++];
    std::vector<FlameSlice> slices;
    if (part.slices != nullptr)
      slices = FlameSlices::coarsened(part.slices->slices(), part.slices->shift(), shift);
    else if (part.folded != nullptr && max_slices_ > 0)
      slices = FlameSlices::coarsened(part.folded->slices, part.folded->shift, shift);
    for (const FlameSlice& slice : slices) {
      auto& nodes = sum[slice.index];
      for (size_t i = 0; i < slice.nodes.size(); ++i)
        nodes[thread.nodes[slice.nodes[i] - 1]].add(slice.values[i]);
    }
  }
  std::vector<FlameSlice> out;
  for (const auto& [index, nodes] : sum) {
    FlameSlice& slice = out.emplace_back();
    slice.index = index;
    for (const auto& [node, values] : nodes) {
      slice.nodes.push_back(node);
      slice.values.push_back(values);
    }
  }
  return out;
}

namespace {

void appendColumns(nlohmann::ordered_json& json, const std::vector<FlameNode>& values, size_t from) {
  auto column = [&](auto field) {
    nlohmann::ordered_json c = nlohmann::ordered_json::array();
    for (size_t i = from; i < values.size(); ++i)
      c.push_back(values[i].*field);
    return c;
  };
  json["calls"] = column(&FlameNode::calls);
  json["measured"] = column(&FlameNode::measured);
  json["total_ns"] = column(&FlameNode::total_ns);
  json["self_ns"] = column(&FlameNode::self_ns);
}

} // namespace

nlohmann::ordered_json treeColumns(const FlameTree& tree) {
  // The root's values: the sum of its children's (nothing runs outside a call).
  std::vector<FlameNode> values = tree.nodes();
  for (size_t i = 1; i < values.size(); ++i)
    if (values[i].parent == FlameTree::kRoot) {
      values[0].total_ns += values[i].total_ns;
      values[0].calls += values[i].calls;
    }
  nlohmann::ordered_json nodes;
  nlohmann::ordered_json parent = nlohmann::ordered_json::array();
  nlohmann::ordered_json function = nlohmann::ordered_json::array();
  for (const FlameNode& n : values) {
    parent.push_back(n.parent == UINT32_MAX ? -1 : static_cast<int64_t>(n.parent));
    function.push_back(n.function == UINT32_MAX ? -1 : static_cast<int64_t>(n.function));
  }
  nodes["parent"] = std::move(parent);
  nodes["function"] = std::move(function);
  appendColumns(nodes, values, 0);
  return nodes;
}

nlohmann::ordered_json FlameExtension::result(const Analysis&, FunctionIndex& functions) const {
  const MergedFlame m = merged(functions, false);
  nlohmann::ordered_json json;
  json["max_nodes_per_thread"] = max_nodes_;
  json["truncated_calls"] = m.truncated_calls;
  json["nodes"] = treeColumns(m.tree);
  nlohmann::ordered_json threads = nlohmann::ordered_json::array();
  for (const MergedFlame::Thread& t : m.threads) {
    nlohmann::ordered_json thread;
    thread["process"] = t.key.process;
    thread["thread"] = t.key.thread;
    thread["nodes"] = t.nodes;
    appendColumns(thread, t.values, 0);
    threads.push_back(std::move(thread));
  }
  json["threads"] = std::move(threads);
  if (max_slices_ > 0) {
    unsigned shift = 0;
    std::vector<FlameSlice> slices = mergedSlices(m, shift);
    unsigned widened = 0;
    while (FlameSlices::entries(slices) > kMaxResultSliceEntries && slices.size() > 1) {
      slices = FlameSlices::coarsened(std::move(slices), shift, shift + 1);
      ++shift;
      ++widened;
    }
    nlohmann::ordered_json out;
    out["width_ns"] = uint64_t{1} << shift;
    out["max_per_thread"] = max_slices_;
    out["widened_for_size"] = widened;
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const FlameSlice& slice : slices) {
      nlohmann::ordered_json j;
      j["start_ns"] = slice.index << shift;
      j["nodes"] = slice.nodes;
      auto column = [&](auto field) {
        nlohmann::ordered_json c = nlohmann::ordered_json::array();
        for (const FlameValues& v : slice.values)
          c.push_back(v.*field);
        return c;
      };
      j["calls"] = column(&FlameValues::calls);
      j["measured"] = column(&FlameValues::measured);
      j["total_ns"] = column(&FlameValues::total_ns);
      j["self_ns"] = column(&FlameValues::self_ns);
      list.push_back(std::move(j));
    }
    out["slices"] = std::move(list);
    json["slices"] = std::move(out);
  }
  return json;
}

} // namespace shapetrace::analyzer
