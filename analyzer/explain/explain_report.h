// The explain analysis' part of `shapetrace report` (report/report_part.h): the Explain view,
// when --explain-function is given (docs/explain.md), its result written in the model as the
// extension "explain".
#pragma once

#include "explain/explain.h"
#include "report/report_part.h"

namespace shapetrace::analyzer::report {

class ExplainReportPart final : public ReportPart {
public:
  void addFlags(CLI::App& command) override;
  void addExtensions(std::vector<NamedExtension>& extensions,
                     const AnalysisSettings& settings) override;

private:
  ExplainSettings settings_;
};

} // namespace shapetrace::analyzer::report
