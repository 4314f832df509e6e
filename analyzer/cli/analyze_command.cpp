// `shapetrace analyze DIR | --live ENDPOINT`: shapes, clusters, ribbons, statistics and outliers of
// a recording or of a live stream, as a terminal summary and as the JSON model (docs/analyzer.md).
//
// A recording is read with the collector's RecordingReader; a live stream with the collector's
// Subscriber on its --publish endpoint (sequence-numbered items, heartbeats, end marker; items the
// subscriber missed are counted). Both feed the same Analyzer.
#include "analyzer.h"
#include "cli/analysis_options.h"
#include "cli/command.h"
#include "fanout.h"
#include "model_json.h"
#include "recording/recording.h"
#include "wire/codec.h"
#include "wire/format_error.h"

#include <zmq.hpp>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <thread>

namespace shapetrace::analyzer {
namespace {

struct AnalyzeOptions {
  std::string dir;
  std::string live;
  std::string json;
  AnalysisOptions analysis;
  bool distances = false;
  bool dag = false;
  double duration = 0;
  double snapshot_every = 0;
};

std::atomic<bool> g_stop{false};
void onSignal(int) { g_stop.store(true); }

void writeModel(const Analysis& analysis, const AnalyzeOptions& options) {
  // Compact: the timeline alone is hundreds of thousands of cells, three times the bytes when
  // indented. `jq . FILE` shows it indented.
  const std::string text = toJson(analysis, ModelOptions{options.distances, options.dag}).dump() + "\n";
  if (options.json == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
    return;
  }
  // Write a sibling file and rename it, so a reader (or a live snapshot) never sees half a model.
  const std::string partial = options.json + ".partial";
  {
    std::ofstream out(partial, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error("cannot write " + partial);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    if (!out.flush()) throw std::runtime_error("cannot write " + partial);
  }
  if (std::rename(partial.c_str(), options.json.c_str()) != 0)
    throw std::runtime_error("cannot rename " + partial + " to " + options.json);
}

// "worker-0 (13789)"; the process key is added only when the trace holds several processes.
std::string threadLabel(const Analysis& a, uint64_t process, uint32_t thread) {
  bool several_processes = false;
  std::string name;
  for (const ThreadSummary& t : a.threads) {
    several_processes |= t.key.process != a.threads.front().key.process;
    if (t.key.process == process && t.key.thread == thread) name = t.name;
  }
  std::string label = name.empty() ? std::to_string(thread) : name + " (" + std::to_string(thread) + ")";
  return several_processes ? std::to_string(process) + ":" + label : label;
}

void printSummary(const Analysis& a, FILE* out) {
  std::fprintf(out, "%llu events, %llu calls, %zu threads, %zu functions, %zu shapes, %zu clusters, "
               "%zu ribbons\n",
               static_cast<unsigned long long>(a.events), static_cast<unsigned long long>(a.calls),
               a.threads.size(), a.functions.size(), a.shapes.size() - 1,
               a.clustering.clusters.size(), a.ribbons.size());
  std::fprintf(out, "\n%-24s %8s %8s %8s | %8s %8s %8s\n", "thread", "shapes", "new", "all",
               "clusters", "new", "all");
  for (const ThreadSummary& t : a.threads) {
    const std::string label = threadLabel(a, t.key.process, t.key.thread);
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
  if (!a.outliers.empty()) std::fprintf(out, "\nmost extreme outliers:\n");
  for (size_t i = 0; i < a.outliers.size() && i < 10; ++i) {
    const Outlier& o = a.outliers[i];
    std::fprintf(out, "  %s  thread %s at %llu ns: %llu ns (function mean %.0f sd %.0f; shape "
                 "mean %.0f sd %.0f) %s\n",
                 a.functions[o.function].name.c_str(),
                 threadLabel(a, o.process, o.thread).c_str(), static_cast<unsigned long long>(o.start_ns),
                 static_cast<unsigned long long>(o.duration_ns), o.function_mean, o.function_sd,
                 o.shape_mean, o.shape_sd,
                 o.shape_outlier ? "same work, slower" : "did more work (other shape)");
  }
}

void analyzeRecording(Analyzer& analyzer, const std::string& dir) {
  recording::RecordingReader reader(dir);
  while (auto item = reader.nextItem())
    analyzer.consume(std::move(*item));
  analyzer.count(Stat::recording_damage, reader.damage().size());
  analyzer.count(Stat::undecodable_messages, reader.undecodable());
  for (const recording::Damage& d : reader.damage())
    std::fprintf(stderr, "shapetrace analyze: warning: segment %u: %s at offset %llu (%llu bytes)\n",
                 d.segment, recording::damageKindName(d.kind),
                 static_cast<unsigned long long>(d.offset),
                 static_cast<unsigned long long>(d.length));
}

void analyzeLive(Analyzer& analyzer, const AnalyzeOptions& options) {
  zmq::context_t context;
  const char* server_key = std::getenv("SHAPETRACE_CURVE_SERVER_KEY");
  collector::Subscriber subscriber(context, options.live, server_key ? server_key : "");
  using Clock = std::chrono::steady_clock;
  const auto started = Clock::now();
  auto last_snapshot = started;
  auto seconds = [](double s) {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
  };
  uint64_t missed = 0, malformed = 0;
  // The subscriber's loss counters, reported as the analyzer's own diagnostics.
  auto countLoss = [&] {
    analyzer.count(Stat::live_items_missed, subscriber.missed() - missed);
    analyzer.count(Stat::undecodable_messages, subscriber.malformed() - malformed);
    missed = subscriber.missed();
    malformed = subscriber.malformed();
  };
  while (!g_stop.load() && !subscriber.ended()) {
    const auto now = Clock::now();
    if (options.duration > 0 && now - started >= seconds(options.duration)) break;
    if (options.snapshot_every > 0 && !options.json.empty() && options.json != "-" &&
        now - last_snapshot >= seconds(options.snapshot_every)) {
      countLoss();
      writeModel(analyzer.snapshot(), options);
      last_snapshot = now;
    }
    auto item = subscriber.receive(std::chrono::milliseconds(100));
    if (!item) continue; // timeout or end: check the clock, the signal flag and ended()
    try {
      // decodeItem copies only when the message is not 8-byte aligned.
      analyzer.consume(wire::decodeItem(std::span(
          static_cast<const std::byte*>(item->message.data()), item->message.size())));
    } catch (const wire::FormatError&) {
      analyzer.count(Stat::undecodable_messages);
    }
  }
  countLoss();
}

int runAnalyze(const AnalyzeOptions& options) {
  if (options.dir.empty() == options.live.empty())
    throw std::invalid_argument("give either a recording directory or --live ENDPOINT");
  keepFreedMemory();
  AnalysisSettings settings = options.analysis.settings();
  settings.sum_dag_statistics = options.dag;
  Analyzer analyzer(settings, options.analysis.workerCount());
  if (!options.dir.empty()) {
    analyzeRecording(analyzer, options.dir);
  } else {
    std::signal(SIGINT, onSignal);
    std::signal(SIGTERM, onSignal);
    analyzeLive(analyzer, options);
  }
  analyzer.finish();
  const Analysis analysis = analyzer.snapshot();
  if (!options.json.empty()) writeModel(analysis, options);
  if (options.json != "-") printSummary(analysis, stdout);
  return 0;
}

cli::Runner setupAnalyze(CLI::App& command) {
  auto options = std::make_shared<AnalyzeOptions>();
  command.add_option("dir", options->dir, "Recording directory to analyze");
  command.add_option("--live", options->live,
                     "Analyze the live stream the collector publishes at this ZeroMQ endpoint "
                     "(collect --publish); stops at the collector's end marker, on Ctrl-C, SIGTERM "
                     "or after --duration");
  command.add_option("--json", options->json,
                     "Write the JSON model (docs/analyzer.md) to this file ('-' for stdout)");
  addAnalysisOptions(command, options->analysis);
  command.add_flag("--distances", options->distances,
                   "Add the distance matrix of the shapes of each base function to the JSON");
  command.add_flag("--dag", options->dag,
                   "Add the exact-sequence DAG nodes (count, sum, sum of squares) to the JSON");
  command.add_option("--duration", options->duration, "Live: stop after this many seconds")
      ->check(CLI::NonNegativeNumber);
  command.add_option("--snapshot-every", options->snapshot_every,
                     "Live: rewrite the --json file with a snapshot this often (seconds)")
      ->check(CLI::NonNegativeNumber);
  return [options] { return runAnalyze(*options); };
}

const cli::Registration analyze{"analyze",
                                "Shapes, clusters, ribbons and outliers of a recording or a live "
                                "stream",
                                setupAnalyze};

} // namespace
} // namespace shapetrace::analyzer
