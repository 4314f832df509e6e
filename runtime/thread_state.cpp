// Creation, destruction and registry of per-thread states (see thread_state.h).
#include "thread_state.h"

#include <cstring>
#include <new>
#include <sys/mman.h>

namespace shapetrace::rt {

constinit thread_local ThreadLocal t_local __attribute__((tls_model("initial-exec"))) = {};

ThreadState* createThreadState(uint64_t ring_bytes) {
  RingMemory ring;
  if (!ringArena().allocate(ringCapacityFor(ring_bytes), ring))
    return nullptr;
  const size_t bytes = (sizeof(ThreadState) + 4095) & ~size_t{4095};
  void* memory = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (memory == MAP_FAILED) {
    ringArena().release(ring);
    return nullptr;
  }
  auto* state = new (memory) ThreadState(ring);
  state->mapping_bytes = bytes;
  return state;
}

void destroyThreadState(ThreadState* state) {
  const size_t bytes = state->mapping_bytes;
  const RingMemory ring = state->ring_memory;
  state->~ThreadState();
  ringArena().release(ring);
  munmap(state, bytes);
}

void ThreadState::describeRing() {
  channel::RingControl& control = ring.control();
  control.tid.store(tid, std::memory_order_relaxed);
  std::memcpy(control.name, name, sizeof control.name);
  control.start_ticks.store(start_ticks, std::memory_order_release);
}

bool giveOwnRingAfterFork(ThreadState* state) {
  RingMemory memory = state->ring_memory;
  if (memory.slot >= 0 && !ringArena().allocate(memory.capacity, memory)) {
    state->ring_memory = RingMemory{}; // the parent's: nothing of it is ours to free
    return false;
  }
  if (memory.slot < 0)
    ringArena().countPrivateRing(); // the parent's copy, now the child's: lost at a SIGKILL
  state->ring.~EventRing();
  new (&state->ring) EventRing(memory.control, memory.slots, memory.capacity);
  state->ring_memory = memory;
  return true;
}

void Registry::push(ThreadState* state) {
  ThreadState* old_head = head_.load(std::memory_order_relaxed);
  do
    state->next = old_head;
  while (!head_.compare_exchange_weak(old_head, state, std::memory_order_release,
                                      std::memory_order_relaxed));
}

void Registry::unlink(ThreadState* state, ThreadState* previous) {
  if (previous == nullptr) {
    ThreadState* expected = state;
    if (head_.compare_exchange_strong(expected, state->next, std::memory_order_acq_rel))
      return;
    // New states were pushed in front of it since the walk: find its predecessor again.
    previous = head_.load(std::memory_order_acquire);
    while (previous->next != state)
      previous = previous->next;
  }
  previous->next = state->next;
}

void Registry::resetToOnly(ThreadState* keep) {
  ThreadState* node = head_.load(std::memory_order_relaxed);
  while (node) {
    ThreadState* next = node->next;
    if (node != keep)
      destroyThreadState(node);
    node = next;
  }
  if (keep)
    keep->next = nullptr;
  head_.store(keep, std::memory_order_relaxed);
}

} // namespace shapetrace::rt
