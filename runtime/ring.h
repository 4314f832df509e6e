// The per-thread event ring: a bounded single-producer/single-consumer queue of 16-byte Events.
//
// The producer is the traced thread (the hooks), the consumer the drain thread. Shaped like
// folly::ProducerConsumerQueue, with two changes that the hot path needs: the producer keeps its own
// copy of the write index and a cached copy of the read index, so a push touches only the
// producer's cache line plus one release store (no atomic read-modify-write, no load of the
// consumer's line unless the ring looks full); and the consumer reads in bulk, in place
// (`readable()` + `at()` + `release()`), so it never copies events twice. Capacity is a power of two
// and every slot is usable (indices are free-running 64-bit counters, never wrapped).
//
// Who may call what: tryPush/tryPushPair/freeSlots only from the one producer thread; readable/at/
// release only from the one consumer thread. Construction and destruction while neither runs.
#pragma once

#include "channel/rings.h"
#include "wire/event.h"

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace shapetrace::rt {

class EventRing {
public:
  // `slots` must hold `capacity` events, capacity a power of two >= 2. The ring does not own them.
  // Its indices are in `control` (a slot of the arena shared with the collector, see
  // channel/rings.h), or in the ring itself when none is given.
  EventRing(channel::RingControl* control, Event* slots, uint64_t capacity)
      : control_(control ? control : &own_control_), slots_(slots), mask_(capacity - 1) {}
  EventRing(Event* slots, uint64_t capacity) : EventRing(nullptr, slots, capacity) {}
  EventRing(const EventRing&) = delete;
  EventRing& operator=(const EventRing&) = delete;

  uint64_t capacity() const { return mask_ + 1; }

  // --- producer side ------------------------------------------------------------------------
  // Appends one event; false (and nothing written) when the ring is full.
  bool tryPush(const Event& event) {
    const uint64_t head = head_local_;
    if (head - cached_tail_ > mask_ && !refreshFree(1)) [[unlikely]]
      return false;
    slots_[head & mask_] = event;
    head_local_ = head + 1;
    control_->head.store(head + 1, std::memory_order_release);
    return true;
  }

  // Appends two events that the consumer must see together (a marker and its payload or the
  // event that follows it), or neither.
  bool tryPushPair(const Event& first, const Event& second) {
    const uint64_t head = head_local_;
    if (head - cached_tail_ + 1 > mask_ && !refreshFree(2))
      return false;
    slots_[head & mask_] = first;
    slots_[(head + 1) & mask_] = second;
    head_local_ = head + 2;
    control_->head.store(head + 2, std::memory_order_release);
    return true;
  }

  // Appends `count` slots (at most the capacity) that the consumer must see together, or none:
  // `fill(slot, i)` writes the i-th in place.
  template <typename Fill> bool tryPushMany(uint64_t count, Fill&& fill) {
    const uint64_t head = head_local_;
    if (head - cached_tail_ + count > capacity() && !refreshFree(count))
      return false;
    for (uint64_t i = 0; i < count; ++i)
      fill(slots_[(head + i) & mask_], i);
    head_local_ = head + count;
    control_->head.store(head + count, std::memory_order_release);
    return true;
  }

  // Free slots as the producer can prove them now (reads the consumer's index).
  uint64_t freeSlots() {
    cached_tail_ = control_->tail.load(std::memory_order_acquire);
    return capacity() - (head_local_ - cached_tail_);
  }

  // Forgets everything, producer and consumer state alike. Only when no other thread uses the ring
  // (in a forked child, where the consumer thread no longer exists).
  void resetUnsynchronized() {
    head_local_ = cached_tail_ = 0;
    control_->head.store(0, std::memory_order_relaxed);
    control_->tail.store(0, std::memory_order_relaxed);
  }

  // --- consumer side ------------------------------------------------------------------------
  // The index one past the last event published so far, and the first one not yet released:
  // events [released(), readable()) may be read with at().
  uint64_t readable() const { return control_->head.load(std::memory_order_acquire); }
  uint64_t released() const { return control_->tail.load(std::memory_order_relaxed); }
  const Event& at(uint64_t index) const { return slots_[index & mask_]; }
  // The consumer may rewrite a slot it has not released (the producer writes only free slots).
  Event& slot(uint64_t index) { return slots_[index & mask_]; }
  // Gives slots up to `index` (exclusive) back to the producer.
  void release(uint64_t index) { control_->tail.store(index, std::memory_order_release); }
  // Where the indices live (what the drain tells the collector about the ring goes there too).
  channel::RingControl& control() { return *control_; }

private:
  bool refreshFree(uint64_t needed) {
    cached_tail_ = control_->tail.load(std::memory_order_acquire);
    return capacity() - (head_local_ - cached_tail_) >= needed;
  }

  // Read by both sides and written by neither after construction: a line of its own, so that the
  // consumer reading it per event never pulls the producer's line (written on every push) across
  // cores. Sharing it cost the drain about a third of its time (measured with perf; BENCHMARKS.md).
  channel::RingControl* const control_;
  Event* const slots_;
  const uint64_t mask_;

public:
  // Producer-owned drop accounting, kept here so the hot path touches one producer cache line
  // (see ThreadState). Atomic only so that the drain may read it at thread or process end:
  // relaxed loads and stores, never a read-modify-write.
  alignas(64) std::atomic<uint64_t> pending_drops{0};
  std::atomic<uint64_t> first_drop_ticks{0};

private:
  // The producer's private indices, on the producer's line.
  uint64_t head_local_ = 0;
  uint64_t cached_tail_ = 0;
  // The indices when no shared control page was given: head written by the producer, read by
  // the consumer; tail written by the consumer, read by the producer only when the ring looks
  // full (each on a line of its own).
  channel::RingControl own_control_{};
};

} // namespace shapetrace::rt
