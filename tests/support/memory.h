// The process's peak resident memory, for tests that bound what a crafted input may cost: a bound
// on memory, unlike one on time, does not depend on how fast or loaded the machine is.
#pragma once

#include <cstdint>
#include <sys/resource.h>

namespace shapetrace::testing {

// The peak resident set of this process so far, in MiB (getrusage's ru_maxrss is in KiB).
inline int64_t peakRssMib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<int64_t>(usage.ru_maxrss) / 1024;
}

} // namespace shapetrace::testing
