// The rings shared with the collector, the process's side (see ring_arena.h).
#include "ring_arena.h"

#include "fd_guard.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <new>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace shapetrace::rt {

RingArena& ringArena() {
  static RingArena* arena = new RingArena; // never destroyed: threads record during exit
  return *arena;
}

bool RingArena::create(uint64_t capacity, uint64_t process_key) {
  if (capacity < channel::kMinRingEvents || capacity > channel::kMaxRingEvents)
    return false;
  TransportScope scope; // the descriptor is the runtime's
  channel::RingsMemory memory;
  std::string error;
  if (!channel::createRings(kSlots, capacity, process_key, memory, error)) {
    std::fprintf(stderr, "shapetrace: %s; a crash loses what the rings hold\n", error.c_str());
    return false;
  }
  const int saved_errno = errno;
  // Out of the range programs close, as the control socket is.
  if (const int high = ::fcntl(memory.fd, F_DUPFD_CLOEXEC, lowestRuntimeFd()); high >= 0) {
    ::close(memory.fd);
    memory.fd = high;
  }
  markRuntimeDescriptor(memory.fd);
  struct stat info {};
  ::fstat(memory.fd, &info);
  errno = saved_errno;
  std::lock_guard lock(fd_mutex_);
  fd_ = memory.fd;
  fd_inode_ = info.st_ino;
  fd_device_ = info.st_dev;
  capacity_ = capacity;
  bytes_ = memory.bytes;
  base_ = memory.base;
  // After base_: a thread allocating now either saw base_ and counts in the header itself, or
  // counted before this load. Counted twice at worst, which only costs the claim of completeness.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  channel::ringsHeader(base_)->private_rings.fetch_add(private_rings_.load(),
                                                       std::memory_order_release);
  return true;
}

bool RingArena::allocate(uint64_t capacity, RingMemory& ring) {
  ring = RingMemory{};
  ring.capacity = capacity;
  if (base_ && capacity == capacity_) {
    channel::RingsHeader* header = channel::ringsHeader(base_);
    for (uint32_t slot = 0; slot < kSlots; ++slot) {
      uint32_t expected = channel::kSlotFree;
      if (!header->slot_state[slot].compare_exchange_strong(expected, channel::kSlotUsed,
                                                            std::memory_order_acq_rel))
        continue;
      // A released slot's pages were removed: its control page reads as zeros again.
      ring.control = channel::ringControl(base_, capacity_, slot);
      ring.slots = static_cast<Event*>(channel::ringEvents(base_, capacity_, slot));
      ring.slot = int32_t(slot);
      return true;
    }
  }
  const size_t bytes = capacity * sizeof(Event);
  void* memory = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (memory == MAP_FAILED)
    return false;
  countPrivateRing();
  ring.slots = static_cast<Event*>(memory);
  ring.own_base = memory;
  ring.own_bytes = bytes;
  return true;
}

void RingArena::countPrivateRing() {
  private_rings_.fetch_add(1);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (base_)
    channel::ringsHeader(base_)->private_rings.fetch_add(1, std::memory_order_release);
}

void RingArena::release(const RingMemory& ring) {
  if (ring.slot < 0) {
    if (ring.own_base)
      ::munmap(ring.own_base, ring.own_bytes);
    return;
  }
  if (!base_)
    return;
  // The control page and the events, freed. The next thread of the slot must start from zeroed
  // indices, and madvise is only advice: qemu-user ignores MADV_REMOVE and still returns 0, so
  // the next thread found the last one's indices (its events were never read, and its unsent
  // count wrapped around). The control page is zeroed by hand; its users are gone (the slot is
  // still marked used).
  std::memset(static_cast<void*>(ring.control), 0, channel::kRingControlBytes);
  const int saved_errno = errno;
  ::madvise(ring.control, channel::kRingControlBytes + capacity_ * sizeof(Event), MADV_REMOVE);
  errno = saved_errno;
  channel::ringsHeader(base_)->slot_state[ring.slot].store(channel::kSlotFree,
                                                            std::memory_order_release);
}

void RingArena::abandonAfterFork() {
  // The mutex may have been held by a thread of the parent (the drain copying the descriptor):
  // made anew, as nothing else runs in the child yet.
  new (&fd_mutex_) std::mutex;
  if (base_)
    ::munmap(base_, bytes_);
  base_ = nullptr;
  bytes_ = 0;
  capacity_ = 0;
  private_rings_.store(0); // the parent's threads are not the child's
  if (fd_ >= 0) {
    TransportScope scope;
    const int saved_errno = errno;
    ::close(fd_);
    errno = saved_errno;
  }
  fd_ = -1;
}

int RingArena::duplicateDescriptor(size_t& bytes) {
  std::lock_guard lock(fd_mutex_);
  if (fd_ < 0)
    return -1;
  const int saved_errno = errno;
  struct stat info {};
  if (::fstat(fd_, &info) != 0 || info.st_ino != fd_inode_ || info.st_dev != fd_device_) {
    fd_ = -1; // the program took the number (a raw close, then a new descriptor): never closed
    errno = saved_errno;
    return -1;
  }
  const int copy = ::fcntl(fd_, F_DUPFD_CLOEXEC, lowestRuntimeFd());
  if (copy >= 0)
    markRuntimeDescriptor(copy);
  errno = saved_errno;
  bytes = bytes_;
  return copy;
}

void RingArena::dropDescriptor() {
  std::lock_guard lock(fd_mutex_);
  if (fd_ >= 0) {
    const int saved_errno = errno;
    ::close(fd_);
    errno = saved_errno;
  }
  fd_ = -1;
}

void RingArena::publishProcessKey(uint64_t key) {
  if (base_)
    channel::ringsHeader(base_)->process_key.store(key, std::memory_order_release);
}

void RingArena::publishClock(uint64_t ref_ticks, uint64_t ref_ns, int64_t ns_per_tick_q32) {
  if (!base_)
    return;
  channel::RingsHeader* header = channel::ringsHeader(base_);
  header->clock_ref_ticks.store(ref_ticks, std::memory_order_relaxed);
  header->clock_ref_ns.store(ref_ns, std::memory_order_relaxed);
  header->clock_ns_per_tick_q32.store(ns_per_tick_q32, std::memory_order_release);
}

} // namespace shapetrace::rt
