// What an analysis adds to `shapetrace report` beyond its extension's result in the model: its
// options, the extensions it runs beside the selected ones, work that reads the recording again
// (started after the analysis, beside the instance look-ups), its keys of the page's data and its
// lines of the command's summary. The command loops over the parts (report_parts.h); an analysis
// that needs none of this has no part.
#pragma once

#include "analysis.h"
#include "analyzer.h"
#include "extension.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace shapetrace::analyzer::report {

// The analysed run, as the parts see it.
struct ReportRun {
  const std::string& recording; // its directory
  const Analysis& analysis;
  const Analyzer& analyzer; // the extensions that ran (Analyzer::extension)
};

class ReportPart {
public:
  virtual ~ReportPart() = default;
  // Its options on `report`, after the command's own.
  virtual void addFlags(CLI::App& command) = 0;
  // Extensions it needs beyond the selection (--extensions), built from its options.
  virtual void addExtensions(std::vector<NamedExtension>& /*extensions*/,
                             const AnalysisSettings& /*settings*/) {}
  // After the analysis: starts what reads the recording again, on a thread of its own.
  virtual void start(const ReportRun& /*run*/) {}
  // Its keys of the page's data, after the core's (and before the baseline's comparison).
  virtual void addData(const ReportRun& /*run*/, nlohmann::ordered_json& /*data*/) {}
  // Its lines of the command's summary, after the command's own.
  virtual void printSummary() const {}
};

} // namespace shapetrace::analyzer::report
