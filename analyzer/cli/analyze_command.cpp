// `shapetrace analyze DIR | --live ENDPOINT`: shapes, clusters, ribbons, statistics and outliers of
// a recording or of a live stream, as a terminal summary and as the JSON model (docs/analyzer.md).
//
// Both inputs (input.h: a recording, or the collector's --publish endpoint with loss counted) feed
// the same Analyzer.
#include "analyzer.h"
#include "cli/analysis_flags.h"
#include "cli/command.h"
#include "cli/signals.h"
#include "cli/write_file.h"
#include "function_names.h"
#include "input.h"
#include "model_json.h"
#include "scope.h"

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <stdexcept>

namespace shapetrace::analyzer {
namespace {

struct AnalyzeArgs {
  std::string dir;
  std::string live;
  std::string json;
  bool readable = false; // --readable: output files 0644, not 0600
  AnalysisFlags analysis;
  bool distances = false;
  bool dag = false;
  double duration = 0;
  double snapshot_every = 0;
};


void writeModel(const Analysis& analysis, const AnalyzeArgs& args) {
  // Compact: the timeline alone is hundreds of thousands of cells, three times the bytes when
  // indented. `jq . FILE` shows it indented.
  const std::string text = toJson(analysis, ModelSections{args.distances, args.dag}).dump() + "\n";
  if (args.json == "-")
    std::fwrite(text.data(), 1, text.size(), stdout);
  else
    cli::writeFileAtomically(args.json, text, args.readable);
}

void printSummary(const Analysis& a, FILE* out) {
  std::fprintf(out, "%llu events, %llu calls, %llu threads, %zu functions, %zu shapes, %zu clusters, "
               "%zu ribbons\n",
               static_cast<unsigned long long>(a.events), static_cast<unsigned long long>(a.calls),
               static_cast<unsigned long long>(threadCount(a)), a.functions.size(), a.shapes.size() - 1,
               a.clustering.clusters.size(), a.ribbons.size());
  if (const std::string lost = callsNotAnalysed(a.diagnostics); !lost.empty())
    std::fprintf(out, "%s: see diagnostics\n", lost.c_str());
  if (const std::string loss = inputLossLine(a); !loss.empty())
    std::fprintf(out, "%s\n", loss.c_str());
  if (const std::string filtered = filteredLine(a); !filtered.empty())
    std::fprintf(out, "%s\n", filtered.c_str());
  if (const uint64_t n = a.diagnostics.count(Stat::processes_without_end))
    std::fprintf(out, "LOSS: %llu process(es) ended without a process end (killed, crashed, or still "
                 "running when the input stopped): the events they had not sent yet are lost, how "
                 "many is unknown\n",
                 static_cast<unsigned long long>(n));
  if (const uint64_t n = a.diagnostics.count(Stat::retention_deleted_events))
    std::fprintf(out, "LOSS: %llu events were deleted with the recording's oldest segments by the "
                 "collector's retention: the analysis starts after them (see shapetrace info)\n",
                 static_cast<unsigned long long>(n));
  std::fprintf(out, "\n%-24s %8s %8s %8s | %8s %8s %8s\n", "thread", "shapes", "new", "all",
               "clusters", "new", "all");
  const ThreadLabels labels(a);
  for (const ThreadSummary& t : a.threads) {
    const std::string label = labels(t.key);
    const ThreadCounts& c = t.counts;
    std::fprintf(out, "%-24.24s %8zu %8zu %8zu | %8zu %8zu %8zu\n", label.c_str(),
                 c.shapes_in_thread, c.additional_shapes, c.all_shapes, c.clusters_in_thread,
                 c.additional_clusters, c.all_clusters);
  }
  bool header = false;
  for (size_t i = 0; i < kStatCount; ++i) {
    const auto stat = static_cast<Stat>(i);
    if (a.diagnostics.count(stat) == 0) continue;
    if (!header) std::fprintf(out, "\ndiagnostics:\n");
    header = true;
    std::fprintf(out, "  %-28s %12llu  (%s)\n", std::string(statName(stat)).c_str(),
                 static_cast<unsigned long long>(a.diagnostics.count(stat)),
                 std::string(severityName(statSeverity(stat))).c_str());
  }
  if (const std::string throttled = throttledLines(a); !throttled.empty())
    std::fprintf(out, "\n%s", throttled.c_str());
  if (!a.outliers.empty())
    std::fprintf(out, "\noutliers that lost the most time (%llu found, %zu kept):\n",
                 static_cast<unsigned long long>(a.outliers_found), a.outliers.size());
  for (size_t i = 0; i < a.outliers.size() && i < 10; ++i) {
    const Outlier& o = a.outliers[i];
    std::fprintf(out, "  %s  thread %s at %llu ns: %llu ns (function mean %.0f sd %.0f; shape "
                 "mean %.0f sd %.0f) %s%s\n",
                 shortFunctionName(a.functions[o.function].name).c_str(),
                 threadLabel(a, {o.process, o.thread}).c_str(), static_cast<unsigned long long>(o.start_ns),
                 static_cast<unsigned long long>(o.duration_ns), o.function_mean, o.function_sd,
                 o.shape_mean, o.shape_sd,
                 o.shape_outlier ? "same work, slower" : "did more work (other shape)",
                 o.at_exit ? ", at exit (after main returned)" : "");
  }
}

void analyzeLive(Analyzer& analyzer, const AnalyzeArgs& args) {
  LiveInput input(args.live);
  using Clock = std::chrono::steady_clock;
  const auto started = Clock::now();
  auto last_snapshot = started;
  auto seconds = [](double s) {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
  };
  while (cli::stop_signal.load() == 0 && !input.ended()) {
    const auto now = Clock::now();
    if (args.duration > 0 && now - started >= seconds(args.duration)) break;
    if (args.snapshot_every > 0 && !args.json.empty() && args.json != "-" &&
        now - last_snapshot >= seconds(args.snapshot_every)) {
      input.countLoss(analyzer);
      writeModel(analyzer.snapshot(), args);
      last_snapshot = now;
    }
    // A timeout or the end comes back empty: check the clock, the signal flag and ended().
    input.feed(analyzer, std::chrono::milliseconds(100));
  }
  input.catchUp(analyzer, cli::anotherStopSignal(), "analyze");
  input.countLoss(analyzer);
}

int runAnalyze(const AnalyzeArgs& args) {
  if (args.dir.empty() == args.live.empty())
    throw std::invalid_argument("give either a recording directory or --live ENDPOINT");
  keepFreedMemory();
  AnalysisSettings settings = args.analysis.settings;
  settings.sum_dag_statistics = args.dag;
  Analyzer analyzer(settings, args.analysis.workerCount(), args.analysis.makeSelectedExtensions());
  if (!args.dir.empty()) {
    recording::RecordingReader reader(args.dir, recording::RecordingReader::Pages::kReleaseBehind);
    readRecording(reader, analyzer, "analyze");
  } else {
    cli::installStopHandlers();
    analyzeLive(analyzer, args);
  }
  analyzer.finish();
  const Analysis analysis = analyzer.snapshot();
  if (!args.json.empty()) writeModel(analysis, args);
  if (args.json != "-") printSummary(analysis, stdout);
  return 0;
}

cli::Runner setupAnalyze(CLI::App& command) {
  auto args = std::make_shared<AnalyzeArgs>();
  command.add_option("dir", args->dir, "Recording directory to analyze");
  command.add_option("--live", args->live,
                     "Analyze the live stream the collector publishes at this ZeroMQ endpoint "
                     "(collect --publish); stops at the collector's end marker, on Ctrl-C, SIGTERM "
                     "or after --duration");
  command.add_flag("--readable", args->readable, cli::kReadableHelp);
  command.add_option("--json", args->json,
                     "Write the JSON model (docs/analyzer.md) to this file ('-' for stdout)");
  addAnalysisFlags(command, args->analysis);
  command.add_flag("--distances", args->distances,
                   "Add the distance matrix of the shapes of each base function to the JSON");
  command.add_flag("--dag", args->dag,
                   "Add the exact-sequence DAG nodes (count, sum, sum of squares) to the JSON");
  command.add_option("--duration", args->duration, "Live: stop after this many seconds")
      ->check(CLI::NonNegativeNumber);
  command.add_option("--snapshot-every", args->snapshot_every,
                     "Live: rewrite the --json file with a snapshot this often (seconds)")
      ->check(CLI::NonNegativeNumber);
  return [args] { return runAnalyze(*args); };
}

const cli::Registration analyze{"analyze",
                                "Shapes, clusters, ribbons and outliers of a recording or a live "
                                "stream",
                                setupAnalyze};

} // namespace
} // namespace shapetrace::analyzer
