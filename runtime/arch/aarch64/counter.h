// The AArch64 counter: the generic timer's virtual count, CNTVCT_EL0 (clock.h says how the runtime
// uses a counter). Linux lets user space read it and CNTFRQ_EL0, its frequency in Hz.
#pragma once

#include <cstdint>

namespace shapetrace::rt::arch {

// No `isb` before the read (it would wait for every earlier instruction to complete): as with
// `rdtsc` on x86-64, an event's time is only as precise as the call it marks.
[[gnu::always_inline]] inline uint64_t readCounter() {
  uint64_t ticks;
  asm volatile("mrs %0, cntvct_el0" : "=r"(ticks));
  return ticks;
}

// CNTFRQ_EL0: the counter's frequency in Hz, as the firmware programmed it (0 if it did not).
inline uint64_t counterFrequencyHz() {
  uint64_t hz;
  asm volatile("mrs %0, cntfrq_el0" : "=r"(hz));
  return hz;
}

} // namespace shapetrace::rt::arch
