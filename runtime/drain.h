// The drain thread: wakes every SHAPETRACE_DRAIN_INTERVAL_US (never spins), takes each ring's
// events in bulk, converts ticks to CLOCK_MONOTONIC nanoseconds, encodes stream items with
// stream/wire and hands them to the Sink.
//
// Loss is decided in one place only, the ring: the drain releases ring slots only after the sink
// accepted the items made from them, so a slow or absent collector makes rings fill up and the
// producers drop and count (a Gap in the stream says exactly how many, between which batches).
// Items of one thread are sent in ring order; process-level items (ProcessStart, module tables)
// go before any batch that may refer to them.
#pragma once

#include "clock.h"
#include "flags.h"
#include "runtime.h"
#include "sink.h"
#include "wire/codec.h"

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <pthread.h>

namespace shapetrace::rt {

class Drain {
public:
  Drain(Runtime& runtime, std::unique_ptr<Sink> sink, Calibration calibration,
        wire::ProcessStart process_start);
  Drain(const Drain&) = delete;
  Drain& operator=(const Drain&) = delete;

  // Spawns the thread (all signals blocked in it). False when the thread cannot be created.
  bool start();
  // Process exit: the last cycles within SHAPETRACE_EXIT_TIMEOUT_MS, ThreadEnd for the threads
  // still alive, ProcessEnd, then the sink is closed with what remains of the timeout as linger.
  void stop();
  // Runs full cycles until everything recorded before the call was accepted by the sink, or
  // timeout_ms passed. Any thread but the drain's.
  bool flush(uint32_t timeout_ms);
  // Fork child: the thread does not exist here and the sink belongs to the parent.
  void abandonAfterFork();
  // Before exec: everything recorded so far leaves the process within timeout_ms (not waited for
  // when the destination certainly does not exist). Any thread but the drain's.
  void prepareForExec(uint32_t timeout_ms);

private:
  using Clock = std::chrono::steady_clock;

  void run();
  // One pass over the control queue and every ring. True when nothing is left to send.
  bool cycle();
  void calibrateIfDue();
  bool sendItem(wire::ItemBody body);
  bool sendControlQueue();
  // Drains one thread's ring; true when the ring is empty afterwards.
  bool drainThread(ThreadState& state);
  bool sendBatch(ThreadState& state, uint64_t up_to);
  bool sendPendingGap(ThreadState& state, uint64_t from_ns, uint64_t to_ns);
  bool endThread(ThreadState& state);
  uint64_t nowNs() const { return monotonicNs(); }

  Runtime& runtime_;
  std::unique_ptr<Sink> sink_;
  Calibration calibration_;
  wire::ProcessStart process_start_;
  bool process_start_sent_ = false;
  uint64_t next_calibration_ns_ = 0;
  uint64_t calibration_step_ns_ = 0;
  wire::EventEncoder batch_; // the batch being made, encoded event by event
  uint64_t events_sent_ = 0;
  uint64_t drops_reported_ = 0;
  Clock::time_point last_success_ = Clock::now();
  bool ever_sent_ = false;
  uint64_t cpu_ns_ = 0; // the drain thread's CPU time, known once it has stopped

  pthread_t thread_{};
  bool thread_started_ = false;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable cycle_done_;
  bool stopping_ = false;
  uint64_t cycles_requested_ = 0;
  uint64_t cycles_completed_ = 0;
  bool last_cycle_complete_ = false;
};

} // namespace shapetrace::rt
