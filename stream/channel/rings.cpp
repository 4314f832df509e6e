#include "channel/rings.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <new>
#include <sys/mman.h>
#include <unistd.h>

namespace shapetrace::channel {
namespace {

uint64_t slotOffset(uint64_t ring_events, uint32_t index) {
  return kRingsHeaderBytes + uint64_t(index) * (kRingControlBytes + ring_events * kRingEventBytes);
}

bool isPowerOfTwo(uint64_t value) { return value != 0 && (value & (value - 1)) == 0; }

} // namespace

bool createRings(uint32_t slot_count, uint64_t ring_events, uint64_t process_key,
                 RingsMemory& memory, std::string& error) {
  const int saved_errno = errno;
  const size_t bytes = ringsBytes(slot_count, ring_events);
  const int fd = ::memfd_create("shapetrace-rings", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  void* base = MAP_FAILED;
  // Pages are only made as threads write them; a freed ring's are given back (MADV_REMOVE).
  const bool ok = fd >= 0 && ::ftruncate(fd, off_t(bytes)) == 0 &&
                  ::fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) == 0 &&
                  (base = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE,
                                 fd, 0)) != MAP_FAILED;
  if (!ok) {
    error = std::string("cannot make the rings' shared memory: ") + std::strerror(errno);
    if (fd >= 0)
      ::close(fd);
    errno = saved_errno;
    return false;
  }
  auto* header = new (base) RingsHeader{};
  header->magic = kRingsMagic;
  header->version = kRingsVersion;
  header->slot_count = slot_count;
  header->ring_events = ring_events;
  header->process_key.store(process_key, std::memory_order_relaxed);
  header->clock_ns_per_tick_q32.store(int64_t{1} << 32, std::memory_order_relaxed);
  memory = {base, bytes, fd};
  errno = saved_errno;
  return true;
}

RingControl* ringControl(void* base, uint64_t ring_events, uint32_t index) {
  return reinterpret_cast<RingControl*>(static_cast<std::byte*>(base) +
                                        slotOffset(ring_events, index));
}

void* ringEvents(void* base, uint64_t ring_events, uint32_t index) {
  return static_cast<std::byte*>(base) + slotOffset(ring_events, index) + kRingControlBytes;
}

std::optional<RingsReader> RingsReader::open(void* base, size_t mapped_bytes, std::string& error) {
  if (mapped_bytes < kRingsHeaderBytes || mapped_bytes > kMaxRingsBytes) {
    error = "its rings' memory has " + std::to_string(mapped_bytes) + " bytes";
    return std::nullopt;
  }
  const auto* header = static_cast<const RingsHeader*>(base);
  // Each value read once, into our own copy.
  const uint64_t magic = header->magic;
  const uint32_t version = header->version;
  const uint32_t slot_count = header->slot_count;
  const uint64_t ring_events = header->ring_events;
  if (magic != kRingsMagic || version != kRingsVersion) {
    error = "its rings' memory has no valid header";
    return std::nullopt;
  }
  if (slot_count == 0 || slot_count > kMaxRingSlots || !isPowerOfTwo(ring_events) ||
      ring_events < kMinRingEvents || ring_events > kMaxRingEvents ||
      ringsBytes(slot_count, ring_events) != mapped_bytes) {
    error = "its rings' header (" + std::to_string(slot_count) + " rings of " +
            std::to_string(ring_events) + " events) does not match their " +
            std::to_string(mapped_bytes) + " bytes";
    return std::nullopt;
  }
  return RingsReader(base, slot_count, ring_events);
}

ArenaState RingsReader::state() const {
  auto* header = static_cast<RingsHeader*>(base_);
  ArenaState arena;
  arena.process_key = header->process_key.load(std::memory_order_acquire);
  arena.clock_ref_ticks = header->clock_ref_ticks.load(std::memory_order_relaxed);
  arena.clock_ref_ns = header->clock_ref_ns.load(std::memory_order_relaxed);
  arena.clock_ns_per_tick_q32 = header->clock_ns_per_tick_q32.load(std::memory_order_relaxed);
  arena.private_rings = header->private_rings.load(std::memory_order_acquire);
  return arena;
}

uint64_t RingsReader::forEachRing(const std::function<void(RingRemains&)>& on_ring,
                                  uint64_t max_events) const {
  auto* header = static_cast<RingsHeader*>(base_);
  uint64_t broken = 0;
  for (uint32_t slot = 0; slot < slot_count_; ++slot) {
    if (header->slot_state[slot].load(std::memory_order_acquire) != kSlotUsed)
      continue;
    RingControl* control = ringControl(base_, ring_events_, slot);
    RingRemains ring;
    ring.drain_flags = control->drain_flags.load(std::memory_order_acquire);
    if (ring.drain_flags & kThreadEndSent)
      continue;
    const uint64_t head = control->head.load(std::memory_order_acquire);
    const uint64_t tail = control->tail.load(std::memory_order_acquire);
    // More than it holds, a tail past the head, or more than the caller takes.
    if (head - tail > ring_events_ || head - tail > max_events) {
      ++broken;
      continue;
    }
    max_events -= head - tail;
    ring.slot = slot;
    ring.tid = control->tid.load(std::memory_order_relaxed);
    std::memcpy(ring.name, control->name, sizeof ring.name - 1);
    ring.start_ticks = control->start_ticks.load(std::memory_order_relaxed);
    ring.next_sequence = control->next_sequence.load(std::memory_order_relaxed);
    ring.events_sent = control->events_sent.load(std::memory_order_relaxed);
    ring.drops_reported = control->drops_reported.load(std::memory_order_relaxed);
    ring.unreported_drops = control->unreported_drops.load(std::memory_order_relaxed);
    // The events between tail and head, in ring order: at most two runs (before and after the
    // ring's end), each within the slot.
    const auto* events = static_cast<const std::byte*>(ringEvents(base_, ring_events_, slot));
    const uint64_t count = head - tail;
    const uint64_t first = tail & (ring_events_ - 1);
    const uint64_t before_end = std::min(count, ring_events_ - first);
    ring.events.resize(count * kRingEventBytes);
    if (count > 0) { // an empty vector's data() may be null, which memcpy must never get
      std::memcpy(ring.events.data(), events + first * kRingEventBytes,
                  before_end * kRingEventBytes);
      std::memcpy(ring.events.data() + before_end * kRingEventBytes, events,
                  (count - before_end) * kRingEventBytes);
    }
    on_ring(ring);
  }
  return broken;
}

} // namespace shapetrace::channel
