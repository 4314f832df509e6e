// The process's peak resident memory, for tests that bound what a crafted input may cost: a bound
// on memory, unlike one on time, does not depend on how fast or loaded the machine is.
#pragma once

#include <cstdint>
#include <sys/resource.h>

namespace shapetrace::testing {

// Under a sanitizer the peak resident set measures the sanitizer, not the code: AddressSanitizer's
// quarantine keeps up to 256 MiB of freed blocks resident and pads every allocation with redzones;
// ThreadSanitizer's allocator keeps freed blocks and its shadow grows with every byte touched. The
// memory bounds are asserted by the plain build; the sanitized builds still run the same inputs.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kPeakRssMeasuresTheCode = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
inline constexpr bool kPeakRssMeasuresTheCode = false;
#else
inline constexpr bool kPeakRssMeasuresTheCode = true;
#endif
#else
inline constexpr bool kPeakRssMeasuresTheCode = true;
#endif

// The peak resident set of this process so far, in MiB (getrusage's ru_maxrss is in KiB).
inline int64_t peakRssMib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<int64_t>(usage.ru_maxrss) / 1024;
}

} // namespace shapetrace::testing
