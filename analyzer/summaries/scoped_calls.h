// A sequence sink that turns a scope's calls into a flame tree and, optionally, per-thread slices.
#pragma once

#include "export/exports.h"
#include "flame_tree.h"
#include "summaries/sequences.h"

#include <vector>

namespace shapetrace::analyzer::summaries {

// A scope's calls, read back from the recording (replayScope), as a calling-context tree rooted at
// the scope's roots (`shapetrace export` folded and pprof, the live page's scoped flame graphs) or
// as each thread's open and close events (speedscope, Perfetto). Functions are the analysis'
// indices; the tree counts calls as the flame extension does.
class ScopedCalls final : public SequenceSink {
public:
  explicit ScopedCalls(bool per_call) : per_call_(per_call) {}

  void begin(const summaries::SequenceInfo& info) override {
    if (traces_.empty() || traces_.back().key != info.thread) {
      traces_.emplace_back();
      traces_.back().key = info.thread;
    }
    open_.clear();
  }
  void enter(uint32_t function, uint32_t, uint64_t time_ns) override {
    const uint32_t parent = open_.empty() ? FlameTree::kRoot : open_.back().node;
    open_.push_back({tree_.child(parent, function), 0});
    if (per_call_) traces_.back().events.push_back({time_ns, function, true});
  }
  void exit(uint32_t function, uint32_t, uint64_t enter_ns, uint64_t exit_ns,
            bool measured) override {
    const Open open = open_.back();
    open_.pop_back();
    if (per_call_) traces_.back().events.push_back({exit_ns, function, false});
    FlameNode& node = tree_[open.node];
    ++node.calls;
    if (!measured) return;
    // As the flame extension counts: measured calls timed, their time their caller's callees'.
    const uint64_t duration = exit_ns - enter_ns;
    ++node.measured;
    node.total_ns += duration;
    node.self_ns += duration > open.callee_ns ? duration - open.callee_ns : 0;
    if (!open_.empty()) open_.back().callee_ns += duration;
  }
  // Calls that lost their exit are closed where the thread's events stop, as TraceCapture does.
  void gap(uint64_t time_ns) override { close(time_ns); }
  void end(uint64_t time_ns) override { close(time_ns); }

  FlameTree& tree() { return tree_; }
  std::vector<exports::ThreadTrace>& traces() { return traces_; }

private:
  struct Open {
    uint32_t node;
    uint64_t callee_ns;
  };
  void close(uint64_t time_ns) {
    while (!open_.empty()) {
      if (per_call_)
        traces_.back().events.push_back({time_ns, tree_[open_.back().node].function, false});
      open_.pop_back();
    }
  }
  bool per_call_;
  FlameTree tree_;
  std::vector<Open> open_;
  std::vector<exports::ThreadTrace> traces_;
};

} // namespace shapetrace::analyzer::summaries
