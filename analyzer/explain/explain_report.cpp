#include "explain/explain_report.h"

#include <memory>

namespace shapetrace::analyzer::report {

void ExplainReportPart::addFlags(CLI::App& command) {
  command.add_option("--explain-function", settings_.function,
                     "Adds the Explain view: why some calls of this function (requests) are slow "
                     "(`shapetrace explain`, docs/explain.md)");
  command.add_option("--explain-input", settings_.input_key,
                     "The Explain view's input: the annotation key of a call's size");
  command.add_option("--explain-clusters", settings_.clusters,
                     "The Explain view's number of lines (0: the smallest within 10% RMS error)")
      ->check(CLI::Range(0u, 64u))
      ->capture_default_str();
  command.add_option("--explain-trim", settings_.search.klinear.trim,
                     "The Explain view's fraction of calls farthest from their line left out of "
                     "the fits (explain --trim)")
      ->check(CLI::Range(0.0, 0.5))
      ->capture_default_str();
  command.add_option("--explain-max-points", settings_.max_points,
                     "The Explain view's calls kept per thread (explain --max-points)")
      ->check(CLI::Range(1u, 1u << 30))
      ->capture_default_str();
}

void ExplainReportPart::addExtensions(std::vector<NamedExtension>& extensions,
                                      const AnalysisSettings& settings) {
  if (settings_.function.empty()) return;
  extensions.push_back({ExplainExtension::kName,
                        std::make_unique<ExplainExtension>(settings_, false,
                                                           settings.thread.max_depth)});
}

} // namespace shapetrace::analyzer::report
