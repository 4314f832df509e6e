// Throttling (SHAPETRACE_THROTTLE=calls:ns, docs/runtime.md): a function is no longer recorded
// once `calls` of its calls, over all threads, each lasted less than `ns`, as TAU throttles a
// function after 100,000 calls of under 10 us each.
//
// The hooks only read one word per function (g_hot.throttled, below) and only when throttling is
// on: while it is off they read g_hot.record_every_call, set exactly when recording is on, in place
// of the recording flag (hooks.cpp), so the hot path is what it was. The calls are timed on the
// drain thread from the events it drains (ThreadDrain's first look at each slot), which throttles
// a function by writing its word, with a mark in the batch of the thread whose call reached the
// count (EventBatch.throttles); the calls the hooks skip are counted in the same word and sent in
// the ProcessEnd (throttledCalls).
#pragma once

#include "flags.h"

#include <atomic>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace shapetrace::rt {

// Function ids at or above this are never throttled (the table is reserved, not committed: 8 bytes
// of it per id a throttled or skipped function uses).
inline constexpr uint32_t kThrottleIds = 1u << 22;

// Per function id: 0 while it is recorded; once throttled, 1 + the calls not recorded since.
// nullptr while throttling is off.
std::atomic<uint64_t>* throttleTable();
// Reserves the table (at start, when throttling is on); false when it cannot be mapped.
bool makeThrottleTable();
// A fork child throttles afresh: every function recorded again, no count.
void clearThrottleTable();

// Whether the hooks skip this call of `function` (throttled), counting it.
inline bool skipThrottled(std::atomic<uint64_t>* table, uint32_t function) {
  if (function >= kThrottleIds)
    return false;
  std::atomic<uint64_t>& word = table[function];
  if (word.load(std::memory_order_relaxed) == 0)
    return false;
  word.fetch_add(1, std::memory_order_relaxed);
  return true;
}

// The drain's side: counts short calls per function and throttles.
class Throttler {
public:
  Throttler(ThrottleLimits limits, std::atomic<uint64_t>* table) : limits_(limits), table_(table) {}
  // A recorded call of `function` ended after `ns`. Returns the count of its short calls when this
  // call throttled it, 0 otherwise.
  uint64_t callEnded(uint32_t function, uint64_t ns);
  // (function id, calls not recorded) of every function throttled, in the order throttled.
  std::vector<std::pair<uint32_t, uint64_t>> throttledCalls() const;

private:
  ThrottleLimits limits_;
  std::atomic<uint64_t>* table_;
  std::unordered_map<uint32_t, uint64_t> short_calls_; // of functions not throttled yet
  std::vector<uint32_t> throttled_;
};

} // namespace shapetrace::rt
