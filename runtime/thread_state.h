// Per-thread tracing state: the thread-local block the hooks touch, the ring each thread owns, and
// the registry through which the drain thread finds every ring.
//
// Ownership: a ThreadState is created by its thread's first event (mmap, so it is safe in a signal
// handler too and its ring pages are only committed as they are used), published in the registry
// with one compare-and-swap, and destroyed by the drain thread once the thread has exited and
// everything it recorded has left the process.
#pragma once

#include "ring.h"
#include "ring_arena.h"
#include "value_text.h"
#include "wire/items.h"

#include <atomic>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace shapetrace::rt {

// Ring entries that are not events. Their `kind` never collides with EventKind; the drain turns
// them into stream items in ring order, or into marks of the batch (annotations, tracer waits)
// placed exactly between the right two events.
enum MarkerKind : uint32_t {
  // function_id = number of events dropped (<= UINT32_MAX), timestamp = ticks of the first one.
  kLostMarker = 0x100,
  // function_id = interned key, timestamp = ticks; the next slot is kAnnotationValue.
  kAnnotationMarker = 0x101,
  // timestamp = the int64 value's bits.
  kAnnotationValue = 0x102,
  // function_id = interned name, timestamp = ticks.
  kThreadNameMarker = 0x103,
  // The thread's first setjmp (jumps.cpp): from here on the drain keeps the ids of the thread's
  // open recorded calls, which a longjmp may abandon.
  kTrackFramesMarker = 0x104,
  // A longjmp jumped over function_id recorded frames at timestamp (ticks): the drain sends one
  // AbandonedExit per frame, innermost first, with the ids it kept.
  kAbandonMarker = 0x105,
  // Written by the drain over an exit it does not send: the exit of a call entered before the
  // process's current key began (the image went on after a failed exec; its earlier calls are
  // the previous key's).
  kSkippedExitMarker = 0x106,
  // The thread waited for ring space (lossless recording) from timestamp (ticks), after the event
  // before the marker; the next slot is kTracerWaitLength. The drain puts it in the batch.
  kTracerWaitMarker = 0x107,
  // timestamp = the wait's length in ticks.
  kTracerWaitLength = 0x108,
  // An argument or return value (__shapetrace_value): timestamp = its 64 bits, function_id = the
  // function, and abi.h's descriptor (position | type << 8) in the kind's upper 16 bits. The drain
  // puts it in the batch, at its place among the events.
  kCallValueMarker = 0x109,
  // After a kCallValueMarker of a string (SHAPETRACE_VALUE_STRING): function_id = the text's
  // length in bytes, wire::TextState in the kind's upper 16 bits; the text follows in
  // kCallValueTextBytes slots, 12 bytes each (timestamp then function_id), all pushed together.
  kCallValueText = 0x10a,
  kCallValueTextBytes = 0x10b,
};
inline constexpr uint32_t kMarkerKindMask = 0xffff;
inline constexpr uint32_t kCallValueDescriptorShift = 16;
inline constexpr uint32_t kTextBytesPerSlot = 12;
// A string value's slots fit the smallest ring (256).
static_assert(2 + kValueTextHardMax / kTextBytesPerSlot + 1 <= 256);

// What only the drain thread reads and writes.
struct DrainCursor {
  static constexpr uint64_t kNoIndex = UINT64_MAX;
  bool start_sent = false;
  uint64_t next_sequence = 0;   // batches sent so far
  uint64_t events_sent = 0;
  uint64_t drops_reported = 0;  // events announced in Gap items
  uint64_t unreported_drops = 0;
  uint64_t end_target = 0;      // the ring's head when the image began to end (Drain::finishImage)

  // Every ring slot is looked at once, the first time the drain reads it (slots before
  // applied_up_to were), so that a batch sent again after a failed send does not count its events
  // twice in what follows.
  uint64_t applied_up_to = 0;
  // The time of the last event put in a batch: the place in time of a batch that carries only a
  // call's values (ThreadDrain::sendBatch).
  uint64_t last_event_ns = 0;
  // Frames, after kTrackFramesMarker: the ids of the thread's open recorded calls entered since
  // (after a gap: since the gap), innermost last.
  bool tracking = false;
  std::vector<uint32_t> open_frames;
  // After a failed exec the process goes on under a new key (Drain::continueAfterFailedExec): the
  // calls open until then are the previous key's, so an exit that would close more calls than
  // were entered since is not sent (kSkippedExitMarker). `continued_depth`: calls open since.
  bool continuing = false;
  uint64_t continued_depth = 0;
  // The kAbandonMarker being turned into events: its ring index, the ids it abandons (innermost
  // first), how many of them were sent, and how many wait in the batch being made. The marker is
  // released (and forgotten) only with the batch that carries its last exit.
  uint64_t abandon_index = kNoIndex;
  std::vector<uint32_t> abandoned;
  size_t abandoned_sent = 0;
  size_t abandoned_in_batch = 0;
  // Where recording starts again after a detached stretch (Drain::attach): before the event at
  // `index` the drain sends a Gap of 0 events from the detach to the attach, so that consumers
  // end the calls they hold open there (their ends, and calls open since, were not recorded).
  struct StretchStart {
    uint64_t index;
    uint64_t detached_ns;
    uint64_t attached_ns;
  };
  // A vector: unlike a deque it allocates nothing until used (a state is made in a signal handler
  // too). Rarely more than one entry.
  std::vector<StretchStart> stretch_starts;
  // Throttling (throttle.h): the thread's open recorded calls (function id, enter ticks), innermost
  // last, and the marks of throttles decided at an event of the ring (its index) not sent yet.
  std::vector<std::pair<uint32_t, uint64_t>> timed_calls;
  struct ThrottleMark {
    uint64_t index;
    wire::Throttle mark;
  };
  std::vector<ThrottleMark> throttle_marks;
};

struct ThreadState {
  EventRing ring;
  // Events dropped since the last lost marker, and the ticks of the first: ring.pending_drops and
  // ring.first_drop_ticks (on the producer's cache line).
  // Hooks that ran while this thread was inside a hook (a signal handler interrupting one): they
  // cannot touch the ring, so they are counted here (a rare path; the one atomic RMW of a producer).
  std::atomic<uint64_t> nested_drops{0};
  // Set by the thread-exit destructor after the thread's last event.
  std::atomic<bool> finished{false};
  // The thread wrote kTrackFramesMarker (producer only).
  bool frames_tracked = false;

  uint32_t tid = 0;
  uint64_t start_ticks = 0;
  char name[16] = {};
  size_t mapping_bytes = 0;
  RingMemory ring_memory; // where the ring's events and indices are (ring_arena.h)
  ThreadState* next = nullptr; // registry link, see Registry
  DrainCursor drain;
  // The text of a string argument as it is read (value_text.cpp): its page is committed only in
  // threads that record one.
  char value_text[kValueTextHardMax + 1] = {};

  explicit ThreadState(const RingMemory& memory)
      : ring(memory.control, memory.slots, memory.capacity), ring_memory(memory) {}

  // Tells the collector whose ring it is (tid, name, start_ticks), for a crash's finish.
  void describeRing();
};

// The thread-local block of the hot path, in one initial-exec TLS slot.
//
// Open calls form a stack of runs: consecutive calls that were all recorded, or all entered while
// recording was off inside a recorded call. Only the innermost run's length and kind are needed on
// the hot path; outer runs exist only when recording was switched inside open calls (see hooks.cpp).
struct ThreadLocal {
  static constexpr uint32_t kMaxRuns = 16;
  ThreadState* state;
  uint32_t top_count;      // open calls in the innermost run (0: no open call is tracked)
  bool top_recorded;       // whether the innermost run's calls were recorded
  bool busy;               // inside a hook or runtime API call on this thread (re-entry guard)
  bool runtime_thread;     // the drain thread: its hooks are ignored, never counted
  bool exited;             // the thread-exit destructor ran: no new state
  uint32_t runs;           // outer runs saved in run_counts (kinds alternate)
  uint32_t run_counts[kMaxRuns];

  void resetCalls() {
    top_count = 0;
    top_recorded = false;
    runs = 0;
  }
};
extern constinit thread_local ThreadLocal t_local __attribute__((tls_model("initial-exec")));

// Ring capacity in events for a requested size in bytes: next power of two, at least 16.
inline uint64_t ringCapacityFor(uint64_t ring_bytes) {
  uint64_t capacity = 16;
  while (capacity * sizeof(Event) < ring_bytes)
    capacity <<= 1;
  return capacity;
}
// Maps a new state and takes a ring for it (ring_arena.h); nullptr when memory is exhausted.
// Async-signal-safe.
ThreadState* createThreadState(uint64_t ring_bytes);
void destroyThreadState(ThreadState* state);
// Fork child, after the parent's arena was abandoned: the forking thread's state gets a ring of
// the child's own, empty (a ring of its own memory is kept and emptied). False when memory is
// exhausted (the state is then unusable).
bool giveOwnRingAfterFork(ThreadState* state);

// The list of live states. Producers only ever push at the head (lock-free); only the drain
// thread walks the list and unlinks from it, so a node's `next` is written by one thread only.
class Registry {
public:
  void push(ThreadState* state);
  ThreadState* head() const { return head_.load(std::memory_order_acquire); }
  // Drain thread only. `previous` is the node before `state` in the last walk (nullptr: head).
  void unlink(ThreadState* state, ThreadState* previous);
  // Fork child only: drops every node except `keep` (the forking thread's, may be nullptr) without
  // freeing their memory's contents beyond an munmap.
  void resetToOnly(ThreadState* keep);

private:
  std::atomic<ThreadState*> head_{nullptr};
};

} // namespace shapetrace::rt
