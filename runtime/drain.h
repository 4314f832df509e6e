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
#include "thread_drain.h"
#include "wire/codec.h"

#include <atomic>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <pthread.h>
#include <semaphore.h>

namespace shapetrace::rt {

class Drain final : private DrainOutput {
public:
  Drain(Runtime& runtime, std::unique_ptr<Sink> sink, Calibration calibration,
        wire::ProcessStart process_start);
  Drain(const Drain&) = delete;
  Drain& operator=(const Drain&) = delete;

  // Spawns the thread (all signals blocked in it). False when the thread cannot be created.
  bool start();
  // Process exit, on the exiting thread: stops the drain thread, then the last cycles within
  // SHAPETRACE_EXIT_TIMEOUT_MS, ThreadEnd for the threads still alive, ProcessEnd (reason exit,
  // `exit_status`), then the sink is closed with what remains of the timeout as linger. Nothing
  // when the image already ended (endImage).
  void stop(int32_t exit_status);
  // Runs full cycles until everything recorded before the call was accepted by the sink, or
  // timeout_ms passed. Any thread but the drain's.
  bool flush(uint32_t timeout_ms);
  // Fork child: the thread does not exist here and the sink belongs to the parent.
  void abandonAfterFork();
  // Makes the drain thread look now rather than at its next interval (a new thread's first
  // event: its ThreadStart, and the process's ProcessStart, leave at once). Async-signal-safe.
  void wake();
  // Attach on demand: whether a collector is connected as far as the drain knows (at start:
  // whether one may be, see Drain::Drain). Always true when recording does not follow the peer.
  bool attached() const { return attached_.load(std::memory_order_acquire); }

  // The image ends without the library destructor (exec, _exit): the drain thread sends what was
  // recorded (cycles within timeout_ms), ThreadEnd for every thread (not for exec, which may fail
  // and go on), ProcessEnd with `reason`, `exit_status` and `exec_path`, and lets the sink's queue
  // leave within what remains of timeout_ms. The caller waits for that and no longer. Safe on any
  // thread but the drain's, in a signal handler too: the caller only uses atomics, sem_post and
  // nanosleep, and allocates nothing (the work is the drain thread's). True when the drain ended
  // the image (whether or not a collector took the ProcessEnd: none may be connected). After an
  // exec end the drain sends nothing until resumeAfterFailedExec(), which a true result requires
  // if exec returns.
  bool endImage(wire::EndReason reason, int32_t exit_status, const char* exec_path,
                uint32_t timeout_ms);
  // The exec announced by endImage failed with `error`: the image goes on as a process of its own
  // (continueAfterFailedExec), recording as before, as soon as the drain has ended the image
  // (at once when it has; when its end ran late, when it finishes). Does not wait.
  void resumeAfterFailedExec(int32_t error);

private:
  using Clock = std::chrono::steady_clock;
  enum EndState : int { kRunning, kEndClaimed, kEndRequested, kEnded };
  struct EndInfo {
    wire::EndReason reason = wire::EndReason::Exit;
    int32_t exit_status = 0;
    std::string exec_path;
    Clock::time_point deadline;
  };

  void run();
  // Attach on demand: recording follows the sink's peer.
  bool followsPeer() const { return runtime_.on_demand.load() && sink_->watchesPeer(); }
  void followPeer(Sink::Peer peer);
  // Recording follows the peer and none is connected: nothing is read or sent.
  bool waitingForPeer() const { return followsPeer() && !attached(); }
  void attach();
  void detach();
  // Sleeps until woken (sem_post) or `interval` passed.
  void sleepFor(std::chrono::microseconds interval);
  // Handles an end or resume request; false when the drain thread must stop (the process ends).
  bool handleEndRequest();
  void continueAfterFailedExec();
  // Everything left, then ProcessEnd, then the sink. On the drain thread, or at exit on the
  // exiting thread once the drain thread stopped.
  void finishImage(const EndInfo& end);
  bool endTargetsReached();
  // One pass over the control queue and every ring (sendEverything), then whether producers may
  // wait for room. True when nothing is left to send.
  bool cycle();
  bool sendEverything();
  void calibrateIfDue();
  bool sendItem(wire::ItemBody body);
  bool sendControlQueue();
  // Wakes the threads asleep on a full ring (blocking mode), to look again.
  void wakeWaitingProducers();
  // Tells the rings' arena the process's key and clock (for a collector finishing the rings).
  void publishToRings();

  // DrainOutput: the sink, with the process's key, calibration and strings.
  bool send(std::span<const std::byte> message) override;
  uint64_t processKey() const override { return runtime_.process_key.load(); }
  uint64_t toNs(uint64_t ticks) const override { return calibration_.toNs(ticks); }
  std::string lookup(uint32_t id) override { return runtime_.strings.lookup(id); }
  uint64_t nowNs() const override { return monotonicNs(); }

  Runtime& runtime_;
  std::unique_ptr<Sink> sink_;
  Calibration calibration_;
  wire::ProcessStart process_start_;
  bool process_start_sent_ = false;
  bool calibrated_ = false;
  uint64_t next_calibration_ns_ = 0;
  uint64_t calibration_step_ns_ = 0;
  ThreadDrain threads_; // every ring's events, through send()
  std::unique_ptr<Throttler> throttler_; // SHAPETRACE_THROTTLE on: times calls, throttles
  Clock::time_point last_success_ = Clock::now();
  bool ever_sent_ = false;
  bool send_refused_ = false; // the sink had no room in this cycle
  uint64_t cpu_ns_ = 0; // the drain thread's CPU time, known once it has stopped
  std::atomic<bool> attached_{true};
  uint64_t detached_ns_ = 0; // when the last detach happened (CLOCK_MONOTONIC)

  pthread_t thread_{};
  bool thread_started_ = false;
  sem_t wake_;              // posted by whoever wants the drain thread to look now
  std::mutex mutex_;
  std::condition_variable cycle_done_;
  bool stopping_ = false;
  uint64_t cycles_requested_ = 0;
  uint64_t cycles_completed_ = 0;
  bool last_cycle_complete_ = false;

  // endImage/resumeAfterFailedExec: the request is written before end_state_ is (release), read
  // after it (acquire).
  std::atomic<int> end_state_{kRunning};
  std::atomic<bool> image_ended_{false}; // a ProcessEnd that no ExecFailed voided was sent
  // A failed exec's image goes on once the drain has ended the image (exec_error_ set before).
  std::atomic<bool> resume_requested_{false};
  wire::EndReason end_reason_ = wire::EndReason::Exit;
  int32_t end_status_ = 0;
  char end_path_[PATH_MAX] = {};
  int32_t exec_error_ = 0;
  int64_t end_deadline_ns_ = 0; // CLOCK_MONOTONIC
};

} // namespace shapetrace::rt
