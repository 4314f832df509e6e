// The analyzer's diagnostic counters: an enum, names, severities and descriptions generated from
// stats.inc, and a fixed-size counter set that threads keep and merge by addition.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace shapetrace::analyzer {

enum class Severity : uint8_t { kInfo, kDataLoss, kError };
std::string_view severityName(Severity severity);

enum class Stat : uint8_t {
#define SHAPETRACE_ANALYZER_STAT(name, severity, description) name,
#include "stats.inc"
#undef SHAPETRACE_ANALYZER_STAT
};

inline constexpr size_t kStatCount = 0
#define SHAPETRACE_ANALYZER_STAT(name, severity, description) +1
#include "stats.inc"
#undef SHAPETRACE_ANALYZER_STAT
    ;

std::string_view statName(Stat stat);
Severity statSeverity(Stat stat);
std::string_view statDescription(Stat stat);

// Counters for every Stat. Mergeable exactly (addition), so per-thread counters sum to the total.
class Diagnostics {
public:
  void add(Stat stat, uint64_t n = 1) { counts_[static_cast<size_t>(stat)] += n; }
  uint64_t count(Stat stat) const { return counts_[static_cast<size_t>(stat)]; }
  void merge(const Diagnostics& other) {
    for (size_t i = 0; i < kStatCount; ++i)
      counts_[i] += other.counts_[i];
  }
  friend bool operator==(const Diagnostics&, const Diagnostics&) = default;

private:
  std::array<uint64_t, kStatCount> counts_{};
};

// "12 calls not analysed (3 deeper than --max-depth, 9 open at a gap)": the calls that the counts
// leave out, for the commands' summary lines; empty when there are none.
std::string callsNotAnalysed(const Diagnostics& diagnostics);

} // namespace shapetrace::analyzer
