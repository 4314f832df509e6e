// Tick source selection and calibration (see clock.h).
#include "clock.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

namespace shapetrace::rt {

TickSource g_tick_source = TickSource::Monotonic;

bool cpuFlagsHaveInvariantTsc(const char* text) {
  // The first "flags" line describes every CPU (they are identical on the machines we support).
  const char* line = std::strstr(text, "\nflags");
  if (!line && std::strncmp(text, "flags", 5) == 0)
    line = text;
  if (!line)
    return false;
  const char* end = std::strchr(line + 1, '\n');
  const std::string flags(line, end ? size_t(end - line) : std::strlen(line));
  auto has = [&](const char* flag) {
    const std::string padded = std::string(" ") + flag;
    size_t at = flags.find(padded);
    while (at != std::string::npos) {
      const size_t after = at + padded.size();
      if (after == flags.size() || flags[after] == ' ' || flags[after] == '\n')
        return true;
      at = flags.find(padded, at + 1);
    }
    return false;
  };
  return has("constant_tsc") && has("nonstop_tsc");
}

TickSource selectTickSource(const char* requested, const char** why) {
  *why = "";
  if (std::strcmp(requested, "monotonic") == 0) {
    *why = "SHAPETRACE_CLOCK=monotonic";
    return TickSource::Monotonic;
  }
  std::string cpuinfo;
  if (FILE* file = std::fopen("/proc/cpuinfo", "re")) {
    char buffer[4096];
    size_t n;
    // The first CPU's block holds the flags line; no need to read the rest.
    while (cpuinfo.size() < 65536 && (n = std::fread(buffer, 1, sizeof buffer, file)) > 0)
      cpuinfo.append(buffer, n);
    std::fclose(file);
  }
  if (cpuFlagsHaveInvariantTsc(cpuinfo.c_str()))
    return TickSource::Tsc;
  *why = "no invariant TSC (constant_tsc and nonstop_tsc) in /proc/cpuinfo";
  return TickSource::Monotonic;
}

ClockPair readClockPair(TickSource source) {
  if (source == TickSource::Monotonic) {
    const uint64_t ns = monotonicNs();
    return {ns, ns};
  }
  ClockPair best;
  uint64_t best_width = UINT64_MAX;
  for (int attempt = 0; attempt < 5; ++attempt) {
    const uint64_t before = __rdtsc();
    const uint64_t ns = monotonicNs();
    const uint64_t after = __rdtsc();
    if (after - before < best_width) {
      best_width = after - before;
      best = {before + (after - before) / 2, ns};
    }
  }
  return best;
}

Calibration::Calibration(ClockPair start, double nominal_ticks_per_ns)
    : start_(start), ref_ticks_(start.ticks), ref_ns_(start.ns),
      ns_per_tick_(1.0 / nominal_ticks_per_ns), measured_ticks_per_ns_(nominal_ticks_per_ns) {}

void Calibration::update(ClockPair now, uint64_t next_interval_ns) {
  if (now.ns <= start_.ns || now.ticks <= start_.ticks)
    return;
  measured_ticks_per_ns_ = double(now.ticks - start_.ticks) / double(now.ns - start_.ns);
  const uint64_t mapped_now = toNs(now.ticks);
  // Continuity: the new segment starts where the old one is at now.ticks.
  ref_ticks_ = now.ticks;
  ref_ns_ = mapped_now;
  // Steering: remove the offset against CLOCK_MONOTONIC over the next interval, at most 10% of
  // the slope, so that time always moves forward.
  const double offset = double(int64_t(mapped_now - now.ns));
  const double interval = double(next_interval_ns ? next_interval_ns : 1);
  double correction = -offset / interval;
  correction = std::fmax(-0.1, std::fmin(0.1, correction));
  ns_per_tick_ = (1.0 + correction) / measured_ticks_per_ns_;
}

wire::ClockCalibration Calibration::describe(wire::ClockSource source) const {
  return {source, 1.0 / ns_per_tick_, ref_ticks_, ref_ns_};
}

} // namespace shapetrace::rt
