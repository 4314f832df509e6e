// The analyses' parts of `shapetrace report`, listed once (report_parts.h).
#include "report/report_parts.h"

#include "explain/explain_report.h"
#include "flame/flame_report.h"

namespace shapetrace::analyzer::report {

std::vector<std::unique_ptr<ReportPart>> makeReportParts() {
  std::vector<std::unique_ptr<ReportPart>> parts;
  parts.push_back(std::make_unique<FlameReportPart>());
  parts.push_back(std::make_unique<ExplainReportPart>());
  return parts;
}

} // namespace shapetrace::analyzer::report
