// Every analysis' part of `shapetrace report` (report_part.h), listed once, in report_parts.cpp:
// an analysis adds its part there with one line.
#pragma once

#include "report/report_part.h"

#include <memory>
#include <vector>

namespace shapetrace::analyzer::report {

// One instance of each part, in the order their options, data and summary lines come.
std::vector<std::unique_ptr<ReportPart>> makeReportParts();

} // namespace shapetrace::analyzer::report
