// What the Analyzer routes each thread's input to: its own ThreadAnalyzer, and one consumer per
// thread for every extension that asks for one (extension.h). A consumer sees the thread's items in
// order, on the worker the thread is pinned to, and is never touched by two threads at once; the
// extension reads it only while the Analyzer is idle (when it takes a snapshot).
#pragma once

#include "call_stack.h"
#include "wire/event.h"

#include <cstdint>
#include <span>

namespace shapetrace::analyzer {

class ThreadConsumer {
public:
  virtual ~ThreadConsumer() = default;
  // A batch of the thread's events with its sequence number (wire::kNoSequence when unknown) and
  // the tracer's waits among them (call_stack.h's forEachStretch).
  virtual void onBatch(uint64_t sequence, std::span<const Event> events,
                       std::span<const wire::TracerWait> waits = {}) = 0;
  // A gap marker: the runtime dropped `dropped` events of this thread here.
  virtual void onGapMarker(uint64_t dropped) = 0;
  // The thread ended, or the input is over.
  virtual void onEnd() = 0;
};

// A consumer that wants calls, not events: the thread's events go through the one call-stack
// reconstruction (call_stack.h) into `Sink`, which the consumer owns.
template <typename Sink> class CallStreamConsumer final : public ThreadConsumer {
public:
  template <typename... Args>
  CallStreamConsumer(ShapeLookup shapes, uint32_t max_depth, Args&&... args)
      : sink_(std::forward<Args>(args)...), stack_(sink_, shapes, max_depth) {}

  void onBatch(uint64_t sequence, std::span<const Event> events,
               std::span<const wire::TracerWait> waits = {}) override {
    stack_.onBatch(sequence, events, waits);
  }
  void onGapMarker(uint64_t dropped) override { stack_.onGapMarker(dropped); }
  void onEnd() override { stack_.onEnd(); }

  Sink& sink() { return sink_; }
  const Sink& sink() const { return sink_; }
  const CallStack<Sink>& stack() const { return stack_; }

private:
  Sink sink_;
  CallStack<Sink> stack_;
};

} // namespace shapetrace::analyzer
