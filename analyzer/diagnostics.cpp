// Name, severity and description tables generated from stats.inc.
#include "diagnostics.h"

namespace shapetrace::analyzer {
namespace {

struct StatInfo {
  std::string_view name;
  Severity severity;
  std::string_view description;
};

constexpr Severity kInfo = Severity::kInfo;
constexpr Severity kDataLoss = Severity::kDataLoss;
constexpr Severity kError = Severity::kError;

constexpr StatInfo kStatInfo[] = {
#define SHAPETRACE_ANALYZER_STAT(name, severity, description) {#name, severity, description},
#include "stats.inc"
#undef SHAPETRACE_ANALYZER_STAT
};
static_assert(std::size(kStatInfo) == kStatCount);

} // namespace

std::string_view severityName(Severity severity) {
  switch (severity) {
  case Severity::kInfo: return "info";
  case Severity::kDataLoss: return "data_loss";
  case Severity::kError: return "error";
  }
  return "unknown";
}

std::string_view statName(Stat stat) { return kStatInfo[static_cast<size_t>(stat)].name; }
Severity statSeverity(Stat stat) { return kStatInfo[static_cast<size_t>(stat)].severity; }
std::string_view statDescription(Stat stat) {
  return kStatInfo[static_cast<size_t>(stat)].description;
}

std::string callsNotAnalysed(const Diagnostics& diagnostics) {
  const std::pair<Stat, const char*> parts[] = {
      {Stat::calls_below_max_depth, "deeper than --max-depth"},
      {Stat::frames_discarded_at_gap, "open at a gap"},
      {Stat::frames_open_at_thread_end, "open at the end"}};
  uint64_t total = 0;
  std::string detail;
  for (const auto& [stat, what] : parts) {
    const uint64_t n = diagnostics.count(stat);
    if (n == 0) continue;
    total += n;
    detail += (detail.empty() ? "" : ", ") + std::to_string(n) + " " + what;
  }
  return total == 0 ? std::string()
                    : std::to_string(total) + " calls not analysed (" + detail + ")";
}

} // namespace shapetrace::analyzer
