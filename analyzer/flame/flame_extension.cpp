// The calling-context tree of every thread, from the call stream, merged by function identity.
#include "flame/flame_extension.h"

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

MergedFlame FlameExtension::merged(FunctionIndex& functions, bool thread_trees) const {
  MergedFlame out;
  for (const auto& [key, consumer] : consumers_) {
    const FlameTree& local = consumer->sink().tree();
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
    out.truncated_calls += consumer->sink().truncatedCalls();
    out.threads.push_back(std::move(thread));
  }
  return out;
}

std::vector<FlameSlice> FlameExtension::mergedSlices(const MergedFlame& merged,
                                                    unsigned& shift) const {
  shift = FlameSlices::kFirstShift;
  for (const auto& [key, consumer] : consumers_)
    if (const FlameSlices* s = consumer->sink().slices()) shift = std::max(shift, s->shift());
  std::map<uint64_t, std::map<uint32_t, FlameValues>> sum; // slice -> merged node -> values
  size_t t = 0;
  for (const auto& [key, consumer] : consumers_) {
    const MergedFlame::Thread& thread = merged.threads[t++];
    const FlameSlices* s = consumer->sink().slices();
    if (s == nullptr) continue;
    for (const FlameSlice& slice : FlameSlices::coarsened(s->slices(), s->shift(), shift)) {
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
