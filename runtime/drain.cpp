// The drain thread (see drain.h).
#include "drain.h"

#include "fd_guard.h"
#include "wire/codec.h"

#include <csignal>
#include <cstdio>
#include <time.h>

namespace shapetrace::rt {
namespace {

constexpr uint64_t kFirstCalibrationNs = 1000000;     // 1 ms
constexpr uint64_t kLongestCalibrationNs = 1000000000; // 1 s

bool isEvent(const Event& event) { return uint32_t(event.kind) < kEventKindCount; }

} // namespace

Drain::Drain(Runtime& runtime, std::unique_ptr<Sink> sink, Calibration calibration,
             wire::ProcessStart process_start)
    : runtime_(runtime), sink_(std::move(sink)), calibration_(calibration),
      process_start_(std::move(process_start)) {
  batch_.start(flags().batch_events);
  next_calibration_ns_ = process_start_.start_ns + kFirstCalibrationNs;
  calibration_step_ns_ = kFirstCalibrationNs;
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
  t_transport_owner = true; // its descriptors (and ZeroMQ's threads') are the runtime's
  t_local.busy = true; // hooks reached from here (an instrumented malloc) are ignored
  pthread_setname_np(pthread_self(), "shapetrace-drain");
  const auto interval = std::chrono::microseconds(flags().drain_interval_us);
  std::unique_lock lock(mutex_);
  for (;;) {
    // A producer blocked on a full ring (SHAPETRACE_BLOCKING) makes the drain run back to back.
    const bool hurry = g_hot.waiting_producers.load(std::memory_order_relaxed) > 0;
    wake_.wait_for(lock, hurry ? std::chrono::microseconds(20) : interval,
                   [&] { return stopping_ || cycles_requested_ > cycles_completed_; });
    if (stopping_)
      break;
    const uint64_t target = cycles_requested_;
    lock.unlock();
    const bool complete = cycle();
    lock.lock();
    last_cycle_complete_ = complete;
    if (target > cycles_completed_)
      cycles_completed_ = target;
    cycle_done_.notify_all();
  }
  // What draining cost this process (SHAPETRACE_VERBOSE reports it at exit).
  timespec cpu{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
  cpu_ns_ = uint64_t(cpu.tv_sec) * 1000000000u + uint64_t(cpu.tv_nsec);
}

void Drain::calibrateIfDue() {
  const uint64_t now = nowNs();
  if (now < next_calibration_ns_)
    return;
  calibration_step_ns_ = std::min(calibration_step_ns_ * 2, kLongestCalibrationNs);
  calibration_.update(readClockPair(runtime_.tick_source), calibration_step_ns_);
  next_calibration_ns_ = now + calibration_step_ns_;
}

bool Drain::sendItem(wire::ItemBody body) {
  const wire::Bytes message = wire::encodeItem({runtime_.process_key, std::move(body)});
  if (!sink_->send(message))
    return false;
  ever_sent_ = true;
  last_success_ = Clock::now();
  return true;
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
  if (!process_start_sent_) {
    // The first calibration needs a baseline; the ProcessStart carries its result.
    const uint64_t first = process_start_.start_ns + kFirstCalibrationNs;
    if (const uint64_t now = nowNs(); now < first) {
      const timespec pause{0, long(first - now)};
      nanosleep(&pause, nullptr);
    }
    calibration_.restart(readClockPair(runtime_.tick_source));
    next_calibration_ns_ = nowNs() + calibration_step_ns_;
    process_start_.clock = calibration_.describe(runtime_.tick_source == TickSource::Tsc
                                                     ? wire::ClockSource::Tsc
                                                     : wire::ClockSource::Monotonic);
    if (!sendItem(process_start_))
      return false;
    process_start_sent_ = true;
  }
  calibrateIfDue();
  bool complete = sendControlQueue();
  if (complete) {
    ThreadState* previous = nullptr;
    for (ThreadState* state = runtime_.registry.head(); state;) {
      ThreadState* next = state->next;
      const bool finished = state->finished.load(std::memory_order_acquire);
      const bool empty = drainThread(*state);
      if (!empty)
        complete = false;
      if (finished && empty && endThread(*state)) {
        runtime_.registry.unlink(state, previous);
        destroyThreadState(state);
      } else {
        previous = state;
      }
      state = next;
    }
  }
  // Blocking mode waits for room only while the sink accepts data (or might soon: at start-up
  // the connection takes a moment), never longer than the exit timeout without progress.
  if (g_hot.blocking) {
    const auto stalled = Clock::now() - last_success_;
    g_hot.blocking_wait.store(
        complete || stalled < std::chrono::milliseconds(flags().exit_timeout_ms),
        std::memory_order_relaxed);
  }
  return complete;
}

bool Drain::sendBatch(ThreadState& state, uint64_t up_to) {
  if (batch_.count() == 0)
    return true;
  DrainCursor& cursor = state.drain;
  const wire::Bytes message = wire::encodeEventBatch(runtime_.process_key, state.tid,
                                                     cursor.next_sequence, batch_);
  if (!sink_->send(message))
    return false;
  ever_sent_ = true;
  last_success_ = Clock::now();
  ++cursor.next_sequence;
  cursor.events_sent += batch_.count();
  events_sent_ += batch_.count();
  batch_.clear();
  state.ring.release(up_to);
  return true;
}

bool Drain::sendPendingGap(ThreadState& state, uint64_t from_ns, uint64_t to_ns) {
  DrainCursor& cursor = state.drain;
  if (cursor.unreported_drops == 0)
    return true;
  wire::Gap gap{state.tid, cursor.unreported_drops,
                cursor.next_sequence ? cursor.next_sequence - 1 : wire::kNoSequence, from_ns,
                to_ns};
  if (!sendItem(gap))
    return false;
  cursor.drops_reported += cursor.unreported_drops;
  drops_reported_ += cursor.unreported_drops;
  cursor.unreported_drops = 0;
  return true;
}

bool Drain::drainThread(ThreadState& state) {
  DrainCursor& cursor = state.drain;
  if (!cursor.start_sent) {
    if (!sendItem(wire::ThreadStart{state.tid, calibration_.toNs(state.start_ticks), state.name}))
      return false;
    cursor.start_sent = true;
  }
  // Hooks from signal handlers that interrupted this thread's hooks: counted, placed here.
  cursor.unreported_drops += state.nested_drops.exchange(0, std::memory_order_relaxed);
  if (cursor.unreported_drops) {
    const uint64_t now = nowNs();
    if (!sendPendingGap(state, now, now))
      return false;
  }
  EventRing& ring = state.ring;
  const uint64_t head = ring.readable();
  batch_.clear();
  uint64_t index = ring.released();
  while (index < head) {
    const Event& slot = ring.at(index);
    if (isEvent(slot)) {
      batch_.append(calibration_.toNs(slot.timestamp), slot.function_id, slot.kind);
      ++index;
      if (batch_.full() && !sendBatch(state, index))
        return (batch_.clear(), false);
      continue;
    }
    if (!sendBatch(state, index))
      return (batch_.clear(), false);
    const uint64_t at_ns = calibration_.toNs(slot.timestamp);
    bool sent = true;
    uint64_t used = 1;
    switch (uint32_t(slot.kind)) {
    case kLostMarker: {
      // Recording resumed with the event after the marker (published together with it).
      const uint64_t resumed = index + 1 < head ? calibration_.toNs(ring.at(index + 1).timestamp)
                                                : nowNs();
      cursor.unreported_drops += slot.function_id;
      sent = sendPendingGap(state, at_ns, resumed);
      if (!sent)
        cursor.unreported_drops -= slot.function_id; // retried with the marker next cycle
      break;
    }
    case kAnnotationMarker: {
      const Event& value = ring.at(index + 1);
      sent = sendItem(wire::Annotation{state.tid, at_ns, runtime_.strings.lookup(slot.function_id),
                                       int64_t(value.timestamp)});
      used = 2;
      break;
    }
    case kThreadNameMarker:
      sent = sendItem(wire::ThreadName{state.tid, at_ns, runtime_.strings.lookup(slot.function_id)});
      break;
    default: // not written by this runtime; skip rather than stall the ring forever
      break;
    }
    if (!sent)
      return false;
    index += used;
    ring.release(index);
  }
  if (!sendBatch(state, index))
    return (batch_.clear(), false);
  return ring.released() == ring.readable();
}

bool Drain::endThread(ThreadState& state) {
  DrainCursor& cursor = state.drain;
  if (!cursor.start_sent)
    return false;
  const uint64_t now = nowNs();
  // Drops the thread never got to announce with a marker (its ring stayed full until it exited).
  cursor.unreported_drops += state.ring.pending_drops.exchange(0, std::memory_order_relaxed);
  if (!sendPendingGap(state, calibration_.toNs(state.ring.first_drop_ticks.load()), now))
    return false;
  return sendItem(wire::ThreadEnd{state.tid, now, cursor.events_sent, cursor.drops_reported,
                                  cursor.next_sequence});
}

bool Drain::flush(uint32_t timeout_ms) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  std::unique_lock lock(mutex_);
  for (;;) {
    const uint64_t target = ++cycles_requested_;
    wake_.notify_one();
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

void Drain::stop() {
  if (!thread_started_)
    return;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  cycle_done_.notify_all();
  pthread_join(thread_, nullptr);
  thread_started_ = false;

  // This thread now plays the drain's part. Its own hooks must not touch rings meanwhile; the
  // transport it may still create or close is the runtime's.
  TransportScope transport;
  const auto deadline = Clock::now() + std::chrono::milliseconds(flags().exit_timeout_ms);
  // Waiting only helps when the destination exists: no collector, no delay at exit.
  const bool may_wait = ever_sent_ || sink_->mayAccept();
  while (!cycle() && may_wait && Clock::now() < deadline) {
    const timespec pause{0, 1000000};
    nanosleep(&pause, nullptr);
  }
  // Threads still alive end with the process. Whatever is still in a ring or never announced is
  // lost now: count it.
  uint64_t unsent = 0;
  const uint64_t now = nowNs();
  for (ThreadState* state = runtime_.registry.head(); state; state = state->next) {
    if (state->ring.readable() == state->ring.released() && endThread(*state))
      continue;
    unsent += state->ring.readable() - state->ring.released();
    unsent += state->ring.pending_drops.load(std::memory_order_relaxed);
    unsent += state->nested_drops.load(std::memory_order_relaxed);
    unsent += state->drain.unreported_drops;
  }
  unsent += g_hot.late_events.load(std::memory_order_relaxed);
  const wire::ProcessEnd end{now, events_sent_, drops_reported_ + unsent, 0};
  while (process_start_sent_ && !sendItem(end) && may_wait && Clock::now() < deadline) {
    const timespec pause{0, 1000000};
    nanosleep(&pause, nullptr);
  }
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  sink_->close(left.count() > 0 ? unsigned(left.count()) : 0);
  if (flags().verbose)
    std::fprintf(stderr, "shapetrace: %llu events sent, %llu lost, to %s; drain thread %.1f ms CPU\n",
                 (unsigned long long)events_sent_, (unsigned long long)(drops_reported_ + unsent),
                 sink_->describe().c_str(), double(cpu_ns_) / 1e6);
}

void Drain::prepareForExec(uint32_t timeout_ms) {
  if (!thread_started_ || !sink_->mayAccept())
    return;
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  flush(timeout_ms);
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  TransportScope transport;
  sink_->release(left.count() > 0 ? unsigned(left.count()) : 0);
}

void Drain::abandonAfterFork() {
  thread_started_ = false;
  sink_->abandon();
}

} // namespace shapetrace::rt
