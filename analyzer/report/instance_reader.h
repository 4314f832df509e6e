// Reads one exact call instance back from a recording: the click-through view of the report.
//
// The analyzer keeps statistics, not calls, so an instance is found again in the recording: the
// recording's index positions a reader at the batch of one thread that covers a time, and the
// thread's events are replayed from there (replay.h) through the call stream (call_stack.h, the
// analyzer's rules). Each finished call gets its shape by looking its (function, set of child shapes) up in
// the analysis' shape table, so a call can be matched against a cluster or an outlier exactly as
// the analyzer saw it. The scan stops as
// soon as no call that started in the requested window can still be open, so reading an instance
// costs about one bin of the thread's events plus the instance itself.
#pragma once

#include "analysis.h"
#include "recording/recording.h"
#include "replay.h"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace shapetrace::analyzer::report {

// One call of an instance: analysis function index, depth below the instance's root (root = 0),
// its times relative to the root's start, and the arguments and return value the recording holds
// for it (a function chosen with SHAPETRACE_PASS_ARGS; docs/pass.md): arguments in position
// order, then the return value (position 0) when the call returned one.
struct InstanceCall {
  uint32_t function = 0;
  uint32_t depth = 0;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  std::vector<wire::CallValue> values{};
  friend bool operator==(const InstanceCall&, const InstanceCall&) = default;
};

struct Instance {
  uint64_t process = 0;
  uint32_t thread = 0;
  uint64_t start_ns = 0; // absolute, as the events carry it
  uint64_t duration_ns = 0;
  uint32_t function = 0;
  ShapeId shape = kNullShape; // kNullShape when the analysis does not know this shape
  std::vector<InstanceCall> calls; // in entry order; calls[0] is the root
  uint64_t omitted_calls = 0;      // calls beyond the cap, not listed
};

// What the caller looks for among the calls that start inside the window.
struct CallCandidate {
  uint32_t function = 0;
  ShapeId shape = kNullShape;
  uint64_t start_ns = 0;
  uint64_t duration_ns = 0;
};
using CallPredicate = std::function<bool(const CallCandidate&)>;

class InstanceReader {
public:
  // `analysis` must be the analysis of this recording (its function index maps the events' ids).
  InstanceReader(recording::RecordingReader& reader, const Analysis& analysis);

  // The first call of (process, thread) that starts in [from_ns, to_ns) and satisfies `matches`,
  // with at most `max_calls` of its calls; nullopt when there is none.
  std::optional<Instance> find(uint64_t process, uint32_t thread, uint64_t from_ns, uint64_t to_ns,
                               const CallPredicate& matches, size_t max_calls);

  // Frames read by all find() calls so far (what the index saves is visible here).
  uint64_t framesRead() const { return events_.framesRead(); }

private:
  const Analysis& analysis_;
  ThreadEvents events_; // function ids mapped onto analysis function indices
};

} // namespace shapetrace::analyzer::report
