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
#include "explain/explain.h"
#include "extensions/run_info.h"
#include "input.h"
#include "recording/recording.h"
#include "report/comparison.h"
#include "report/page.h"
#include "report/report_data.h"
#include "flame/scope_trees.h"
#include "flame/flame_extension.h"

#include <cstdio>
#include <filesystem>
#include <future>
#include <optional>
#include <stdexcept>

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
  ScopeTreeLimits scope_trees; // the flame graphs of clusters and of outliers against typical calls
  ExplainSettings explain; // the Explain view: when explain.function is given
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
  if (!args.explain.function.empty())
    extensions.push_back({ExplainExtension::kName,
                          std::make_unique<ExplainExtension>(
                              args.explain, false, args.analysis.settings.thread.max_depth)});
  Analyzer analyzer(args.analysis.settings, args.analysis.workerCount(), std::move(extensions));
  const Analysis analysis = analyzeRecording(reader, analyzer, "report");
  const auto& run =
      static_cast<const RunInfoExtension*>(analyzer.extension(RunInfoExtension::kName))->run();

  // The flame graphs of clusters and of outliers need each call's cluster, known when it ends:
  // one bounded replay of the recording (scope_trees.h), with a reader of its own, beside the
  // instance look-ups.
  std::future<ScopeTrees> scope_trees_read;
  if (analyzer.extension(FlameExtension::kName) != nullptr && args.scope_trees.max_events > 0)
    scope_trees_read = std::async(std::launch::async, [&] {
      recording::RecordingReader own(args.dir);
      return readScopeTrees(own, analysis, args.scope_trees);
    });
  InstanceReader instances(reader, analysis);
  DetailSummary detail;
  auto embedded = collectInstances(instances, analysis, args.limits, detail);
  const auto comparisons = collectComparisons(instances, reader, analysis, embedded, args.limits);
  auto data = reportData(analysis, {"recording", args.dir, utcNow()}, embedded, args.limits,
                         detail, comparisons);
  std::optional<ScopeTrees> scope_trees;
  if (scope_trees_read.valid()) {
    scope_trees = scope_trees_read.get();
    data["flame_scopes"] = scopeTreesJson(*scope_trees, analysis, args.scope_trees);
  }
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
  std::printf("%s: %zu threads, %llu events, %zu shapes, %zu clusters, %zu outliers, %llu dropped "
              "events%s\n",
              args.output.c_str(), analysis.threads.size(),
              static_cast<unsigned long long>(analysis.events), analysis.shapes.size() - 1,
              analysis.clustering.clusters.size(), analysis.outliers.size(),
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
  if (scope_trees)
    std::printf("scoped flame graphs: %zu clusters, %zu shapes, outliers of %zu functions, from "
                "%llu of %llu events%s\n",
                scope_trees->clusters.size(), scope_trees->shapes.size(),
                scope_trees->functions.size(),
                static_cast<unsigned long long>(scope_trees->events_read),
                static_cast<unsigned long long>(scope_trees->events),
                scope_trees->complete() ? "" : " (--flame-scope-events; the page says so)");
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
  command.add_option("--flame-scope-events", options->scope_trees.max_events,
                     "Events read back for the flame graphs of clusters and of outliers against "
                     "typical calls, each thread from its start for its share (0: none)")
      ->capture_default_str();
  command.add_option("--flame-scope-clusters", options->scope_trees.max_clusters,
                     "Clusters with the most time that get a flame graph of their calls")
      ->capture_default_str();
  command.add_option("--flame-scope-shapes", options->scope_trees.max_shapes,
                     "Shapes of those clusters (cluster by cluster) that get a flame graph of their "
                     "calls")
      ->capture_default_str();
  command.add_option("--flame-scope-functions", options->scope_trees.max_functions,
                     "Functions with the most outliers that get flame graphs of their outlier and "
                     "typical calls")
      ->capture_default_str();
  command.add_option("--flame-scope-total-nodes", options->scope_trees.max_total_nodes,
                     "Nodes of all the scoped flame graphs embedded (bounds the page's size; "
                     "clusters first, then outlier functions, then shapes)")
      ->capture_default_str();
  command.add_option("--flame-scope-nodes", options->scope_trees.max_nodes,
                     "Distinct stacks under the calls of one function, shared by its scoped flame "
                     "graphs (calls on further stacks are left out and counted)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  command.add_option("--explain-function", options->explain.function,
                     "Adds the Explain view: why some calls of this function (requests) are slow "
                     "(`shapetrace explain`, docs/explain.md)");
  command.add_option("--explain-input", options->explain.input_key,
                     "The Explain view's input: the annotation key of a call's size");
  command.add_option("--explain-clusters", options->explain.clusters,
                     "The Explain view's number of lines (0: the smallest within 10% RMS error)")
      ->check(CLI::Range(0u, 64u))
      ->capture_default_str();
  command.add_option("--explain-trim", options->explain.search.klinear.trim,
                     "The Explain view's fraction of calls farthest from their line left out of "
                     "the fits (explain --trim)")
      ->check(CLI::Range(0.0, 0.5))
      ->capture_default_str();
  command.add_option("--explain-max-points", options->explain.max_points,
                     "The Explain view's calls kept per thread (explain --max-points)")
      ->check(CLI::Range(1u, 1u << 30))
      ->capture_default_str();
  return [options] { return runReport(*options); };
}

const cli::Registration report{"report",
                               "Write the run's timeline, clusters and outliers as one HTML page",
                               setupReport};

} // namespace
} // namespace shapetrace::analyzer::report
