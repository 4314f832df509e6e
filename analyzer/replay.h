// One thread's events read back from a recording, after the analysis: what the report's instance
// reader and the structure summaries replay through the call stream (call_stack.h).
//
// The recording's index positions the reader at the batch of the thread that covers a time; frames
// of other threads are skipped by their header alone, so reading one thread costs its own batches
// plus a header peek per frame of the others. Function ids are mapped onto the analysis' function
// indices (functionIndex()), so that the calls name the model's functions and their shapes can be
// looked up in its shape table; an id the analysis never saw gets an index past its functions, of
// its own, so that its exits still match its enters.
#pragma once

#include "analysis.h"
#include "id_table.h"
#include "recording/recording.h"
#include "wire/event.h"
#include "wire/items.h"

#include <cstdint>
#include <map>
#include <vector>

namespace shapetrace::analyzer {

// The names of a recording without its analysis: every function its module tables name, every
// thread with events (named as its items name it) and the time of its first event, from one pass
// that decodes every item but the event batches (their headers suffice). This is what a scope
// needs when it names no shape, cluster or outlier, at a fraction of the analysis' cost. Function
// indices follow the (process, id) order of the tables, threads the (process, thread) order.
struct RecordingNames {
  // functions, function_index, threads (key, name, and the diagnostics of batches lost or
  // repeated, as the analyzer counts them), the recording's damage and undecodable frames in
  // diagnostics, and settings only
  Analysis analysis;
  uint64_t first_ns = UINT64_MAX;
  std::map<uint64_t, uint32_t> pids; // process key -> pid, from the process start items
};
RecordingNames namesOf(recording::RecordingReader& reader, const AnalysisSettings& settings);

class ThreadEvents {
public:
  enum class Kind : uint8_t {
    kBatch,       // events(), with sequence()
    kGap,         // a gap marker: dropped() events were lost here
    kUndecodable, // a frame of the thread that does not decode: its events are lost
    kEnd,         // the thread ended, or the recording did
  };

  // `analysis` must be the analysis of this recording. Ids it does not know are mapped from
  // `unknown_base` on (0: its function count).
  ThreadEvents(recording::RecordingReader& reader, const Analysis& analysis,
               uint32_t unknown_base = 0);

  // Positions at the thread's item covering `time_ns` (0: its first). False when the recording has
  // no item of the thread.
  bool start(const ThreadKey& thread, uint64_t time_ns);
  Kind next();

  std::vector<Event>& events() { return events_; }
  const std::vector<wire::TracerWait>& waits() const { return waits_; } // among events()
  // The recorded arguments and return values among events(), their function ids mapped as the
  // events' are.
  const std::vector<wire::CallValues>& values() const { return values_; }
  uint64_t sequence() const { return sequence_; }
  uint64_t dropped() const { return dropped_; }
  uint64_t framesRead() const { return frames_read_; }

private:
  void mapFunctions(uint64_t process, std::vector<Event>& events);
  uint32_t mapFunction(uint64_t process, uint32_t id);

  recording::RecordingReader& reader_;
  const Analysis& analysis_;
  uint32_t unknown_base_;
  ThreadKey thread_;
  std::map<uint64_t, IdTable<uint32_t>> index_of_; // per process: function id -> index
  std::vector<Event> events_;
  std::vector<wire::TracerWait> waits_;
  std::vector<wire::CallValues> values_;
  uint64_t sequence_ = 0;
  uint64_t dropped_ = 0;
  uint64_t frames_read_ = 0;
};

} // namespace shapetrace::analyzer
