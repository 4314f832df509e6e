// The formats `shapetrace export` writes, each from its published schema:
// - folded: Brendan Gregg's folded stacks, "f1;f2;f3 <self ns>" per distinct stack (FlameGraph's
//   flamegraph.pl, inferno, Pyroscope, speedscope read it);
// - pprof: github.com/google/pprof's profile.proto, gzipped; one sample per distinct stack with
//   the values calls (count), total (nanoseconds, inclusive) and self (nanoseconds, the default
//   sample type), so that `go tool pprof` and its -diff_base work on it;
// - speedscope: www.speedscope.app's file format, one evented profile per thread;
// - perfetto: Perfetto's native protobuf trace, one packet sequence and one track per thread,
//   every call one TrackEvent slice (begin and end) whose name is interned on its sequence.
// The first two come from the calling-context tree (extensions/flame.h); the last two need every
// call in order and come from the call stream (TraceCapture below).
#pragma once

#include "analysis.h"
#include "extension.h"
#include "flame/flame_tree.h"

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

namespace shapetrace::analyzer::exports {

// Folded stacks of `tree` (functions are the model's indices), lines sorted.
std::string folded(const FlameTree& tree, const Analysis& analysis);
// A gzipped pprof Profile of `tree`; its duration is `span_ns`, the recording's wall time from its
// first event to its last (as `shapetrace info` prints it), not the sum of the threads' times.
std::string pprof(const FlameTree& tree, const Analysis& analysis, uint64_t span_ns);

// One thread's calls as open/close events in time order (closes of nested calls innermost first).
struct SliceEvent {
  uint64_t time_ns = 0;
  uint32_t function = 0; // the model's function index
  bool open = false;
};
struct ThreadTrace {
  ThreadKey key;
  uint32_t pid = 0; // from the process's start item; 0 when unknown
  std::string name;
  std::vector<SliceEvent> events;
};

// Both write as they go (a run of 10^8 calls gives gigabytes): `out` should be a file or a pipe.
void speedscope(std::ostream& out, const std::vector<ThreadTrace>& threads,
                const Analysis& analysis, const std::string& name);
void perfetto(std::ostream& out, const std::vector<ThreadTrace>& threads, const Analysis& analysis);

// A call-stack sink that keeps every call as an open and a close event. Calls discarded at a gap
// or open at the end are closed at the last time the thread showed, so every open has its close.
class SliceSink {
public:
  void onEnter(uint32_t function, uint32_t depth, uint64_t time_ns);
  void onCall(const FinishedCall& call);
  void onReset();
  const std::vector<SliceEvent>& events() const { return events_; } // process function ids
  std::vector<SliceEvent> takeEvents() { return std::move(events_); }

private:
  std::vector<SliceEvent> events_;
  std::vector<uint32_t> open_;
  uint64_t last_ns_ = 0;
};

// Not a model extension (it is not registered): the export command runs it beside "flame" to
// capture every thread's calls (32 bytes per call in memory) and the processes' pids.
class TraceCapture final : public Extension {
public:
  std::unique_ptr<ThreadConsumer> consumerFor(const ThreadKey& thread) override;
  void observe(const wire::StreamItem& item) override;
  nlohmann::ordered_json result(const Analysis&, FunctionIndex&) const override { return nullptr; }
  // The threads' traces in (process, thread) order, functions mapped to the model's. Moves the
  // events out of the consumers: call it once, after the input is over.
  std::vector<ThreadTrace> takeTraces(const Analysis& analysis, FunctionIndex& functions);

private:
  using Consumer = CallStreamConsumer<SliceSink>;
  std::map<ThreadKey, Consumer*> consumers_;
  std::map<uint64_t, uint32_t> pids_;
};

} // namespace shapetrace::analyzer::exports
