// The differential flame graph of two runs: NEW's calling-context tree (the "flame" extension's
// result in its model) with, on every node, the values of the same stack in BASE.
//
// A stack is the same in both runs when its functions are, frame by frame, by identity (the
// mangled name, as the diff matches functions), whatever the function ids of either model. The
// graph is drawn with NEW's widths and coloured by the change of each frame's time per second of
// run (Brendan Gregg's differential flame graphs colour a frame by its change; widths come from the
// second profile). Stacks that only BASE has cannot be drawn with NEW's widths: they are listed
// apart, the root of each such subtree once ("gone" stacks), heaviest first.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace shapetrace::analyzer {

struct FlameDiff {
  // Per node of NEW's tree (node 0 the root): the same stack's values in BASE, 0 where BASE does
  // not have it (then `in_base` is false).
  std::vector<uint64_t> base_calls, base_total_ns, base_self_ns;
  std::vector<bool> in_base;
  struct GoneStack {
    std::vector<std::string> stack; // function names, outermost first
    uint64_t calls = 0;             // the gone subtree's calls, all frames
    uint64_t total_ns = 0;          // the root frame's inclusive time
  };
  std::vector<GoneStack> gone; // heaviest first
  uint64_t gone_stacks = 0;    // all of them (gone may list fewer)
  uint64_t gone_total_ns = 0;
};

// Both arguments are analysis models (version 1) with the "flame" extension's result. Throws
// std::invalid_argument when either lacks it, naming which. At most `max_gone` gone stacks are
// listed.
FlameDiff diffFlames(const nlohmann::ordered_json& base, const nlohmann::ordered_json& now,
                     size_t max_gone = 100);

// {"base_calls": [], "base_total_ns": [], "base_self_ns": [] (columns over NEW's nodes),
//  "gone": [{"stack": [names], "calls", "total_ns"}], "gone_stacks", "gone_total_ns"}
nlohmann::ordered_json flameDiffJson(const FlameDiff& diff);

// True when the model carries the flame extension's result.
bool hasFlame(const nlohmann::ordered_json& model);

} // namespace shapetrace::analyzer
