// The process's side of the rings shared with the collector (channel/rings.h): one arena per
// process, made when its stream goes to a collector, from which each new thread takes its ring.
//
// A thread whose ring is in the arena loses nothing when the process dies without warning: the
// collector finishes the ring. When the arena is full (more threads alive at once than it has
// slots), could not be made, or recording goes to a directory (SHAPETRACE_OUTPUT), a thread's ring
// is in memory of its own, as before.
//
// The arena's descriptor is kept (above the program's usual range, CLOEXEC, marked as the
// runtime's) to hand the arena to each collector that connects. The program may take it away like
// any runtime descriptor: the collectors that have the arena keep it; later ones get none.
//
// A fork child never writes into its parent's arena: it unmaps it (the pages stay the parent's),
// makes its own, and gives the forking thread a new ring there.
#pragma once

#include "channel/rings.h"
#include "wire/event.h"

#include <cstddef>
#include <atomic>
#include <cstdint>
#include <mutex>

namespace shapetrace::rt {

// Where one thread's ring lives.
struct RingMemory {
  channel::RingControl* control = nullptr; // nullptr: the ring's own indices (not shared)
  Event* slots = nullptr;
  uint64_t capacity = 0;
  int32_t slot = -1; // the arena's slot, -1 when the ring is in memory of its own
  void* own_base = nullptr; // that memory
  size_t own_bytes = 0;
};

class RingArena {
public:
  static constexpr uint32_t kSlots = 64;

  // Makes the arena for rings of `capacity` events (none when too large). False with a warning
  // when it cannot: rings are then each in memory of their own.
  bool create(uint64_t capacity, uint64_t process_key);
  // A ring of `capacity` events for a new thread: a free slot of the arena when it has one and
  // rings of that size, else memory of its own (counted in the arena's header, so that the
  // collector knows a crash lost events). False when memory is exhausted. Async-signal-safe.
  bool allocate(uint64_t capacity, RingMemory& ring);
  // A ring of its own memory the process keeps (the forking thread's, in a fork child): counted
  // as allocate() counts one.
  void countPrivateRing();
  // Gives a ring's memory back (its pages freed). Not in a fork child for its parent's rings.
  void release(const RingMemory& ring);
  // Fork child: the parent's arena is not ours. Unmapped without touching its pages; its
  // descriptor closed. Rings the child had from it are gone with it.
  void abandonAfterFork();

  // A copy of the descriptor to hand to a collector (the caller closes it) and the arena's size;
  // -1 when there is none (never made, or the program took the descriptor). Drain thread.
  int duplicateDescriptor(size_t& bytes);
  // The program is about to close or replace a runtime descriptor: let ours go.
  void dropDescriptor();

  // What the collector needs to convert the rings' ticks and name the process (drain thread).
  void publishProcessKey(uint64_t key);
  void publishClock(uint64_t ref_ticks, uint64_t ref_ns, int64_t ns_per_tick_q32);

private:
  // Rings given in memory of their own since the process started, the arena's or not (a thread
  // that started before the arena was made has one too): copied into the arena's header when it
  // is made.
  std::atomic<uint64_t> private_rings_{0};
  void* base_ = nullptr;
  size_t bytes_ = 0;
  uint64_t capacity_ = 0;
  // The descriptor, which a program thread may drop (fd_guard) while the drain copies it.
  std::mutex fd_mutex_;
  int fd_ = -1;
  uint64_t fd_inode_ = 0;
  uint64_t fd_device_ = 0;
};

RingArena& ringArena();

} // namespace shapetrace::rt
