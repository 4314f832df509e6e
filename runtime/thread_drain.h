// One thread's ring turned into stream items: the drain thread's work on each ring (drain.h), and
// the collector's on the rings of a process that died without warning (channel/rings.h), which
// runs this same code over a copy of what those rings still held.
//
// Events go into EventBatch items of at most `batch_events` events, in ring order; the markers
// (thread/ring.h's MarkerKind) become Gaps, ThreadNames, abandoned exits, annotations and tracer
// waits in place. A ring slot is released only after the item made from it was accepted, so a
// send that fails leaves everything for the next try. After each accepted item the ring's control
// page says how far the stream got (sequence, counts), so that a collector finishing the ring
// carries on from exactly there.
#pragma once

#include "thread_state.h"
#include "throttle.h"
#include "wire/codec.h"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace shapetrace::rt {

// Where the items go and what converts the ring's values.
class DrainOutput {
public:
  // False: not accepted now (the caller keeps the data and tries again later).
  virtual bool send(std::span<const std::byte> message) = 0;
  virtual uint64_t processKey() const = 0;
  // Ring ticks to CLOCK_MONOTONIC nanoseconds.
  virtual uint64_t toNs(uint64_t ticks) const = 0;
  // An interned annotation key or thread name ("" when unknown).
  virtual std::string lookup(uint32_t id) = 0;
  virtual uint64_t nowNs() const = 0;

protected:
  ~DrainOutput() = default;
};

class ThreadDrain {
public:
  ThreadDrain(DrainOutput& output, uint32_t batch_events);

  // Sends what the thread's ring holds (its ThreadStart first); true when the ring is empty
  // afterwards.
  bool drain(ThreadState& state);
  // The thread's end: drops it never announced, then ThreadEnd. False when a send failed.
  bool endThread(ThreadState& state);
  // An item of the process (encoded with its key).
  bool sendItem(wire::ItemBody body);

  // Over every thread since the last reset: events sent in batches, and events announced lost.
  uint64_t eventsSent() const { return events_sent_; }
  // Times the recorded calls and throttles functions through `throttler` (the runtime's drain,
  // when SHAPETRACE_THROTTLE is on); nullptr: no timing.
  void throttleWith(Throttler* throttler) { throttler_ = throttler; }
  uint64_t dropsReported() const { return drops_reported_; }
  void resetTotals() { events_sent_ = drops_reported_ = 0; }

private:
  bool sendBatch(ThreadState& state, uint64_t up_to);
  // A batch holds at most as many marks as events (a thread that only annotates still sends
  // messages of bounded size).
  bool marksFull() const {
    return batch_annotations_.size() + batch_waits_.size() + batch_throttles_.size() +
               batch_values_.size() >=
           batch_events_;
  }
  // The first look at an event (throttling on): times the call an exit ends.
  void timeCall(DrainCursor& cursor, const Event& slot, uint64_t index);
  // The throttle marks decided at the event at `index`, just appended to the batch.
  void placeThrottleMarks(const DrainCursor& cursor, uint64_t index);
  // An annotation or tracer wait (the marker and the slot after it) placed at the batch's end.
  void addMark(const ThreadState& state, const Event& marker, const Event& payload);
  // An argument or return value (kCallValueMarker at `index`) placed at the batch's end; the
  // ring slots it took (a string's text follows its marker).
  uint64_t addCallValue(const ThreadState& state, uint64_t index);
  // A string value's kCallValueText slot at `index` and its bytes: the slots they took.
  uint64_t readValueText(const ThreadState& state, uint64_t index, wire::CallValue& value);
  // Forgets the batch being made (a send failed: its slots stay in the ring for the next cycle).
  bool discardBatch();
  bool sendPendingGap(ThreadState& state, uint64_t from_ns, uint64_t to_ns);
  // A run of events with ids no module named (>= SHAPETRACE_UNREGISTERED_BASE) from `index`: not
  // sent, counted as dropped in a Gap. Returns the index after the run, or kNoIndex on failure.
  uint64_t dropUnnamedEvents(ThreadState& state, uint64_t index, uint64_t head);
  // Appends the abandoned exits of the kAbandonMarker at `index`; false when a send failed.
  bool expandAbandonMarker(ThreadState& state, uint64_t index);
  // Tells the ring's control page how far the stream got (before the ring's tail moves on).
  static void publishProgress(ThreadState& state);

  DrainOutput& output_;
  const uint32_t batch_events_;
  wire::EventEncoder batch_; // the batch being made, encoded event by event
  // The batch's annotations and tracer waits, placed among its events.
  std::vector<wire::Annotation> batch_annotations_;
  std::vector<wire::TracerWait> batch_waits_;
  std::vector<wire::Throttle> batch_throttles_;
  Throttler* throttler_ = nullptr;
  std::vector<wire::CallValues> batch_values_;
  uint64_t events_sent_ = 0;
  uint64_t drops_reported_ = 0;
};

} // namespace shapetrace::rt
