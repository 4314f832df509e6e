// Waiting for a 64-bit index in memory shared between threads or processes to move: a futex on
// its low 32 bits (a process-shared one: the index may be in a mapping two processes share, as a
// ring's tail is, channel/rings.h and channel.h). Whoever moves the index wakes the waiters.
//
// Both keep errno as they found it (the runtime calls them inside the program).
#pragma once

#include <atomic>
#include <bit>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

namespace shapetrace::channel {

static_assert(std::endian::native == std::endian::little,
              "a futex on an index's low 32 bits needs them at the index's address");

// Sleeps while the low 32 bits of `index` are `seen`, at most `timeout_ns` (a wake, a change
// already made, or a signal end it earlier: the caller looks again).
inline void waitWhileAt(const std::atomic<uint64_t>& index, uint64_t seen, long timeout_ns) {
  const int saved_errno = errno;
  const timespec timeout{timeout_ns / 1000000000, timeout_ns % 1000000000};
  ::syscall(SYS_futex, reinterpret_cast<const uint32_t*>(&index), FUTEX_WAIT, uint32_t(seen),
            &timeout, nullptr, 0);
  errno = saved_errno;
}

// Wakes everyone waiting for `index` to move (after it moved).
inline void wakeWaiters(const std::atomic<uint64_t>& index) {
  const int saved_errno = errno;
  ::syscall(SYS_futex, reinterpret_cast<const uint32_t*>(&index), FUTEX_WAKE, INT_MAX, nullptr,
            nullptr, 0);
  errno = saved_errno;
}

} // namespace shapetrace::channel
