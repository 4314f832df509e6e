// The x86-64 counter: the time-stamp counter (clock.h says how the runtime uses a counter).
#pragma once

#include <cstdint>
#include <x86intrin.h>

namespace shapetrace::rt {

// Whether /proc/cpuinfo-style flags text declares an invariant TSC (constant_tsc and nonstop_tsc):
// only then do its ticks keep one rate across frequency changes and idle states.
bool cpuFlagsHaveInvariantTsc(const char* cpuinfo_text);

namespace arch {

// `rdtsc` without a fence: ordering against neighbouring instructions is not worth ~20 cycles per
// event, an event's time is only as precise as the call it marks.
[[gnu::always_inline]] inline uint64_t readCounter() {
  return __rdtsc();
}

} // namespace arch
} // namespace shapetrace::rt
