// Unit tests of the tick source selection and of the ticks -> CLOCK_MONOTONIC calibration.
#include "clock.h"

#include <gtest/gtest.h>

#include <cmath>
#include <time.h>

namespace shapetrace::rt {
namespace {

#if defined(__x86_64__)
TEST(TickSource, InvariantTscNeedsBothFlags) {
  EXPECT_TRUE(cpuFlagsHaveInvariantTsc("processor\t: 0\nflags\t\t: fpu tsc constant_tsc nonstop_tsc rdtscp\n"));
  EXPECT_TRUE(cpuFlagsHaveInvariantTsc("flags : nonstop_tsc constant_tsc"));
  EXPECT_FALSE(cpuFlagsHaveInvariantTsc("processor\t: 0\nflags\t\t: fpu tsc constant_tsc\n"));
  EXPECT_FALSE(cpuFlagsHaveInvariantTsc("flags : constant_tsc nonstop_tsc_x\n"));
  EXPECT_FALSE(cpuFlagsHaveInvariantTsc(""));
}

TEST(TickSource, TheStreamNamesTheTsc) {
  EXPECT_EQ(wireClockSource(TickSource::Counter), wire::ClockSource::Tsc);
}
#elif defined(__aarch64__)
TEST(TickSource, TheStreamNamesTheGenericTimer) {
  EXPECT_EQ(wireClockSource(TickSource::Counter), wire::ClockSource::GenericTimer);
}

// The generic timer's nominal rate is CNTFRQ_EL0's, and its count moves forward.
TEST(TickSource, GenericTimerRateIsCntfrq) {
  const char* why = nullptr;
  ASSERT_EQ(selectTickSource("auto", &why), TickSource::Counter) << why;
  EXPECT_EQ(nominalTicksPerNs(TickSource::Counter), double(arch::counterFrequencyHz()) / 1e9);
  const uint64_t first = arch::readCounter();
  EXPECT_GE(arch::readCounter(), first);
}
#endif

TEST(TickSource, MonotonicWhenAsked) {
  const char* why = nullptr;
  EXPECT_EQ(selectTickSource("monotonic", &why), TickSource::Monotonic);
  EXPECT_STREQ(why, "SHAPETRACE_CLOCK=monotonic");
  EXPECT_EQ(wireClockSource(TickSource::Monotonic), wire::ClockSource::Monotonic);
  EXPECT_EQ(nominalTicksPerNs(TickSource::Monotonic), 1.0);
}

// A simulated TSC at exactly 2.1 ticks/ns with an offset, read without jitter.
ClockPair simulated(uint64_t ns) { return {uint64_t(double(ns) * 2.1) + 123456789, ns}; }

TEST(Calibration, ConvergesToTheTrueRateAndStaysContinuous) {
  Calibration calibration(simulated(1000000000), 2.0); // a wrong nominal rate to start with
  uint64_t step = 1000000;
  uint64_t now = 1000000000;
  uint64_t previous_mapped = 0;
  for (int i = 0; i < 30; ++i) {
    now += step;
    const uint64_t mapped_before = calibration.toNs(simulated(now).ticks);
    step = std::min<uint64_t>(step * 2, 1000000000);
    calibration.update(simulated(now), step);
    // A new segment starts where the old one ended: converted time never jumps.
    EXPECT_NEAR(double(calibration.toNs(simulated(now).ticks)), double(mapped_before), 1.0);
    EXPECT_GE(mapped_before, previous_mapped);
    previous_mapped = mapped_before;
  }
  EXPECT_NEAR(calibration.ticksPerNs(), 2.1, 1e-9);
  // After the steering segments, conversion matches the reference clock within 1 us.
  const uint64_t later = now + step;
  EXPECT_NEAR(double(calibration.toNs(simulated(later).ticks)), double(later), 1000.0);
}

// The real clocks: after calibrating over 200 ms as the drain does, TSC-derived time agrees with
// CLOCK_MONOTONIC within 20 us (measured on the project's 2 vCPU KVM machines: under 2 us; the
// tolerance absorbs a preemption between the two reads).
TEST(Calibration, RealTscAgreesWithClockMonotonic) {
  const char* why = nullptr;
  const TickSource source = selectTickSource("auto", &why);
  if (source != TickSource::Counter)
    GTEST_SKIP() << "no usable counter: " << why;
  // As the drain does: restart after a first 100 us baseline, then doubling updates from 1 ms.
  Calibration calibration(readClockPair(source), 2.0);
  const timespec first{0, 100000};
  nanosleep(&first, nullptr);
  calibration.restart(readClockPair(source));
  uint64_t step = 1000000;
  for (uint64_t elapsed = 0; elapsed < 200000000; elapsed += step) {
    const timespec pause{0, long(step)};
    nanosleep(&pause, nullptr);
    step = std::min<uint64_t>(step * 2, 50000000);
    calibration.update(readClockPair(source), step);
  }
  const timespec pause{0, 20000000};
  nanosleep(&pause, nullptr);
  double worst = 0;
  for (int i = 0; i < 5; ++i) {
    const ClockPair pair = readClockPair(source);
    worst = std::max(worst, std::fabs(double(calibration.toNs(pair.ticks)) - double(pair.ns)));
  }
  EXPECT_LT(worst, 20000.0);
}

// An event that waited in a ring across an update converts with the segment it was recorded in:
// conversion stays increasing over ticks on both sides of every update.
TEST(Calibration, LateConversionsNeverGoBackwards) {
  Calibration calibration(simulated(0), 2.0);
  calibration.restart(simulated(1000000));
  uint64_t now = 1000000;
  for (int i = 0; i < 40; ++i) {
    // A jittery reference: the monotonic reading is up to 3 us off.
    now += 1000000;
    ClockPair pair = simulated(now);
    pair.ns += (i % 3) * 1500;
    calibration.update(pair, 2000000);
  }
  uint64_t previous = 0;
  for (uint64_t ns = 0; ns < now; ns += 997) {
    const uint64_t mapped = calibration.toNs(simulated(ns).ticks);
    ASSERT_GE(mapped, previous) << ns;
    previous = mapped;
  }
}

TEST(Calibration, RestartUsesTheMeasuredRateFromTheStart) {
  Calibration calibration(simulated(1000), 2.0);
  calibration.restart(simulated(1001000));
  EXPECT_NEAR(calibration.ticksPerNs(), 2.1, 1e-5);
  EXPECT_NEAR(double(calibration.toNs(simulated(500000).ticks)), 500000.0, 1.0);
}

TEST(Calibration, MonotonicSourceIsTheIdentity) {
  Calibration calibration({5000, 5000}, 1.0);
  calibration.update({10000, 10000}, 1000);
  EXPECT_EQ(calibration.toNs(12345), 12345u);
}

} // namespace
} // namespace shapetrace::rt
