// The differential flame graph's matching (diff/flame_diff.h): every NEW stack carries the values
// of the stack with the same function names in BASE, found here independently by walking both
// trees' name paths; stacks only BASE has are listed once per gone subtree; function ids and the
// order of first appearance do not matter; a model without the flame extension is refused.
#include "analyzer.h"
#include "flame/flame_diff.h"
#include "flame/flame_extension.h"
#include "model_json.h"
#include "analyzer/trace_builder.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace shapetrace::analyzer {
namespace {

using testing::batchItem;
using testing::call;
using testing::Call;
using testing::eventsOf;
using Json = nlohmann::ordered_json;

// A run of `calls` on one thread, its functions named by `names` (id i+1 is names[i]).
Json runOf(const std::vector<std::string>& names, const std::vector<Call>& calls) {
  wire::ModuleTable table;
  table.module_id = "m";
  for (uint32_t id = 1; id <= names.size(); ++id)
    table.functions.push_back({id, "_Z" + names[id - 1], names[id - 1], "m.c", id});
  std::vector<NamedExtension> extensions;
  extensions.push_back({"flame", std::make_unique<FlameExtension>()});
  Analyzer analyzer({}, 1, std::move(extensions));
  analyzer.consume(wire::StreamItem{3, table});
  analyzer.consume(batchItem(3, 1, 0, eventsOf(calls)));
  analyzer.finish();
  return toJson(analyzer.snapshot());
}

// Each flame node's stack as "a;b;c", from the model's columns and function names.
std::vector<std::string> stacksOf(const Json& model) {
  const Json& nodes = model["extensions"]["flame"]["nodes"];
  std::vector<std::string> stacks(nodes["parent"].size());
  for (size_t i = 1; i < stacks.size(); ++i) {
    const auto parent = nodes["parent"][i].get<size_t>();
    const std::string name = model["functions"][nodes["function"][i].get<size_t>()]["name"];
    stacks[i] = parent == 0 ? name : stacks[parent] + ";" + name;
  }
  return stacks;
}

TEST(FlameDiffTest, EveryNewStackCarriesTheSameStackOfBase) {
  // BASE: main -> serve -> {get, put, scan -> read}. NEW, with other ids in another order: scan is
  // gone, put now also calls wait, get is slower.
  const Json base = runOf({"main", "serve", "get", "put", "scan", "read"},
                          {call(1, {call(2, {call(3, {}, 100)}), call(2, {call(4, {}, 200)}),
                                    call(2, {call(5, {call(6, {}, 40)}, 300)}),
                                    call(2, {call(3, {}, 100)})})});
  const Json now = runOf({"wait", "put", "get", "serve", "main"},
                         {call(5, {call(4, {call(2, {call(1, {}, 900)}, 200)}),
                                   call(4, {call(3, {}, 150)})})});
  const FlameDiff d = diffFlames(base, now);

  const auto base_stacks = stacksOf(base), new_stacks = stacksOf(now);
  std::map<std::string, size_t> base_node;
  for (size_t i = 1; i < base_stacks.size(); ++i)
    base_node[base_stacks[i]] = i;
  const Json& b = base["extensions"]["flame"]["nodes"];
  ASSERT_EQ(d.in_base.size(), new_stacks.size());
  for (size_t i = 1; i < new_stacks.size(); ++i) {
    SCOPED_TRACE(new_stacks[i]);
    const auto found = base_node.find(new_stacks[i]);
    ASSERT_EQ(d.in_base[i], found != base_node.end());
    if (found == base_node.end()) {
      EXPECT_EQ(d.base_calls[i], 0u);
      continue;
    }
    EXPECT_EQ(d.base_calls[i], b["calls"][found->second].get<uint64_t>());
    EXPECT_EQ(d.base_total_ns[i], b["total_ns"][found->second].get<uint64_t>());
    EXPECT_EQ(d.base_self_ns[i], b["self_ns"][found->second].get<uint64_t>());
  }
  // main;serve;get is in both (2 calls of 100 ns in BASE); main;serve;put;wait only in NEW.
  const auto at = [&](const std::string& stack) {
    for (size_t i = 1; i < new_stacks.size(); ++i)
      if (new_stacks[i] == stack) return i;
    ADD_FAILURE() << "no stack " << stack;
    return size_t{0};
  };
  EXPECT_EQ(d.base_calls[at("main;serve;get")], 2u);
  EXPECT_EQ(d.base_total_ns[at("main;serve;get")], 200u);
  EXPECT_FALSE(d.in_base[at("main;serve;put;wait")]);
  EXPECT_TRUE(d.in_base[0]);

  // The scan subtree is gone, listed once at its root with its two calls.
  ASSERT_EQ(d.gone_stacks, 1u);
  ASSERT_EQ(d.gone.size(), 1u);
  EXPECT_EQ(d.gone[0].stack, (std::vector<std::string>{"main", "serve", "scan"}));
  EXPECT_EQ(d.gone[0].calls, 2u);
  EXPECT_EQ(d.gone[0].total_ns, 340u);
  EXPECT_EQ(d.gone_total_ns, 340u);
}

TEST(FlameDiffTest, ARunComparedWithItselfMatchesEveryStack) {
  const Json run = runOf({"main", "a", "b"}, {call(1, {call(2, {call(3)}), call(3, {call(2)})})});
  const FlameDiff d = diffFlames(run, run);
  const Json& n = run["extensions"]["flame"]["nodes"];
  for (size_t i = 0; i < d.in_base.size(); ++i) {
    EXPECT_TRUE(d.in_base[i]);
    EXPECT_EQ(d.base_self_ns[i], n["self_ns"][i].get<uint64_t>());
  }
  EXPECT_EQ(d.gone_stacks, 0u);
}

TEST(FlameDiffTest, AModelWithoutTheFlameExtensionIsNamed) {
  const Json with = runOf({"main"}, {call(1)});
  Json without = with;
  without.erase("extensions");
  try {
    diffFlames(without, with);
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "BASE has no flame graph (analyse it with --extensions flame or all)");
  }
  EXPECT_THROW(diffFlames(with, without), std::invalid_argument);
  EXPECT_FALSE(hasFlame(without));
  EXPECT_TRUE(hasFlame(with));
}

TEST(FlameDiffTest, AMalformedTreeIsRefused) {
  Json bad = runOf({"main", "a"}, {call(1, {call(2)})});
  bad["extensions"]["flame"]["nodes"]["parent"][2] = 7; // a parent after its child
  EXPECT_THROW(diffFlames(bad, bad), std::invalid_argument);
}

} // namespace
} // namespace shapetrace::analyzer
