// The AArch64 counter's checks (see counter.h and clock.h).
//
// The architecture requires the generic timer to count at one frequency, system-wide, across
// power states (Arm ARM, "The Generic Timer"): there is no invariance to check as there is for
// the x86 TSC. What can be wrong is CNTFRQ_EL0, which firmware programs: 0 means it did not, and
// the runtime then uses CLOCK_MONOTONIC rather than a rate it cannot trust. The rate is measured
// against CLOCK_MONOTONIC anyway, as on x86-64; CNTFRQ_EL0 is the first estimate.
#include "clock.h"

namespace shapetrace::rt::arch {

const char* counterUnusableReason() {
  if (counterFrequencyHz() == 0)
    return "CNTFRQ_EL0 is 0 (the firmware did not set the generic timer's frequency)";
  return nullptr;
}

double counterNominalTicksPerNs() {
  return double(counterFrequencyHz()) / 1e9;
}

wire::ClockSource counterClockSource() {
  return wire::ClockSource::GenericTimer;
}

} // namespace shapetrace::rt::arch
