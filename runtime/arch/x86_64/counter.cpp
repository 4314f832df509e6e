// The x86-64 counter's checks (see counter.h and clock.h).
#include "clock.h"

#include <cstdio>
#include <cstring>
#include <string>

namespace shapetrace::rt {

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

namespace arch {

const char* counterUnusableReason() {
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
    return nullptr;
  return "no invariant TSC (constant_tsc and nonstop_tsc) in /proc/cpuinfo";
}

double counterNominalTicksPerNs() {
  // The TSC's rate is not published (no tsc_freq_khz in sysfs on the machines we target): a guess
  // for this machine class, replaced by the first measurement before any timestamp is sent.
  return 2.0;
}

wire::ClockSource counterClockSource() {
  return wire::ClockSource::Tsc;
}

} // namespace arch
} // namespace shapetrace::rt
