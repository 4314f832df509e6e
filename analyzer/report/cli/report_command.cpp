// `shapetrace report DIR -o report.html`: the whole run on one self-contained HTML page.
//
// One pass over the recording feeds the Analyzer (the same code path as `shapetrace analyze`) and
// the run's facts; then the embedded instances are read back through the recording's index while
// a second reader replays the recording for the scoped flame graphs (on another core), and the
// page is written next to its final name and renamed, so an open browser never sees half a file.
#include "analyzer.h"
#include "cli/analysis_flags.h"
#include "cli/command.h"
#include "cli/write_file.h"
#include "extensions/run_info.h"
#include "input.h"
#include "recording/recording.h"
#include "report/comparison.h"
#include "report/page.h"
#include "report/report_data.h"
#include "report/report_parts.h"

#include <cstdio>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <vector>

namespace shapetrace::analyzer::report {
namespace {

struct ReportArgs {
  ReportArgs() {
    // A finer timeline than analyze's default: it is what the page draws when zoomed out.
    analysis.settings.thread.timeline_bins = 2048;
    analysis.extensions = "all";
  }
  std::string dir;
  std::string output = "report.html";
  bool readable = false; // --readable: output files 0644, not 0600
  std::string baseline; // a recording or an analysis JSON to compare with
  AnalysisFlags analysis;
  DetailLimits limits;
  // The analyses' parts of the report (report_parts.h): their options, data and summary lines.
  std::vector<std::unique_ptr<ReportPart>> parts = makeReportParts();
};

int runReport(const ReportArgs& args) {
  if (!std::filesystem::is_directory(args.dir))
    throw std::runtime_error(args.dir + " is not a recording directory");
  if (!args.baseline.empty() && !std::filesystem::exists(args.baseline))
    throw std::runtime_error("baseline " + args.baseline + " does not exist");
  recording::RecordingReader reader(args.dir);
  // The page's header is the run_info extension's result: it always runs.
  auto extensions = makeExtensions(selectExtensions(args.analysis.extensions + ",run_info"),
                                   args.analysis.settings);
  for (const auto& part : args.parts)
    part->addExtensions(extensions, args.analysis.settings);
  Analyzer analyzer(args.analysis.settings, args.analysis.workerCount(), std::move(extensions));
  const Analysis analysis = analyzeRecording(reader, analyzer, "report");
  const auto& run =
      static_cast<const RunInfoExtension*>(analyzer.extension(RunInfoExtension::kName))->run();

  // What reads the recording again (the scoped flame graphs) runs beside the instance look-ups.
  const ReportRun report_run{args.dir, analysis, analyzer};
  for (const auto& part : args.parts)
    part->start(report_run);
  InstanceReader instances(reader, analysis);
  DetailSummary detail;
  auto embedded = collectInstances(instances, analysis, args.limits, detail);
  const auto comparisons = collectComparisons(instances, reader, analysis, embedded, args.limits);
  auto data = reportData(analysis, {"recording", args.dir, utcNow()}, embedded, args.limits,
                         detail, comparisons);
  for (const auto& part : args.parts)
    part->addData(report_run, data);
  if (!args.baseline.empty()) {
    // The baseline is analysed as this run is, with the flame graph for the differential one.
    const auto base = loadRunModel(
        args.baseline, args.analysis.settings, args.analysis.workerCount(),
        makeExtensions(selectExtensions("flame"), args.analysis.settings), "report");
    try {
      data["baseline"] = comparisonData(base, data.at("model"), args.baseline);
    } catch (const std::invalid_argument& e) {
      throw std::runtime_error("cannot compare with the baseline " + args.baseline + ": " +
                               e.what());
    }
  }
  const std::string page = renderPage(data);
  cli::writeFileAtomically(args.output, page, args.readable);

  // A process that never said how it ended lost what it had not sent: never a plain 0.
  const uint64_t without_end = run.processesWithoutEnd();
  const std::string unknown =
      without_end ? " + an unknown number (" + std::to_string(without_end) +
                        " process(es) ended without a process end)"
                  : "";
  std::printf("%s: %llu threads, %llu events, %zu shapes, %zu clusters, %llu outliers (%zu most "
              "extreme kept), %llu dropped events%s\n",
              args.output.c_str(), static_cast<unsigned long long>(threadCount(analysis)),
              static_cast<unsigned long long>(analysis.events), analysis.shapes.size() - 1,
              analysis.clustering.clusters.size(),
              static_cast<unsigned long long>(analysis.outliers_found), analysis.outliers.size(),
              static_cast<unsigned long long>(run.droppedEvents()), unknown.c_str());
  if (data.contains("baseline"))
    std::printf("compared with %s: %zu explanations, %zu shape changes%s\n",
                args.baseline.c_str(), data["baseline"]["diff"]["explanations"].size(),
                data["baseline"]["diff"]["shapes"].size(),
                data["baseline"]["flame"].is_null() ? ", no differential flame graph" : "");
  if (const std::string lost = callsNotAnalysed(analysis.diagnostics); !lost.empty())
    std::printf("%s: see the page's diagnostics\n", lost.c_str());
  std::printf("embedded %zu exact instances (%zu exemplars of %zu clusters, %zu outliers, %zu "
              "typical calls compared with them)%s; %.1f MB\n",
              embedded.size(), detail.exemplar_instances, detail.clusters_with_instances,
              detail.outlier_instances, comparisons.size(),
              detail.capped ? ", capped by the detail limits" : "",
              static_cast<double>(page.size()) / 1e6);
  for (const auto& part : args.parts)
    part->printSummary();
  return 0;
}

cli::Runner setupReport(CLI::App& command) {
  auto options = std::make_shared<ReportArgs>();
  command.add_option("dir", options->dir, "Recording directory (from `shapetrace record`)")
      ->required();
  command.add_flag("--readable", options->readable, cli::kReadableHelp);
  command.add_option("-o,--output", options->output, "The HTML file to write")
      ->capture_default_str();
  command.add_option("--baseline", options->baseline,
                     "Compare with this run (a recording directory or an analysis JSON): adds the "
                     "comparison view (what changed, ribbons side by side, differential flame "
                     "graph)");
  addAnalysisFlags(command, options->analysis);
  command.add_option("--exemplars", options->limits.exemplars_per_cluster,
                     "Exact instances embedded per cluster (0-2: first occurrence, slowest bin)")
      ->check(CLI::Range(0, 2))
      ->capture_default_str();
  command.add_option("--outlier-instances", options->limits.outlier_instances,
                     "Most extreme outliers whose exact call is embedded")
      ->capture_default_str();
  command.add_option("--max-instances", options->limits.max_instances,
                     "Most exact instances embedded in all")
      ->capture_default_str();
  command.add_option("--max-instance-calls", options->limits.max_instance_calls,
                     "Most calls listed per embedded instance")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  command.add_option("--comparisons", options->limits.comparisons,
                     "Most extreme outliers aligned with a typical call of their function (why "
                     "was this call slow)")
      ->capture_default_str();
  command.add_option("--max-total-calls", options->limits.max_total_calls,
                     "Most calls listed over all embedded instances (bounds the page's size)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  for (const auto& part : options->parts)
    part->addFlags(command);
  return [options] { return runReport(*options); };
}

const cli::Registration report{"report",
                               "Write the run's timeline, clusters and outliers as one HTML page",
                               setupReport};

} // namespace
} // namespace shapetrace::analyzer::report
