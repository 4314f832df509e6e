// The drain thread (see drain.h).
#include "drain.h"

#include "channel/futex.h"
#include "fd_guard.h"
#include "ring_arena.h"
#include "shapetrace/abi.h"
#include "wire/codec.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <time.h>

namespace shapetrace::rt {
namespace {

// The first rate is measured over 100 us, so that the ProcessStart, the module tables and the first
// events leave a process that lives a millisecond; it is then measured again over baselines that
// double from 1 ms (each new segment continuous with the last and steered to CLOCK_MONOTONIC).
constexpr uint64_t kFirstBaselineNs = 100000;         // 100 us
constexpr uint64_t kFirstCalibrationNs = 1000000;     // 1 ms
constexpr uint64_t kLongestCalibrationNs = 1000000000; // 1 s
// While detached the drain thread looks for news of a collector (the monitor's, or its socket
// file) this often, waiting on its semaphore in between, which a stop, exec or flush request posts.
constexpr unsigned kDetachedWaitMs = 10;
// The longest the drain sleeps for the collector to take something while producers wait (a wake
// that never comes, from a collector that died, costs this much).
constexpr long kRoomWaitNs = 1'000'000;

int64_t monotonicNow() { return int64_t(monotonicNs()); }

void pause(long ns) {
  const timespec pause{0, ns};
  nanosleep(&pause, nullptr);
}

} // namespace

Drain::Drain(Runtime& runtime, std::unique_ptr<Sink> sink, Calibration calibration,
             wire::ProcessStart process_start)
    : runtime_(runtime), sink_(std::move(sink)), calibration_(calibration),
      process_start_(std::move(process_start)), threads_(*this, uint32_t(flags().batch_events)) {
  next_calibration_ns_ = process_start_.start_ns + kFirstCalibrationNs;
  calibration_step_ns_ = kFirstCalibrationNs;
  sem_init(&wake_, 0, 0);
  if (ThrottleLimits limits; g_hot.throttled && parseThrottle(flags().throttle, limits)) {
    throttler_ = std::make_unique<Throttler>(limits, g_hot.throttled);
    threads_.throttleWith(throttler_.get());
  }
  // Attach on demand starts attached when a collector may be listening (an ipc:// socket file
  // exists; any tcp:// endpoint) until the first connection attempt says otherwise, so that a
  // program started under a running collector is recorded from its first call.
  attached_.store(!followsPeer() || sink_->mayAccept());
  detached_ns_ = process_start_.start_ns;
}

bool Drain::start() {
  sigset_t all, previous;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);
  const int rc = pthread_create(
      &thread_, nullptr, [](void* self) -> void* {
        static_cast<Drain*>(self)->run();
        return nullptr;
      },
      this);
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  thread_started_ = rc == 0;
  return thread_started_;
}

void Drain::run() {
  t_local.runtime_thread = true;
  t_transport_owner = true; // its descriptors are the runtime's
  t_local.busy = true; // hooks reached from here (an instrumented malloc) are ignored
  pthread_setname_np(pthread_self(), "shapetrace-drain");
  const auto interval = std::chrono::microseconds(flags().drain_interval_us);
  for (;;) {
    if (followsPeer()) {
      // Detached, nothing is sent and the rings are not even read: the drain looks for a
      // collector every kDetachedWaitMs, woken earlier by a stop, end or flush request.
      if (!attached())
        sleepFor(std::chrono::milliseconds(kDetachedWaitMs));
      followPeer(sink_->awaitPeer(0));
    }
    const bool detached = waitingForPeer();
    if (!detached) {
      // A producer blocked on a full ring (SHAPETRACE_BLOCKING) makes the drain run back to back;
      // when the collector had no room, the drain sleeps until the collector takes something
      // (it wakes us), bounded by kRoomWaitNs.
      const bool hurry = g_hot.waiting_producers.load(std::memory_order_relaxed) > 0;
      if (hurry && send_refused_)
        sink_->waitForRoom(kRoomWaitNs);
      else
        sleepFor(hurry ? std::chrono::microseconds(20) : interval);
    }
    send_refused_ = false;
    uint64_t target;
    {
      std::lock_guard lock(mutex_);
      if (stopping_)
        break;
      target = cycles_requested_;
    }
    if (!handleEndRequest())
      break;
    if (end_state_.load(std::memory_order_acquire) == kEnded)
      continue; // the image ended for an exec that has not failed (yet): nothing more is sent
    if (detached)
      continue;
    const bool complete = cycle();
    {
      std::lock_guard lock(mutex_);
      last_cycle_complete_ = complete;
      if (target > cycles_completed_)
        cycles_completed_ = target;
    }
    cycle_done_.notify_all();
  }
  // What draining cost this process (SHAPETRACE_VERBOSE reports it at exit).
  timespec cpu{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
  cpu_ns_ = uint64_t(cpu.tv_sec) * 1000000000u + uint64_t(cpu.tv_nsec);
}

void Drain::wake() { sem_post(&wake_); }

void Drain::followPeer(Sink::Peer peer) {
  if (peer == Sink::Peer::Connected && !attached())
    attach();
  else if (peer == Sink::Peer::Absent && attached())
    detach();
}

// A collector connected: recording starts. Each thread that recorded before gets a stretch start
// at its ring's head: calls it holds open there were entered before the detach, and their ends
// (or anything in between) may not have been recorded.
void Drain::attach() {
  const uint64_t now = nowNs();
  for (ThreadState* state = runtime_.registry.head(); state; state = state->next)
    state->drain.stretch_starts.push_back({state->ring.readable(), detached_ns_, now});
  {
    std::lock_guard lock(runtime_.recording_switch);
    if (runtime_.on_demand.load())
      setRecordingEnabled(true);
  }
  attached_.store(true, std::memory_order_release);
  g_hot.blocking_wait.store(g_hot.blocking, std::memory_order_relaxed);
  if (flags().verbose)
    std::fprintf(stderr, "shapetrace: collector connected, recording\n");
}

// The collector went away: recording stops. Exits of calls recorded before still are (balance),
// and everything stays in the rings for the next collector (which the rings' size bounds).
void Drain::detach() {
  {
    std::lock_guard lock(runtime_.recording_switch);
    if (runtime_.on_demand.load())
      setRecordingEnabled(false);
  }
  detached_ns_ = nowNs();
  attached_.store(false, std::memory_order_release);
  // Nobody to wait for: a thread in lossless mode whose ring is full drops and counts instead.
  g_hot.blocking_wait.store(false, std::memory_order_seq_cst);
  wakeWaitingProducers();
  if (flags().verbose)
    std::fprintf(stderr, "shapetrace: no collector connected, recording paused\n");
}

void Drain::sleepFor(std::chrono::microseconds interval) {
  timespec until;
  clock_gettime(CLOCK_MONOTONIC, &until);
  const long ns = until.tv_nsec + long(interval.count()) * 1000;
  until.tv_sec += ns / 1000000000;
  until.tv_nsec = ns % 1000000000;
  while (sem_clockwait(&wake_, CLOCK_MONOTONIC, &until) != 0 && errno == EINTR) {
  }
}

bool Drain::handleEndRequest() {
  if (end_state_.load(std::memory_order_acquire) == kEndRequested) {
    EndInfo end;
    end.reason = end_reason_;
    end.exit_status = end_status_;
    end.exec_path = end_path_;
    end.deadline = Clock::now() + std::chrono::nanoseconds(
                                      std::max<int64_t>(0, end_deadline_ns_ - monotonicNow()));
    finishImage(end);
    end_state_.store(kEnded, std::memory_order_release);
    // exec may fail and the image go on; any other end is the process's.
    if (end.reason != wire::EndReason::Exec)
      return false;
  }
  // The flag is cleared only once the image runs again: an end requested meanwhile (the failed
  // exec's caller _exits at once) must not take the exec's end for its own.
  if (end_state_.load(std::memory_order_acquire) == kEnded &&
      resume_requested_.load(std::memory_order_acquire)) {
    continueAfterFailedExec();
    end_state_.store(kRunning, std::memory_order_release);
    resume_requested_.store(false, std::memory_order_release);
  }
  return true;
}

// The image ended (its ProcessEnd says exec) but goes on: it becomes a process of its own under a
// new key, whose ProcessStart says so (origin execFailed, previousImage), followed by ExecFailed
// and the module tables. A new key rather than the old one going on: the transport was closed
// for the exec and reopens on a new connection, and a collector may interleave what the two
// connections carried, which one key's stream must never be. Every thread starts again in it
// (ThreadStart, sequences from 0); the exits of calls entered before are not sent (continuing).
void Drain::continueAfterFailedExec() {
  const uint64_t previous = runtime_.process_key.load();
  runtime_.process_key.store(newProcessKey());
  runtime_.previous_image = previous;
  process_start_.origin = wire::ProcessOrigin::ExecFailed;
  process_start_.previous_image = previous;
  process_start_.start_ns = nowNs();
  process_start_sent_ = false;
  threads_.resetTotals();
  {
    std::lock_guard lock(runtime_.modules_mutex);
    runtime_.control_queue.clear();
    runtime_.control_queue.push_back({0, wire::ExecFailed{nowNs(), end_path_, exec_error_}});
    for (const wire::ModuleTable& module : runtime_.modules)
      runtime_.control_queue.push_back({0, module});
  }
  for (ThreadState* state = runtime_.registry.head(); state; state = state->next) {
    DrainCursor& cursor = state->drain;
    cursor.start_sent = false;
    cursor.next_sequence = 0;
    cursor.events_sent = 0;
    cursor.drops_reported = 0;
    cursor.continuing = true;
    cursor.continued_depth = 0;
  }
  image_ended_.store(false);
}

void Drain::calibrateIfDue() {
  const uint64_t now = nowNs();
  if (now < next_calibration_ns_)
    return;
  calibration_step_ns_ = std::min(calibration_step_ns_ * 2, kLongestCalibrationNs);
  calibration_.update(readClockPair(runtime_.tick_source), calibration_step_ns_);
  next_calibration_ns_ = now + calibration_step_ns_;
  publishToRings();
}

bool Drain::send(std::span<const std::byte> message) {
  if (!sink_->send(message)) {
    send_refused_ = true;
    return false;
  }
  ever_sent_ = true;
  last_success_ = Clock::now();
  return true;
}

bool Drain::sendItem(wire::ItemBody body) { return threads_.sendItem(std::move(body)); }

void Drain::publishToRings() {
  ringArena().publishProcessKey(runtime_.process_key.load());
  const Calibration::Segment& segment = calibration_.latest();
  ringArena().publishClock(segment.ref_ticks, segment.ref_ns, segment.ns_per_tick_q32);
}

bool Drain::sendControlQueue() {
  std::lock_guard lock(runtime_.modules_mutex);
  while (!runtime_.control_queue.empty()) {
    if (!sendItem(runtime_.control_queue.front().body))
      return false;
    runtime_.control_queue.pop_front();
  }
  return true;
}

bool Drain::cycle() {
  const bool complete = sendEverything();
  // Blocking mode waits for room only while the sink accepts data (or might soon: at start-up
  // the connection takes a moment), never longer than the exit timeout without progress, and
  // never while no collector is there (a socket nobody listens on).
  if (g_hot.blocking) {
    const auto stalled = Clock::now() - last_success_;
    const bool wait = (complete || stalled < std::chrono::milliseconds(flags().exit_timeout_ms)) &&
                      sink_->mayAccept();
    g_hot.blocking_wait.store(wait, std::memory_order_seq_cst);
    if (!wait)
      wakeWaitingProducers(); // they drop and count from now on
  }
  return complete;
}

void Drain::wakeWaitingProducers() {
  if (g_hot.waiting_producers.load(std::memory_order_seq_cst) == 0)
    return;
  for (ThreadState* state = runtime_.registry.head(); state; state = state->next)
    channel::wakeWaiters(state->ring.control().tail);
}

bool Drain::sendEverything() {
  if (!process_start_sent_) {
    if (!calibrated_) {
      // The first calibration needs a baseline; the ProcessStart carries its result.
      const uint64_t first = process_start_.start_ns + kFirstBaselineNs;
      if (const uint64_t now = nowNs(); now < first) {
        const timespec pause{0, long(first - now)};
        nanosleep(&pause, nullptr);
      }
      calibration_.restart(readClockPair(runtime_.tick_source));
      next_calibration_ns_ = process_start_.start_ns + kFirstCalibrationNs;
      calibrated_ = true;
    }
    process_start_.clock = calibration_.describe(wireClockSource(runtime_.tick_source));
    if (!sendItem(process_start_))
      return false;
    process_start_sent_ = true;
    publishToRings();
  }
  calibrateIfDue();
  bool complete = sendControlQueue();
  if (complete) {
    ThreadState* previous = nullptr;
    for (ThreadState* state = runtime_.registry.head(); state;) {
      ThreadState* next = state->next;
      const bool finished = state->finished.load(std::memory_order_acquire);
      const uint64_t released = state->ring.released();
      const bool empty = threads_.drain(*state);
      // A producer asleep on a full ring (SHAPETRACE_BLOCKING) is woken as its slots come free.
      // The fence orders the tail's store before the look at the waiters (the producer counts
      // itself before it looks at the tail), so that one of the two always sees the other.
      if (state->ring.released() != released) {
        std::atomic_thread_fence(std::memory_order_seq_cst);
        if (g_hot.waiting_producers.load(std::memory_order_relaxed) > 0)
          channel::wakeWaiters(state->ring.control().tail);
      }
      if (!empty)
        complete = false;
      if (finished && empty && threads_.endThread(*state)) {
        runtime_.registry.unlink(state, previous);
        destroyThreadState(state);
      } else {
        previous = state;
      }
      state = next;
    }
  }
  return complete;
}

bool Drain::flush(uint32_t timeout_ms) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  if (waitingForPeer())
    return false; // no collector is connected: nothing can leave now
  std::unique_lock lock(mutex_);
  for (;;) {
    const uint64_t target = ++cycles_requested_;
    sem_post(&wake_);
    if (!cycle_done_.wait_until(lock, deadline,
                                [&] { return stopping_ || cycles_completed_ >= target; }))
      return false;
    if (stopping_)
      return false;
    if (last_cycle_complete_)
      return true;
    cycle_done_.wait_until(lock, std::min(deadline, Clock::now() + std::chrono::milliseconds(1)),
                           [&] { return stopping_; });
    if (Clock::now() >= deadline)
      return false;
  }
}

void Drain::stop(int32_t exit_status) {
  if (!thread_started_)
    return;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  sem_post(&wake_);
  cycle_done_.notify_all();
  pthread_join(thread_, nullptr);
  thread_started_ = false;

  // This thread now plays the drain's part. Its own hooks must not touch rings meanwhile; the
  // transport it may still create or close is the runtime's.
  TransportScope transport;
  // A request the drain thread stopped before handling (an exec failed just before this exit).
  handleEndRequest();
  if (image_ended_.load())
    return; // an exec or _exit already sent the ProcessEnd
  EndInfo end;
  end.reason = wire::EndReason::Exit;
  end.exit_status = exit_status;
  end.deadline = Clock::now() + std::chrono::milliseconds(flags().exit_timeout_ms);
  finishImage(end);
}

// Everything recorded when the image began to end has left: threads that keep recording meanwhile
// (other threads at exec, detached ones at exit) must not hold the end until its deadline.
bool Drain::endTargetsReached() {
  if (!process_start_sent_)
    return false;
  {
    std::lock_guard lock(runtime_.modules_mutex);
    if (!runtime_.control_queue.empty())
      return false;
  }
  for (ThreadState* state = runtime_.registry.head(); state; state = state->next)
    if (state->ring.released() < state->drain.end_target)
      return false;
  return true;
}

void Drain::finishImage(const EndInfo& end) {
  // Waiting only helps when the destination exists: no collector, no delay at exit.
  const bool may_wait = (ever_sent_ || sink_->mayAccept()) && !waitingForPeer();
  for (ThreadState* state = runtime_.registry.head(); state; state = state->next)
    state->drain.end_target = state->ring.readable();
  while (!cycle() && !endTargetsReached() && may_wait && Clock::now() < end.deadline)
    pause(1000000);
  const bool exec = end.reason == wire::EndReason::Exec;
  // Threads still alive end with the image (not for exec: it may fail, and they go on). Whatever
  // is still in a ring or never announced is lost now: count it.
  uint64_t unsent = 0;
  const uint64_t now = nowNs();
  for (ThreadState* state = runtime_.registry.head(); state; state = state->next) {
    if (!exec) // a stretch start no event followed: nothing to mark (states live in mmap'd memory)
      std::vector<DrainCursor::StretchStart>().swap(state->drain.stretch_starts);
    const bool empty = state->ring.readable() == state->ring.released();
    if (empty && (exec || threads_.endThread(*state)))
      continue;
    unsent += state->ring.readable() - state->ring.released();
    unsent += state->ring.pending_drops.load(std::memory_order_relaxed);
    unsent += state->nested_drops.load(std::memory_order_relaxed);
    unsent += state->drain.unreported_drops;
  }
  unsent += g_hot.late_events.load(std::memory_order_relaxed);
  wire::ProcessEnd process_end{now,
                               threads_.eventsSent(),
                               threads_.dropsReported() + unsent,
                               end.exit_status,
                               end.reason,
                               end.exec_path};
  if (throttler_)
    process_end.throttled_calls = throttler_->throttledCalls();
  bool sent = false;
  while (process_start_sent_ && !(sent = sendItem(process_end)) && may_wait &&
         Clock::now() < end.deadline)
    pause(1000000);
  image_ended_.store(sent);
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(end.deadline - Clock::now());
  const unsigned linger = left.count() > 0 ? unsigned(left.count()) : 0;
  if (exec)
    sink_->release(linger); // usable again if exec fails
  else
    sink_->close(linger);
  if (flags().verbose)
    std::fprintf(stderr, "shapetrace: %llu events sent, %llu lost, to %s%s%s\n",
                 (unsigned long long)threads_.eventsSent(),
                 (unsigned long long)(threads_.dropsReported() + unsent),
                 sink_->describe().c_str(), exec ? " before exec of " : "",
                 exec ? end.exec_path.c_str() : "");
}

bool Drain::endImage(wire::EndReason reason, int32_t exit_status, const char* exec_path,
                     uint32_t timeout_ms) {
  if (!thread_started_ || pthread_equal(pthread_self(), thread_))
    return false;
  const int64_t deadline = monotonicNow() + int64_t(timeout_ms) * 1000000;
  // One request at a time: another thread may be ending the image too (then this one waits for
  // that end). After a failed exec the drain may not have taken up the image again yet (a fork
  // child's exec failed and it _exits at once): this end is claimed once it has. The drain bounds
  // its own work by the deadline; a little more for its last send and close.
  bool requested = false; // by this call or by another thread
  while (monotonicNow() < deadline + 100000000) {
    // The resume flag first: the drain clears it only after the image runs again, so a stale
    // kEnded is never read with the flag already cleared.
    const bool resume_pending = resume_requested_.load(std::memory_order_acquire);
    int state = end_state_.load(std::memory_order_acquire);
    if (state == kRunning && end_state_.compare_exchange_strong(state, kEndClaimed)) {
      end_reason_ = reason;
      end_status_ = exit_status;
      std::strncpy(end_path_, exec_path ? exec_path : "", sizeof end_path_ - 1);
      end_deadline_ns_ = deadline;
      end_state_.store(kEndRequested, std::memory_order_release);
      sem_post(&wake_);
      requested = true;
      continue;
    }
    if (state == kEndClaimed || state == kEndRequested)
      requested = true;
    // Ended: this end, or (not requested, no resume to wait for) one an exec under way made.
    if (state == kEnded && (requested || !resume_pending))
      return requested;
    pause(50000);
  }
  // The drain has not finished in time: a requested end is still the image's, which a failed exec
  // must resume when the drain does finish it.
  return requested;
}

void Drain::resumeAfterFailedExec(int32_t error) {
  exec_error_ = error;
  resume_requested_.store(true, std::memory_order_release);
  sem_post(&wake_);
}

void Drain::abandonAfterFork() {
  thread_started_ = false;
  sink_->abandon();
}

} // namespace shapetrace::rt
