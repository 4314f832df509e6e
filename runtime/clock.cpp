// Tick source selection and calibration (see clock.h).
#include "clock.h"

#include <cmath>
#include <algorithm>
#include <cstring>

namespace shapetrace::rt {

TickSource g_tick_source = TickSource::Monotonic;

TickSource selectTickSource(const char* requested, const char** why) {
  *why = "";
  if (std::strcmp(requested, "monotonic") == 0) {
    *why = "SHAPETRACE_CLOCK=monotonic";
    return TickSource::Monotonic;
  }
  if (const char* reason = arch::counterUnusableReason()) {
    *why = reason;
    return TickSource::Monotonic;
  }
  return TickSource::Counter;
}

double nominalTicksPerNs(TickSource source) {
  return source == TickSource::Counter ? arch::counterNominalTicksPerNs() : 1.0;
}

wire::ClockSource wireClockSource(TickSource source) {
  return source == TickSource::Counter ? arch::counterClockSource() : wire::ClockSource::Monotonic;
}

ClockPair readClockPair(TickSource source) {
  if (source == TickSource::Monotonic) {
    const uint64_t ns = monotonicNs();
    return {ns, ns};
  }
  ClockPair best;
  uint64_t best_width = UINT64_MAX;
  for (int attempt = 0; attempt < 5; ++attempt) {
    const uint64_t before = arch::readCounter();
    const uint64_t ns = monotonicNs();
    const uint64_t after = arch::readCounter();
    if (after - before < best_width) {
      best_width = after - before;
      best = {before + (after - before) / 2, ns};
    }
  }
  return best;
}

Calibration::Calibration(ClockPair start, double nominal_ticks_per_ns)
    : start_(start), measured_ticks_per_ns_(nominal_ticks_per_ns) {
  segments_[0] = {start.ticks, start.ns, 1.0 / nominal_ticks_per_ns};
}

void Calibration::restart(ClockPair now) {
  if (now.ns <= start_.ns || now.ticks <= start_.ticks)
    return;
  measured_ticks_per_ns_ = double(now.ticks - start_.ticks) / double(now.ns - start_.ns);
  segments_[0] = {start_.ticks, start_.ns, 1.0 / measured_ticks_per_ns_};
  latest_ = 0;
  count_ = 1;
}

void Calibration::update(ClockPair now, uint64_t next_interval_ns) {
  if (now.ns <= start_.ns || now.ticks <= start_.ticks ||
      int64_t(now.ticks - segments_[latest_].ref_ticks) <= 0)
    return;
  measured_ticks_per_ns_ = double(now.ticks - start_.ticks) / double(now.ns - start_.ns);
  // Continuity: the new segment starts where the current one is at now.ticks.
  const uint64_t mapped_now = toNs(now.ticks);
  // Steering: remove the offset against CLOCK_MONOTONIC over the next interval, changing the
  // slope by at most 1%, so that time always moves forward and never races.
  const double offset = double(int64_t(mapped_now - now.ns));
  const double interval = double(next_interval_ns ? next_interval_ns : 1);
  const double correction = std::fmax(-0.01, std::fmin(0.01, -offset / interval));
  latest_ = (latest_ + 1) % kHistory;
  count_ = std::min(count_ + 1, kHistory);
  segments_[latest_] = {now.ticks, mapped_now, (1.0 + correction) / measured_ticks_per_ns_};
}

wire::ClockCalibration Calibration::describe(wire::ClockSource source) const {
  const Segment& segment = segments_[latest_];
  return {source, 1.0 / segment.ns_per_tick, segment.ref_ticks, segment.ref_ns};
}

} // namespace shapetrace::rt
