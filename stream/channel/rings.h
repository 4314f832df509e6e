// The per-thread event rings in memory shared with the collector: what a process killed without
// warning (SIGKILL, a crash no handler saw) recorded since its drain thread's last cycle is still
// there for the collector to finish.
//
// As Perfetto's shared-memory buffers and LTTng's per-CPU rings do, the traced threads write their
// events straight into memory the service maps too. The runtime makes one arena per process: a
// memfd sealed against resizing, holding a RingsHeader and `slot_count` slots; each slot is a
// RingControl page and a ring of `ring_events` 16-byte events (runtime/ring.h). The memfd goes to
// the collector with the channel's Hello (control.h). While the process lives the collector never
// reads the rings: the process's drain thread turns them into stream items as before (the
// channel). When the process dies without closing its channel, the collector reads what the rings
// still hold, between each ring's tail (released by the drain) and head (published by the thread),
// and runs the drain's own per-thread code over it (runtime/thread_drain.h), so that the recording
// holds every event to the last one.
//
// Trust: the collector distrusts the arena as it does the channel (the process may be hostile). The
// geometry is read once, checked against the memfd's size and kept; every index is bounded by it;
// a ring whose indices say more than it can hold is skipped and counted; what a ring holds is
// copied out before it is parsed. The values of a ring's control page (sequence numbers, counts,
// the clock) become stream items the collector validates like any other.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace shapetrace::channel {

inline constexpr uint64_t kRingsMagic = 0x31474E52'54535453; // "STSTRNG1" little-endian
inline constexpr uint32_t kRingsVersion = 2; // 2: RingsHeader::private_rings
inline constexpr size_t kRingsHeaderBytes = 4096;
inline constexpr size_t kRingControlBytes = 4096;
inline constexpr size_t kRingEventBytes = 16;
// At most this many rings per process are shared (threads alive at once beyond it record into
// rings of their own memory, which a SIGKILL loses); each at most kMaxRingEvents events.
inline constexpr uint32_t kMaxRingSlots = 128;
inline constexpr uint64_t kMinRingEvents = 16;
// 64 MiB of events (SHAPETRACE_RING is 16 MiB by default): a dead process's ring is copied out
// whole, so this bounds what finishing one costs the collector (a larger ring is not shared).
inline constexpr uint64_t kMaxRingEvents = uint64_t{1} << 22;

// A slot's state in RingsHeader::slot_state.
enum SlotState : uint32_t { kSlotFree = 0, kSlotUsed = 1 };

// Ticks to CLOCK_MONOTONIC nanoseconds on one calibration segment: ns = ref_ns + (ticks -
// ref_ticks) * ns_per_tick_q32 / 2^32 (fixed point, 32 fractional bits). One 64x64->128 multiply:
// no value of the inputs can overflow it.
inline uint64_t segmentToNs(uint64_t ticks, uint64_t ref_ticks, uint64_t ref_ns,
                            int64_t ns_per_tick_q32) {
  const __int128 delta = int64_t(ticks - ref_ticks);
  const __int128 ns = __int128(ref_ns) + ((delta * ns_per_tick_q32) >> 32);
  return ns <= 0 ? 0 : uint64_t(ns);
}

struct RingsHeader {
  uint64_t magic;
  uint32_t version;
  uint32_t slot_count;
  uint64_t ring_events; // a power of two
  // The process's key in the stream (a failed exec gives it a new one) and the latest clock
  // segment (segmentToNs), written by the drain thread.
  std::atomic<uint64_t> process_key;
  std::atomic<uint64_t> clock_ref_ticks;
  std::atomic<uint64_t> clock_ref_ns;
  std::atomic<int64_t> clock_ns_per_tick_q32;
  std::atomic<uint32_t> slot_state[kMaxRingSlots];
  // Threads the process gave a ring of its own memory (the arena full, or rings too large for
  // it), counted from the process's start: their events die with the process. Zero means every
  // thread it ran had its ring here, so the collector can tell a dead process's recording is
  // complete (a hostile process that lies only makes its own recording claim completeness).
  std::atomic<uint64_t> private_rings;
};
static_assert(sizeof(RingsHeader) <= kRingsHeaderBytes);

// Flags of RingControl::drain_flags.
inline constexpr uint32_t kThreadStartSent = 1; // the ring's ThreadStart is in the channel
inline constexpr uint32_t kThreadEndSent = 2;   // and its ThreadEnd: nothing is left to finish

// A slot's first page. The indices are the ring's own (EventRing): free-running event counters.
struct RingControl {
  // Written by the thread: events published (release).
  alignas(64) std::atomic<uint64_t> head;
  // Written by the drain thread: events it is done with (release).
  alignas(64) std::atomic<uint64_t> tail;
  // Set when the ring is given to a thread.
  alignas(64) std::atomic<uint32_t> tid;
  char name[16];
  std::atomic<uint64_t> start_ticks;
  // The drain thread's progress through the ring as the stream knows it, written after each item
  // it sends and before the tail moves past the events the item carried.
  alignas(64) std::atomic<uint32_t> drain_flags;
  std::atomic<uint64_t> next_sequence;
  std::atomic<uint64_t> events_sent;
  std::atomic<uint64_t> drops_reported;
  std::atomic<uint64_t> unreported_drops;
};
static_assert(sizeof(RingControl) <= kRingControlBytes);
static_assert(std::atomic<uint64_t>::is_always_lock_free);

// The arena's size for `slot_count` slots of `ring_events` events.
constexpr uint64_t ringsBytes(uint32_t slot_count, uint64_t ring_events) {
  return kRingsHeaderBytes + uint64_t(slot_count) * (kRingControlBytes + ring_events * kRingEventBytes);
}
// The most a collector maps of one process's rings (address space, not memory: only the pages a
// process wrote exist).
inline constexpr uint64_t kMaxRingsBytes = ringsBytes(kMaxRingSlots, kMaxRingEvents);

// --- the process's side -----------------------------------------------------------------------
// A new arena: a memfd of ringsBytes() sealed against resizing, mapped shared, its header
// initialised. `fd` stays open (the caller keeps it to hand to each collector). False with
// `error` (nothing left open or mapped) on failure.
struct RingsMemory {
  void* base = nullptr;
  size_t bytes = 0;
  int fd = -1;
};
bool createRings(uint32_t slot_count, uint64_t ring_events, uint64_t process_key,
                 RingsMemory& memory, std::string& error);
inline RingsHeader* ringsHeader(void* base) { return static_cast<RingsHeader*>(base); }
// Slot `index`'s control page and events (index < slot_count).
RingControl* ringControl(void* base, uint64_t ring_events, uint32_t index);
void* ringEvents(void* base, uint64_t ring_events, uint32_t index);

// --- the collector's side ---------------------------------------------------------------------
// What one ring held, copied out of the arena: its control page's values and the raw 16-byte
// events between its tail and head.
struct RingRemains {
  uint32_t slot = 0;
  uint32_t tid = 0;
  char name[16] = {}; // NUL-terminated
  uint64_t start_ticks = 0;
  uint32_t drain_flags = 0;
  uint64_t next_sequence = 0;
  uint64_t events_sent = 0;
  uint64_t drops_reported = 0;
  uint64_t unreported_drops = 0;
  std::vector<std::byte> events; // a whole number of kRingEventBytes records
};

// A dead process's arena as a whole: its key and clock, read once (a torn clock segment would shift
// every timestamp the same way).
struct ArenaState {
  uint64_t process_key = 0;
  uint64_t clock_ref_ticks = 0;
  uint64_t clock_ref_ns = 0;
  int64_t clock_ns_per_tick_q32 = int64_t{1} << 32;
  uint64_t private_rings = 0;
  uint64_t toNs(uint64_t ticks) const {
    return segmentToNs(ticks, clock_ref_ticks, clock_ref_ns, clock_ns_per_tick_q32);
  }
};

class RingsReader {
public:
  // Reads the geometry once (the process may rewrite its header later) and checks it against the
  // mapping's size; nothing with `error` when it does not fit.
  static std::optional<RingsReader> open(void* base, size_t mapped_bytes, std::string& error);

  ArenaState state() const;
  // Calls on_ring for each used ring whose ThreadEnd was not sent, with what it holds (one ring's
  // copy at a time), as long as the events copied stay within `max_events` in all. Returns how
  // many rings were left out: their indices said they held more than they can, or they would
  // have gone past `max_events`.
  uint64_t forEachRing(const std::function<void(RingRemains&)>& on_ring,
                       uint64_t max_events) const;

private:
  RingsReader(void* base, uint32_t slot_count, uint64_t ring_events)
      : base_(base), slot_count_(slot_count), ring_events_(ring_events) {}

  void* base_;
  uint32_t slot_count_;
  uint64_t ring_events_;
};

} // namespace shapetrace::channel
