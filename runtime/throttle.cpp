// Throttling (see throttle.h).
#include "throttle.h"

#include <sys/mman.h>


namespace shapetrace::rt {
namespace {

std::atomic<uint64_t>* g_table = nullptr;
constexpr size_t kTableBytes = size_t{kThrottleIds} * sizeof(std::atomic<uint64_t>);

} // namespace

std::atomic<uint64_t>* throttleTable() { return g_table; }

bool makeThrottleTable() {
  void* memory = mmap(nullptr, kTableBytes, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (memory == MAP_FAILED)
    return false;
  g_table = static_cast<std::atomic<uint64_t>*>(memory);
  return true;
}

void clearThrottleTable() {
  if (g_table)
    madvise(g_table, kTableBytes, MADV_DONTNEED); // private anonymous: reads zeros again
}

uint64_t Throttler::callEnded(uint32_t function, uint64_t ns) {
  // Calls of a throttled function still end: those open at the throttle, and those that raced it.
  if (ns >= limits_.max_ns || function >= kThrottleIds ||
      table_[function].load(std::memory_order_relaxed) != 0)
    return 0;
  const auto it = short_calls_.try_emplace(function, 0).first;
  if (++it->second < limits_.calls)
    return 0;
  const uint64_t count = it->second;
  short_calls_.erase(it); // its later calls (already open, or racing the store) count no more
  table_[function].store(1, std::memory_order_relaxed);
  throttled_.push_back(function);
  return count;
}

std::vector<std::pair<uint32_t, uint64_t>> Throttler::throttledCalls() const {
  std::vector<std::pair<uint32_t, uint64_t>> out;
  for (uint32_t function : throttled_)
    out.emplace_back(function, table_[function].load(std::memory_order_relaxed) - 1);
  return out;
}

} // namespace shapetrace::rt
