// Matching two runs' calling-context trees stack by stack.
#include "flame/flame_diff.h"

#include "model_json.h"

#include <algorithm>
#include <stdexcept>
#include <unordered_map>

namespace shapetrace::analyzer {
namespace {

using Json = nlohmann::ordered_json;
constexpr uint32_t kNone = UINT32_MAX;

// One model's tree as columns, its functions as indices into a table shared by both runs.
struct Tree {
  std::vector<uint32_t> parent, identity;
  std::vector<uint64_t> calls, total_ns, self_ns;
  size_t size() const { return parent.size(); }
};

struct Identities {
  std::unordered_map<std::string, uint32_t> index;
  std::vector<std::string> names;
  uint32_t of(const Json& function) {
    auto [it, added] = index.try_emplace(functionIdentity(function),
                                         static_cast<uint32_t>(names.size()));
    if (added) names.push_back(function.at("name").get<std::string>());
    return it->second;
  }
};

Tree readTree(const Json& model, Identities& identities, const char* which) {
  if (!hasFlame(model))
    throw std::invalid_argument(std::string(which) +
                                " has no flame graph (analyse it with --extensions flame or all)");
  std::vector<uint32_t> identity_of;
  for (const Json& f : model.at("functions"))
    identity_of.push_back(identities.of(f));
  const Json& nodes = model.at("extensions").at("flame").at("nodes");
  Tree tree;
  const Json& parent = nodes.at("parent");
  const Json& function = nodes.at("function");
  for (size_t i = 0; i < parent.size(); ++i) {
    const int64_t p = parent.at(i).get<int64_t>();
    const int64_t f = function.at(i).get<int64_t>();
    if (i == 0 ? p != -1 : (p < 0 || static_cast<size_t>(p) >= i || f < 0 ||
                            static_cast<size_t>(f) >= identity_of.size()))
      throw std::invalid_argument(std::string(which) + ": flame node " + std::to_string(i) +
                                  " has no earlier parent or an unknown function");
    tree.parent.push_back(i == 0 ? kNone : static_cast<uint32_t>(p));
    tree.identity.push_back(i == 0 ? kNone : identity_of[static_cast<size_t>(f)]);
  }
  tree.calls = nodes.at("calls").get<std::vector<uint64_t>>();
  tree.total_ns = nodes.at("total_ns").get<std::vector<uint64_t>>();
  tree.self_ns = nodes.at("self_ns").get<std::vector<uint64_t>>();
  if (tree.calls.size() != tree.size() || tree.total_ns.size() != tree.size() ||
      tree.self_ns.size() != tree.size())
    throw std::invalid_argument(std::string(which) + ": flame columns of different lengths");
  return tree;
}

uint64_t key(uint32_t parent, uint32_t identity) { return uint64_t{parent} << 32 | identity; }

} // namespace

bool hasFlame(const Json& model) {
  return model.contains("extensions") && model.at("extensions").contains("flame");
}

FlameDiff diffFlames(const Json& base, const Json& now, size_t max_gone) {
  Identities identities;
  const Tree b = readTree(base, identities, "BASE");
  const Tree n = readTree(now, identities, "NEW");
  std::unordered_map<uint64_t, uint32_t> base_child; // (base parent, identity) -> base node
  for (uint32_t i = 1; i < b.size(); ++i)
    base_child.emplace(key(b.parent[i], b.identity[i]), i);

  FlameDiff diff;
  diff.base_calls.assign(n.size(), 0);
  diff.base_total_ns.assign(n.size(), 0);
  diff.base_self_ns.assign(n.size(), 0);
  diff.in_base.assign(n.size(), false);
  std::vector<uint32_t> match(n.size(), kNone); // NEW node -> BASE node
  std::vector<bool> base_matched(b.size(), false);
  match[0] = 0;
  base_matched[0] = true;
  for (uint32_t i = 1; i < n.size(); ++i) {
    if (match[n.parent[i]] == kNone) continue;
    const auto found = base_child.find(key(match[n.parent[i]], n.identity[i]));
    if (found == base_child.end()) continue;
    match[i] = found->second;
    base_matched[found->second] = true;
  }
  for (uint32_t i = 0; i < n.size(); ++i) {
    if (match[i] == kNone) continue;
    diff.in_base[i] = true;
    diff.base_calls[i] = b.calls[match[i]];
    diff.base_total_ns[i] = b.total_ns[match[i]];
    diff.base_self_ns[i] = b.self_ns[match[i]];
  }

  // Gone stacks: unmatched BASE nodes whose parent matched. Their subtrees' calls add up from the
  // leaves (a child always has a larger id than its parent).
  std::vector<uint64_t> subtree_calls(b.calls);
  for (uint32_t i = static_cast<uint32_t>(b.size()) - 1; i >= 1; --i)
    subtree_calls[b.parent[i]] += subtree_calls[i];
  std::vector<uint32_t> gone;
  for (uint32_t i = 1; i < b.size(); ++i)
    if (!base_matched[i] && base_matched[b.parent[i]]) gone.push_back(i);
  std::sort(gone.begin(), gone.end(), [&](uint32_t x, uint32_t y) {
    return b.total_ns[x] != b.total_ns[y] ? b.total_ns[x] > b.total_ns[y] : x < y;
  });
  diff.gone_stacks = gone.size();
  for (uint32_t root : gone) {
    diff.gone_total_ns += b.total_ns[root];
    if (diff.gone.size() >= max_gone) continue;
    FlameDiff::GoneStack stack{{}, subtree_calls[root], b.total_ns[root]};
    for (uint32_t a = root; a != 0; a = b.parent[a])
      stack.stack.push_back(identities.names[b.identity[a]]);
    std::reverse(stack.stack.begin(), stack.stack.end());
    diff.gone.push_back(std::move(stack));
  }
  return diff;
}

Json flameDiffJson(const FlameDiff& diff) {
  Json gone = Json::array();
  for (const FlameDiff::GoneStack& g : diff.gone)
    gone.push_back({{"stack", g.stack}, {"calls", g.calls}, {"total_ns", g.total_ns}});
  Json in_base = Json::array();
  for (bool in : diff.in_base)
    in_base.push_back(in ? 1 : 0);
  return {{"base_calls", diff.base_calls},       {"base_total_ns", diff.base_total_ns},
          {"base_self_ns", diff.base_self_ns},   {"in_base", std::move(in_base)},
          {"gone", std::move(gone)},             {"gone_stacks", diff.gone_stacks},
          {"gone_total_ns", diff.gone_total_ns}};
}

} // namespace shapetrace::analyzer
