// The flame analysis' part of `shapetrace report` (report/report_part.h): the flame graphs of the
// report's scopes (scope_trees.h), read back from the recording beside the instance look-ups, and
// their options (--flame-scope-*, docs/report.md "Scoped flame graphs").
#pragma once

#include "flame/scope_trees.h"
#include "report/report_part.h"

#include <future>
#include <optional>

namespace shapetrace::analyzer::report {

class FlameReportPart final : public ReportPart {
public:
  void addFlags(CLI::App& command) override;
  void start(const ReportRun& run) override;
  void addData(const ReportRun& run, nlohmann::ordered_json& data) override;
  void printSummary() const override;

private:
  ScopeTreeLimits limits_;
  std::future<ScopeTrees> reading_;
  std::optional<ScopeTrees> trees_;
};

} // namespace shapetrace::analyzer::report
