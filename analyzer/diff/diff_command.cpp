// `shapetrace diff BASE NEW`: what changed between two runs, at the level of shapes
// (diff/run_diff.h). Each side is a recording directory (analysed here, with the analysis options)
// or an analysis JSON file (`shapetrace analyze --json`), so that a stored baseline compares with a
// new run without its events. `--fail-on-regression PCT` makes it a CI gate: exit 3 when a function
// or cluster got slower by more than PCT percent, significantly.
#include "analyzer.h"
#include "cli/analysis_flags.h"
#include "cli/command.h"
#include "cli/write_file.h"
#include "diff/run_diff.h"
#include "duration_text.h"
#include "function_names.h"
#include "input.h"
#include "model_json.h"

#include <cstdio>
#include <stdexcept>

namespace shapetrace::analyzer {
namespace {

struct DiffArgs {
  std::string base, now;
  std::string base_window, new_window;
  std::string json;
  bool readable = false; // --readable: output files 0644, not 0600
  double fail_on_regression = -1;
  DiffSettings settings;
  AnalysisFlags analysis;
};

void printDiff(const RunDiff& d) {
  std::printf("BASE: %llu calls in %.2f s; NEW: %llu calls in %.2f s; %zu functions in common\n",
              static_cast<unsigned long long>(d.base_calls), d.base_seconds,
              static_cast<unsigned long long>(d.new_calls), d.new_seconds, d.shared_functions);
  if (const std::string warning = filteringWarning(d.filtering); !warning.empty())
    std::printf("%s\n", warning.c_str());
  if (d.explanations.empty()) {
    std::printf("\nno significant change\n");
    return;
  }
  std::printf("\nwhat changed, the largest movements of time first:\n");
  for (const std::string& text : d.explanations)
    std::printf("  - %s\n", text.c_str());
  std::printf("\n%-14s %-40s %10s %10s %10s %10s %12s\n", "shape change", "function", "calls",
              "(base)", "mean", "(base)", "time/s");
  ShortNames names;
  for (size_t i = 0; i < d.shapes.size() && i < 20; ++i) {
    const ShapeChange& c = d.shapes[i];
    std::printf("%-14s %-40s %10llu %10llu %10s %10s %12s\n", changeKindName(c.kind),
                fitColumn(names.of(c.function), 40).c_str(), static_cast<unsigned long long>(c.new_calls),
                static_cast<unsigned long long>(c.base_calls), describeNs(c.now.mean_ns).c_str(),
                describeNs(c.base.mean_ns).c_str(), describeNs(c.impact_ns_per_s).c_str());
  }
  if (d.shapes.size() > 20) std::printf("(%zu more in --json)\n", d.shapes.size() - 20);
}

// A side's model: its JSON file, or the analysis of its recording (of its window).
nlohmann::ordered_json modelOf(const std::string& path, const std::string& window,
                               const AnalysisFlags& flags) {
  return loadRunModel(path, flags.settings, flags.workerCount(), {}, "diff",
                      window.empty() ? TimeWindow{} : parseTimeWindow(window));
}

int runDiff(const DiffArgs& args) {
  const RunDiff diff = diffRuns(modelOf(args.base, args.base_window, args.analysis),
                                modelOf(args.now, args.new_window, args.analysis), args.settings);
  if (!args.json.empty()) {
    const std::string text = diffJson(diff).dump() + "\n";
    if (args.json == "-")
      std::fwrite(text.data(), 1, text.size(), stdout);
    else
      cli::writeFileAtomically(args.json, text, args.readable);
  }
  if (args.json != "-")
    printDiff(diff);
  else if (const std::string warning = filteringWarning(diff.filtering); !warning.empty())
    std::fprintf(stderr, "shapetrace diff: %s\n", warning.c_str());
  if (args.fail_on_regression >= 0) {
    const auto found = regressions(diff, args.fail_on_regression);
    for (const std::string& r : found)
      std::fprintf(stderr, "shapetrace diff: regression: %s\n", r.c_str());
    if (!found.empty()) return 3;
  }
  return 0;
}

cli::Runner setupDiff(CLI::App& command) {
  auto args = std::make_shared<DiffArgs>();
  command.add_option("base", args->base, "The baseline: a recording directory or analysis JSON")
      ->required();
  command.add_option("new", args->now, "The run to compare: a recording directory or analysis JSON")
      ->required();
  const auto window = [](const std::string& text) {
    try {
      parseTimeWindow(text);
      return std::string();
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
  };
  command.add_option("--base-window", args->base_window,
                     "Only the calls of BASE that start in this window of its recording, FROM..TO "
                     "(2s..5s, ..500ms, 10s..: from its first event; digits alone: absolute ns)")
      ->check(window);
  command.add_option("--new-window", args->new_window,
                     "Only the calls of NEW in this window (BASE and NEW may be one recording)")
      ->check(window);
  command.add_flag("--readable", args->readable, cli::kReadableHelp);
  command.add_option("--json", args->json, "Write the diff as JSON to this file ('-' for stdout)");
  command.add_option("--fail-on-regression", args->fail_on_regression,
                     "Exit 3 when a function or cluster got slower by more than PCT percent, "
                     "significantly (for CI)")
      ->check(CLI::NonNegativeNumber);
  command.add_option("--min-change", args->settings.min_change,
                     "Smallest relative change of a mean or a share that is reported")
      ->check(CLI::Range(0.0, 100.0))
      ->capture_default_str();
  command.add_option("--z", args->settings.z,
                     "Test statistic a change must reach (3.29: two-sided p < 0.001)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  command.add_option("--min-calls", args->settings.min_calls,
                     "Measured calls each side needs before its durations are compared")
      ->capture_default_str();
  addAnalysisFlags(command, args->analysis);
  command.footer("Exit codes: 0 compared, 1 an error, 2 a usage error, 3 a regression "
                 "(--fail-on-regression).");
  return [args] { return runDiff(*args); };
}

const cli::Registration diff{"diff", "What changed between two runs, shape by shape", setupDiff};

} // namespace
} // namespace shapetrace::analyzer
