// Timestamps for the hot path and their conversion to CLOCK_MONOTONIC nanoseconds.
//
// The hooks read raw ticks: the architecture's counter (runtime/arch/<arch>/counter.h: `rdtsc` on
// x86-64 when the CPU has an invariant TSC, constant_tsc and nonstop_tsc in /proc/cpuinfo;
// CNTVCT_EL0 on AArch64 when CNTFRQ_EL0 is set), else clock_gettime (CLOCK_MONOTONIC) in
// nanoseconds. Only the drain thread converts ticks to nanoseconds, with a Calibration that the
// runtime measures itself against CLOCK_MONOTONIC (sysfs has no TSC frequency on the machines we
// target): a first estimate over the first drain interval, then re-measured over ever longer
// baselines (doubling up to every second). Each re-measurement starts a new linear segment that is
// continuous with the previous one (converted times never jump backwards) and steers its slope so
// that the residual offset against CLOCK_MONOTONIC decays over the next segment.
#pragma once

#include "channel/rings.h"

#include "wire/items.h"

#include <cstdint>
#include <ctime>

#if defined(__x86_64__)
#include "arch/x86_64/counter.h"
#elif defined(__aarch64__)
#include "arch/aarch64/counter.h"
#else
#error "the shapetrace runtime supports x86-64 and AArch64 (runtime/arch/)"
#endif

namespace shapetrace::rt {

// Counter: the architecture's counter (arch::readCounter); Monotonic: CLOCK_MONOTONIC in ns.
enum class TickSource : uint8_t { Counter, Monotonic };

// Defined by runtime/arch/<arch>/counter.cpp.
namespace arch {
// Why the counter cannot be this process's tick source; nullptr when it can.
const char* counterUnusableReason();
// The counter's rate before the runtime has measured it.
double counterNominalTicksPerNs();
// How the stream names the counter.
wire::ClockSource counterClockSource();
} // namespace arch

inline uint64_t monotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}

// The process's tick source, chosen once at start-up (see selectTickSource); read on every event.
extern TickSource g_tick_source;

[[gnu::always_inline]] inline uint64_t readTicks() {
  if (g_tick_source == TickSource::Counter) [[likely]]
    return arch::readCounter();
  return monotonicNs();
}

// `requested` is SHAPETRACE_CLOCK: "auto", "counter" (or its older name "tsc") or "monotonic"; the
// counter where it cannot be used falls back to monotonic (and says so in `why`).
TickSource selectTickSource(const char* requested, const char** why);
// The rate to assume until the first measurement, and how the stream names the source.
double nominalTicksPerNs(TickSource source);
wire::ClockSource wireClockSource(TickSource source);

// One simultaneous reading of the tick source and of CLOCK_MONOTONIC.
struct ClockPair {
  uint64_t ticks = 0;
  uint64_t ns = 0;
};

// Ticks -> CLOCK_MONOTONIC ns, piecewise linear. Not thread-safe: owned by the drain thread.
//
// Each update starts a new segment at the update's ticks; ticks before it keep converting with
// the segment they fell in (the last kHistory segments are kept; older ticks use the oldest), so
// the mapping is one continuous increasing function and an event converted late (it waited in a
// ring across an update) never lands before one converted earlier.
class Calibration {
public:
  static constexpr size_t kHistory = 32;

  // `start` anchors the first segment; until the first update, ticks convert at `nominal_ticks_per_ns`.
  Calibration(ClockPair start, double nominal_ticks_per_ns);

  // Before anything was converted: re-anchors the first segment on the measured rate between
  // `start` and `now` (exact at both points).
  void restart(ClockPair now);

  // Starts a new segment at `now` (a fresh pair): slope from the whole baseline since start, and
  // the offset of the old mapping at now.ticks against now.ns corrected over `next_interval_ns`.
  void update(ClockPair now, uint64_t next_interval_ns);

  uint64_t toNs(uint64_t ticks) const {
    size_t index = latest_;
    for (size_t age = 1; age < count_ && int64_t(ticks - segments_[index].ref_ticks) < 0; ++age)
      index = (index + kHistory - 1) % kHistory;
    const Segment& segment = segments_[index];
    // Fixed point, not double: the double version's conversions back to an integer were about a
    // quarter of the drain's samples (perf; docs/BENCHMARKS.md).
    return channel::segmentToNs(ticks, segment.ref_ticks, segment.ref_ns, segment.ns_per_tick_q32);
  }

  double ticksPerNs() const { return measured_ticks_per_ns_; }
  // The current segment in wire form (ns = refNs + (ticks - refTicks) / ticksPerNs).
  wire::ClockCalibration describe(wire::ClockSource source) const;

  struct Segment {
    Segment() = default;
    Segment(uint64_t ticks, uint64_t ns, double ns_per_tick_)
        : ref_ticks(ticks), ref_ns(ns), ns_per_tick(ns_per_tick_),
          ns_per_tick_q32(int64_t(ns_per_tick_ * 4294967296.0 + 0.5)) {}
    uint64_t ref_ticks = 0;
    uint64_t ref_ns = 0;
    double ns_per_tick = 1.0;
    int64_t ns_per_tick_q32 = int64_t(1) << 32; // ns_per_tick with 32 fractional bits
  };
  // The newest segment (what a collector finishing the rings converts with, channel/rings.h).
  const Segment& latest() const { return segments_[latest_]; }

private:
  ClockPair start_;
  Segment segments_[kHistory];
  size_t latest_ = 0;
  size_t count_ = 1;
  double measured_ticks_per_ns_;
};

// A tight reading: the tick/monotonic pair whose two surrounding tick reads are closest, of a few.
ClockPair readClockPair(TickSource source);

} // namespace shapetrace::rt
