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

} // namespace shapetrace::analyzer
