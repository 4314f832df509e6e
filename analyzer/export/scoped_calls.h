// A sequence sink that turns a scope's calls into a flame tree and, optionally, per-thread slices.
#pragma once

#include "export/exports.h"
#include "flame/flame_extension.h"
#include "flame/flame_tree.h"
#include "summaries/sequences.h"

#include <vector>

namespace shapetrace::analyzer::exports {

// A scope's calls, read back from the recording (replayScope), as a calling-context tree rooted at
// the scope's roots (`shapetrace export` folded and pprof, the live page's scoped flame graphs) or
// as each thread's open and close events (speedscope, Perfetto). Functions are the analysis'
// indices; the tree counts calls as the flame extension does.
class ScopedCalls final : public summaries::SequenceSink {
public:
  explicit ScopedCalls(bool per_call) : per_call_(per_call) {}

  void begin(const summaries::SequenceInfo& info) override {
    if (traces_.empty() || traces_.back().key != info.thread) {
      traces_.emplace_back();
      traces_.back().key = info.thread;
    }
    flame_.onReset();
    open_.clear();
  }
  void enter(uint32_t function, uint32_t depth, uint64_t time_ns) override {
    flame_.onEnter(function, depth, time_ns);
    open_.push_back(function);
    if (per_call_) traces_.back().events.push_back({time_ns, function, true});
  }
  // Counted as the flame extension counts (FlameSink): measured calls timed, their time their
  // caller's callees'.
  void exit(uint32_t function, uint32_t depth, uint64_t enter_ns, uint64_t exit_ns,
            bool measured) override {
    open_.pop_back();
    if (per_call_) traces_.back().events.push_back({exit_ns, function, false});
    FinishedCall call;
    call.function = function;
    call.depth = depth;
    call.enter_ns = enter_ns;
    call.exit_ns = exit_ns;
    call.measured = measured;
    flame_.onCall(call);
  }
  // Calls that lost their exit are closed where the thread's events stop, as TraceCapture does.
  void gap(uint64_t time_ns) override { close(time_ns); }
  void end(uint64_t time_ns) override { close(time_ns); }

  FlameTree& tree() { return flame_.tree(); }
  std::vector<ThreadTrace>& traces() { return traces_; }

private:
  void close(uint64_t time_ns) {
    for (; !open_.empty(); open_.pop_back())
      if (per_call_) traces_.back().events.push_back({time_ns, open_.back(), false});
    flame_.onReset();
  }
  bool per_call_;
  FlameSink flame_{SIZE_MAX};
  std::vector<uint32_t> open_; // the open calls' functions
  std::vector<ThreadTrace> traces_;
};

} // namespace shapetrace::analyzer::exports
