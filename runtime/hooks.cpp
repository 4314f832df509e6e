// The hot path: __shapetrace_enter / __shapetrace_exit / __shapetrace_unwind_exit.
//
// Enabled, on a thread that already has its ring, an event costs: one TLS block access, the
// enabled flag, the re-entry guard, rdtsc, a 16-byte store and a release store of the ring's head.
// No lock, syscall, allocation or atomic read-modify-write; errno is untouched (rdtsc and plain
// stores cannot set it; the rare paths save and restore it). Everything else is out of line.
//
// Balance rules (documented in docs/runtime.md): an exit is recorded exactly when its enter was
// recorded, whatever happened to the enabled flag in between. The thread's open calls are tracked as
// a stack of runs (ThreadLocal): entering while recording extends or opens a recorded run; entering
// while off inside tracked calls extends or opens a skipped run; entering while off with nothing
// open is not tracked at all (its exit finds no open call and is skipped, as its enter was).
#include "channel/futex.h"
#include "runtime.h"
#include "shapetrace/abi.h"
#include "throttle.h"
#include "value_text.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <sched.h>
#include <time.h>

namespace shapetrace::rt {
namespace {

[[gnu::always_inline]] inline void enterGuard(ThreadLocal& local) {
  local.busy = true;
  std::atomic_signal_fence(std::memory_order_seq_cst);
}
[[gnu::always_inline]] inline void leaveGuard(ThreadLocal& local) {
  std::atomic_signal_fence(std::memory_order_seq_cst);
  local.busy = false;
}

// A hook that interrupted a hook of the same thread (a signal handler), or ran on the drain thread.
[[gnu::noinline, gnu::cold]] void nestedEvent(ThreadLocal& local) {
  if (local.runtime_thread || !recordingEnabled())
    return;
  if (ThreadState* state = local.state)
    state->nested_drops.fetch_add(1, std::memory_order_relaxed);
  else
    g_hot.late_events.fetch_add(1, std::memory_order_relaxed);
}

// Waits for ring space in blocking mode, while the drain can still make room. True when space
// for `needed` slots appeared. Asleep on the ring's tail (a futex), which the drain wakes as it
// releases slots (Drain::wakeWaitingProducers), or when it stops waits (no collector alive, or
// none progressing within SHAPETRACE_EXIT_TIMEOUT_MS); each sleep is bounded by kWaitSliceNs
// anyway, so a wake that never comes costs that much, never a hang.
bool waitForSpace(ThreadState& state, uint64_t needed) {
  constexpr long kWaitSliceNs = 10'000'000;
  const int saved_errno = errno;
  bool ok = false;
  g_hot.waiting_producers.fetch_add(1, std::memory_order_seq_cst);
  const std::atomic<uint64_t>& tail = state.ring.control().tail;
  while (g_hot.blocking_wait.load(std::memory_order_seq_cst)) {
    const uint64_t seen = tail.load(std::memory_order_acquire);
    if (state.ring.freeSlots() >= needed) {
      ok = true;
      break;
    }
    channel::waitWhileAt(tail, seen, kWaitSliceNs);
  }
  g_hot.waiting_producers.fetch_sub(1, std::memory_order_relaxed);
  errno = saved_errno;
  return ok;
}

// After the event it delayed, the tracer's wait from `from` (ticks, after the event's timestamp)
// until now: the analyzer takes it out of the open calls' times. Room for it was waited for with
// the event's.
void pushTracerWait(ThreadState& state, uint64_t from) {
  state.ring.tryPushPair(Event{from, 0, EventKind(kTracerWaitMarker)},
                         Event{readTicks() - from, 0, EventKind(kTracerWaitLength)});
}

// One event (or one value's slots) not written: announced by a lost marker before the next one.
void countDrop(ThreadState& state, uint64_t ticks) {
  const uint64_t pending = state.ring.pending_drops.load(std::memory_order_relaxed);
  if (pending == 0)
    state.ring.first_drop_ticks.store(ticks, std::memory_order_relaxed);
  state.ring.pending_drops.store(pending + 1, std::memory_order_relaxed);
}

// The ring was full, or earlier drops must be announced first: write the lost marker(s) and the
// event, or count the event as dropped.
[[gnu::noinline]] void pushSlow(ThreadState& state, const Event& event) {
  uint64_t wait_from = 0; // ticks when the thread began to wait for space, 0 while it has not
  for (;;) {
    uint64_t pending = state.ring.pending_drops.load(std::memory_order_relaxed);
    while (pending > UINT32_MAX) { // announce in pieces the marker can carry
      const Event marker{state.ring.first_drop_ticks.load(std::memory_order_relaxed), UINT32_MAX,
                         EventKind(kLostMarker)};
      if (!state.ring.tryPush(marker))
        break;
      pending -= UINT32_MAX;
      state.ring.pending_drops.store(pending, std::memory_order_relaxed);
    }
    bool pushed = false;
    if (pending == 0) {
      pushed = state.ring.tryPush(event);
    } else if (pending <= UINT32_MAX) {
      const Event marker{state.ring.first_drop_ticks.load(std::memory_order_relaxed),
                         uint32_t(pending), EventKind(kLostMarker)};
      pushed = state.ring.tryPushPair(marker, event);
      if (pushed)
        state.ring.pending_drops.store(0, std::memory_order_relaxed);
    }
    if (pushed) {
      if (wait_from)
        pushTracerWait(state, wait_from);
      return;
    }
    if (!g_hot.blocking)
      break;
    if (!wait_from)
      wait_from = readTicks();
    // Room for the event (and the lost marker before it) and for the wait's marker after it.
    if (!waitForSpace(state, (pending ? 2 : 1) + 2))
      break;
  }
  // A value's slot carries the value where events carry their time.
  const bool value = (uint32_t(event.kind) & kMarkerKindMask) == kCallValueMarker;
  countDrop(state, value ? readTicks() : event.timestamp);
}

[[gnu::always_inline]] inline void push(ThreadState& state, const Event& event) {
  if (state.ring.pending_drops.load(std::memory_order_relaxed) == 0 && state.ring.tryPush(event))
    [[likely]]
    return;
  pushSlow(state, event);
}

[[gnu::noinline]] ThreadState* attachSlow(ThreadLocal& local) {
  const int saved_errno = errno;
  ThreadState* state = attachThread(local);
  errno = saved_errno;
  return state;
}

// Opens a call of the other kind than the innermost run (recording was switched inside calls).
[[gnu::noinline]] void openRun(ThreadLocal& local, bool recorded) {
  if (local.top_count == 0) {
    local.top_recorded = recorded;
  } else if (local.runs < ThreadLocal::kMaxRuns) {
    local.run_counts[local.runs++] = local.top_count;
    local.top_recorded = recorded;
    local.top_count = 0;
  } else {
    // 16 switches inside open calls: merge into the innermost run (documented limitation).
    recorded = local.top_recorded;
  }
  ++local.top_count;
}

// Closes the innermost open call; returns whether it was recorded.
[[gnu::always_inline]] inline bool closeCall(ThreadLocal& local) {
  const bool recorded = local.top_recorded;
  if (--local.top_count == 0 && local.runs) [[unlikely]] {
    local.top_count = local.run_counts[--local.runs];
    local.top_recorded = !recorded;
  }
  return recorded;
}

// Recording is off, or throttling is on (g_hot.record_every_call is clear): whether this call is
// left unrecorded. A throttled function's call is skipped and counted, unless skipping it would need
// a run the thread has no room for (kMaxRuns switches open: it is recorded); a call inside skipped
// calls with no run left for a recorded one is skipped, uncounted.
[[gnu::always_inline]] inline bool leftUnrecorded(const ThreadLocal& local, uint32_t function_id) {
  if (!recordingEnabled())
    return true;
  if (local.top_count != 0 && local.runs >= ThreadLocal::kMaxRuns)
    return !local.top_recorded;
  return g_hot.throttled != nullptr && skipThrottled(g_hot.throttled, function_id);
}

// A call not recorded: tracked only inside open calls, so that its exit is skipped too.
[[gnu::always_inline]] inline void skipEnter(ThreadLocal& local) {
  if (local.top_count == 0)
    return; // nothing open: the exit will find nothing open either
  if (local.top_recorded)
    openRun(local, false);
  else
    ++local.top_count;
}

[[gnu::always_inline]] inline void recordEnter(ThreadLocal& local, uint32_t function_id) {
  enterGuard(local);
  ThreadState* state = local.state;
  if (!state) [[unlikely]]
    state = attachSlow(local);
  if (state) [[likely]] {
    push(*state, Event{readTicks(), function_id, EventKind::Enter});
    if (local.top_recorded) [[likely]]
      ++local.top_count;
    else
      openRun(local, true);
  }
  leaveGuard(local);
}

// Out of line, entered by a tail call: the fast path keeps nothing alive across it.
[[gnu::noinline]] void enterOffOrThrottled(ThreadLocal& local, uint32_t function_id) {
  if (leftUnrecorded(local, function_id))
    return skipEnter(local);
  recordEnter(local, function_id);
}

[[gnu::always_inline]] inline void onEnter(uint32_t function_id) {
  ThreadLocal& local = t_local;
  if (local.busy) [[unlikely]]
    return nestedEvent(local);
  if (!g_hot.record_every_call.load(std::memory_order_relaxed)) [[unlikely]]
    return enterOffOrThrottled(local, function_id);
  recordEnter(local, function_id);
}

[[gnu::always_inline]] inline void onExit(uint32_t function_id, EventKind kind) {
  ThreadLocal& local = t_local;
  if (local.busy) [[unlikely]]
    return nestedEvent(local);
  if (local.top_count == 0) [[unlikely]]
    return;
  enterGuard(local);
  if (closeCall(local)) [[likely]]
    push(*local.state, Event{readTicks(), function_id, kind});
  leaveGuard(local);
}

// A string argument: its value slot (the address), a kCallValueText slot and the text, pushed
// together or counted as one dropped event (even in lossless mode: the text is an extra, and a
// lost marker says where it was). The text ends at a NUL (a const char*) or after `view_length`
// bytes (a std::string_view). SHAPETRACE_REDACT_ARGS: the text is never read.
[[gnu::noinline]] void pushString(ThreadState& state, const Event& value,
                                  std::optional<uint64_t> view_length) {
  const uint64_t address = value.timestamp;
  const size_t cap = flags().value_text_max;
  const TextRead text =
      flags().redact_args && address != 0 ? TextRead{0, wire::TextState::Redacted}
      : view_length ? readBytesFaultSafe(address, *view_length, cap, state.value_text)
                    : readTextFaultSafe(address, cap, state.value_text);
  const uint64_t slots = 2 + (text.length + kTextBytesPerSlot - 1) / kTextBytesPerSlot;
  auto fill = [&](Event& slot, uint64_t i) {
    if (i == 0) {
      slot = value;
    } else if (i == 1) {
      slot = Event{0, uint32_t(text.length),
                   EventKind(kCallValueText | uint32_t(text.state) << kCallValueDescriptorShift)};
    } else {
      const size_t from = (i - 2) * kTextBytesPerSlot;
      const size_t count = std::min<size_t>(kTextBytesPerSlot, text.length - from);
      char bytes[kTextBytesPerSlot] = {};
      std::memcpy(bytes, state.value_text + from, count);
      slot = Event{0, 0, EventKind(kCallValueTextBytes)};
      std::memcpy(&slot.timestamp, bytes, 8);
      std::memcpy(&slot.function_id, bytes + 8, 4);
    }
  };
  if (state.ring.pending_drops.load(std::memory_order_relaxed) != 0 ||
      !state.ring.tryPushMany(slots, fill))
    countDrop(state, readTicks());
}

// An argument (after its call's enter) or the return value (before its exit) of the innermost
// open call: written when that call was recorded, as its exit will be. `view_length`: the value
// is a std::string_view at `bits` (__shapetrace_value_view).
[[gnu::always_inline]] inline void onValue(uint32_t function_id, uint32_t descriptor,
                                           uint64_t bits,
                                           std::optional<uint64_t> view_length = std::nullopt) {
  ThreadLocal& local = t_local;
  if (local.busy) [[unlikely]]
    return nestedEvent(local);
  if (local.top_count == 0 || !local.top_recorded) [[unlikely]]
    return;
  enterGuard(local);
  const Event value{bits, function_id,
                    EventKind(kCallValueMarker | descriptor << kCallValueDescriptorShift)};
  if ((descriptor >> 8) == SHAPETRACE_VALUE_STRING) [[unlikely]]
    pushString(*local.state, value, view_length);
  else
    push(*local.state, value);
  leaveGuard(local);
}

// Open calls this thread tracks: its innermost run and the runs saved below it.
uint32_t trackedCalls(const ThreadLocal& local) {
  uint32_t calls = local.top_count;
  for (uint32_t i = 0; i < local.runs; ++i)
    calls += local.run_counts[i];
  return calls;
}

} // namespace

// The rare paths of setjmp and longjmp (jumps.cpp), here because they share the hot path's
// bookkeeping of open calls. The caller holds the guard (local.busy).
uint32_t trackedOpenCalls() { return trackedCalls(t_local); }

uint32_t openCallsForSetjmp() {
  ThreadLocal& local = t_local;
  const uint32_t calls = trackedCalls(local);
  // The thread's first setjmp while recording: from here on the drain keeps its open frames' ids.
  ThreadState* state = local.state;
  if (!state && recordingEnabled())
    state = attachSlow(local);
  if (state && !state->frames_tracked && state->ring.pending_drops.load() == 0 &&
      state->ring.tryPush(Event{readTicks(), 0, EventKind(kTrackFramesMarker)}))
    state->frames_tracked = true;
  return calls;
}

void abandonCalls(uint32_t target_calls, bool interrupted_a_hook) {
  ThreadLocal& local = t_local;
  ThreadState* state = local.state;
  if (interrupted_a_hook && state) {
    // The hook the jump leaves may have written its event without counting its call, or the
    // reverse: one event is uncertain, so the stream gets a gap here (consumers resynchronise).
    if (state->ring.pending_drops.load(std::memory_order_relaxed) == 0)
      state->ring.first_drop_ticks.store(readTicks(), std::memory_order_relaxed);
    state->ring.pending_drops.store(state->ring.pending_drops.load() + 1,
                                    std::memory_order_relaxed);
  }
  uint32_t recorded = 0;
  for (uint32_t calls = trackedCalls(local); calls > target_calls; --calls)
    recorded += closeCall(local) ? 1 : 0;
  if (recorded && state)
    push(*state, Event{readTicks(), recorded, EventKind(kAbandonMarker)});
}

} // namespace shapetrace::rt

using shapetrace::EventKind;

SHAPETRACE_EXPORT void __shapetrace_enter(uint32_t function_id) {
  shapetrace::rt::onEnter(function_id);
}
SHAPETRACE_EXPORT void __shapetrace_exit(uint32_t function_id) {
  shapetrace::rt::onExit(function_id, EventKind::Exit);
}
SHAPETRACE_EXPORT void __shapetrace_unwind_exit(uint32_t function_id) {
  shapetrace::rt::onExit(function_id, EventKind::UnwindExit);
}
SHAPETRACE_EXPORT void __shapetrace_value(uint32_t function_id, uint32_t descriptor, uint64_t bits) {
  shapetrace::rt::onValue(function_id, descriptor, bits);
}
SHAPETRACE_EXPORT void __shapetrace_value_view(uint32_t function_id, uint32_t descriptor,
                                               uint64_t address, uint64_t length) {
  shapetrace::rt::onValue(function_id, descriptor, address, length);
}
