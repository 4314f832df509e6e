// Creation, destruction and registry of per-thread states (see thread_state.h).
#include "thread_state.h"

#include <new>
#include <sys/mman.h>

namespace shapetrace::rt {

constinit thread_local ThreadLocal t_local __attribute__((tls_model("initial-exec"))) = {};

uint64_t ringCapacityFor(uint64_t ring_bytes) {
  uint64_t capacity = 16;
  while (capacity * sizeof(Event) < ring_bytes)
    capacity <<= 1;
  return capacity;
}

ThreadState* createThreadState(uint64_t ring_bytes) {
  const uint64_t capacity = ringCapacityFor(ring_bytes);
  // The state sits in front of its ring in one mapping; the ring starts on its own page.
  const size_t header = (sizeof(ThreadState) + 4095) & ~size_t{4095};
  const size_t bytes = header + capacity * sizeof(Event);
  void* memory = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (memory == MAP_FAILED)
    return nullptr;
  auto* slots = reinterpret_cast<Event*>(static_cast<char*>(memory) + header);
  auto* state = new (memory) ThreadState(slots, capacity);
  state->mapping_bytes = bytes;
  return state;
}

void destroyThreadState(ThreadState* state) {
  const size_t bytes = state->mapping_bytes;
  state->~ThreadState();
  munmap(state, bytes);
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
