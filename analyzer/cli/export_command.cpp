// `shapetrace export DIR --format folded|speedscope|pprof|perfetto [-o FILE] [scope]`: the run's
// exact call data in the formats performance engineers' tools read (export/exports.h).
//
// The recording goes through the same Analyzer as `analyze` (input.h), with the "flame" extension
// for the stack formats and a TraceCapture for the per-call ones. A scope beyond whole threads
// (the options of scope.h: a function's, shape's or cluster's calls, one call, a window, a depth)
// is read back from the recording instead (summaries/sequences.h), as `summarize` reads it. Exit
// codes: 0 written, 1 an error (unreadable recording, nothing in the scope, a name not in the
// recording, unwritable output), 2 a usage error.
#include "analyzer.h"
#include "cli/analysis_flags.h"
#include "cli/command.h"
#include "cli/scope_flags.h"
#include "cli/write_file.h"
#include "extensions/run_info.h"
#include "replay.h"
#include "export/scoped_calls.h"
#include "summaries/sequences.h"
#include "export/exports.h"
#include "flame/flame_extension.h"
#include "input.h"
#include "scope.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <iostream>
#include <memory>
#include <thread>
#include <stdexcept>

namespace shapetrace::analyzer {
namespace {

struct ExportArgs {
  std::string dir;
  std::string format;
  std::string output = "-";
  bool readable = false; // --readable: output files 0644, not 0600
  ScopeRequest scope;
  std::string fold = "none";
  unsigned jobs = 0;
};

// Whether the scope is more than a choice of threads.
bool beyondThreads(const ScopeRequest& r) {
  return !r.function.empty() || !r.shape.empty() || !r.cluster.empty() || !r.instance.empty() ||
         !r.from.empty() || !r.to.empty() || r.depth != UINT32_MAX;
}

void writeOutput(const ExportArgs& args, const std::function<void(std::ostream&)>& write) {
  if (args.output == "-") {
    write(std::cout);
    std::cout.flush();
  } else {
    cli::writeFileAtomically(args.output, write, args.readable);
  }
}

// The recording's wall time, first event to last, as `shapetrace info` prints it: pprof's duration.
uint64_t recordingSpanNs(recording::RecordingReader& reader) {
  const uint64_t start = recordingStartNs(reader), end = recordingEndNs(reader);
  return end > start ? end - start : 0;
}

int exportScope(const ExportArgs& args, bool per_call) {
  recording::RecordingReader reader(args.dir);
  Analysis analysis;
  uint64_t run_start = UINT64_MAX;
  std::map<uint64_t, uint32_t> pids;
  if (needsAnalysis(args.scope)) {
    std::vector<NamedExtension> extensions;
    auto run = std::make_unique<RunInfoExtension>();
    const RunInfoExtension* info = run.get();
    extensions.push_back({std::string(RunInfoExtension::kName), std::move(run)});
    AnalysisSettings settings;
    settings.sum_dag_statistics = false;
    Analyzer analyzer(settings, workerCount(args.jobs), std::move(extensions));
    analysis = analyzeRecording(reader, analyzer, "export");
    run_start = info->run().firstNs();
    pids = info->run().pids();
  } else {
    RecordingNames names = namesOf(reader, AnalysisSettings{});
    analysis = std::move(names.analysis);
    run_start = names.first_ns;
    pids = std::move(names.pids);
    warnOfDamage(reader, "export");
    warnOfLoss(analysis, "export");
  }
  const Scope scope = resolveScope(analysis, run_start, args.scope);
  exports::ScopedCalls calls(per_call);
  const summaries::ReplayStats stats = summaries::replayScope(reader, analysis, scope, calls);
  if (stats.calls == 0) throw std::runtime_error(scope.description + " has no calls to export");
  if (per_call) {
    auto traces = std::make_shared<std::vector<exports::ThreadTrace>>(std::move(calls.traces()));
    for (exports::ThreadTrace& t : *traces) {
      if (const auto it = pids.find(t.key.process); it != pids.end()) t.pid = it->second;
      for (const ThreadSummary& s : analysis.threads)
        if (s.key == t.key) t.name = s.name;
    }
    if (args.format == "speedscope")
      writeOutput(args, [&](std::ostream& out) {
        exports::speedscope(out, *traces, analysis, args.dir);
      });
    else
      writeOutput(args, [&](std::ostream& out) { exports::perfetto(out, *traces, analysis); });
    return 0;
  }
  FlameTree tree = std::move(calls.tree());
  if (args.fold == "direct") tree = tree.folded(RecursionFold::kDirect);
  if (args.fold == "indirect") tree = tree.folded(RecursionFold::kIndirect);
  const std::string text = args.format == "folded"
                               ? exports::folded(tree, analysis)
                               : exports::pprof(tree, analysis, recordingSpanNs(reader));
  writeOutput(args, [&](std::ostream& out) { out << text; });
  return 0;
}

int runExport(const ExportArgs& args) {
  const bool binary = args.format == "pprof" || args.format == "perfetto";
  if (binary && args.output == "-" && isatty(STDOUT_FILENO)) {
    std::fprintf(stderr, "shapetrace export: %s is binary: give -o FILE or redirect stdout\n",
                 args.format.c_str());
    return 2;
  }
  const bool per_call = args.format == "speedscope" || args.format == "perfetto";
  if (beyondThreads(args.scope)) return exportScope(args, per_call);
  std::vector<NamedExtension> extensions;
  // The exports write trees and calls, not time windows: no time slices (flame_slices.h).
  auto flame_owner =
      std::make_unique<FlameExtension>(FlameExtension::kDefaultMaxNodes, kDefaultMaxDepth, 0);
  const FlameExtension* flame = flame_owner.get();
  extensions.push_back({std::string(FlameExtension::kName), std::move(flame_owner)});
  exports::TraceCapture* capture = nullptr;
  if (per_call) {
    auto capture_owner = std::make_unique<exports::TraceCapture>();
    capture = capture_owner.get();
    extensions.push_back({"trace_capture", std::move(capture_owner)});
  }
  AnalysisSettings settings;
  settings.sum_dag_statistics = false;
  Analyzer analyzer(settings, workerCount(args.jobs), std::move(extensions));
  recording::RecordingReader reader(args.dir);
  Analysis analysis = analyzeRecording(reader, analyzer, "export");
  FunctionIndex functions(analysis, nullptr); // every function used is in the model by now

  std::vector<ThreadKey> threads;
  if (!args.scope.thread.empty()) threads = selectThreads(analysis, args.scope.thread);
  auto inScope = [&](const ThreadKey& key) {
    return threads.empty() || std::find(threads.begin(), threads.end(), key) != threads.end();
  };
  const std::string scope =
      args.scope.thread.empty() ? "the recording" : "thread '" + args.scope.thread + "'";

  std::function<void(std::ostream&)> write;
  if (per_call) {
    auto traces = std::make_shared<std::vector<exports::ThreadTrace>>();
    for (auto& t : capture->takeTraces(analysis, functions))
      if (inScope(t.key) && !t.events.empty()) traces->push_back(std::move(t));
    if (traces->empty()) throw std::runtime_error(scope + " has no calls to export");
    if (args.format == "speedscope")
      write = [&, traces](std::ostream& out) { exports::speedscope(out, *traces, analysis, args.dir); };
    else
      write = [&, traces](std::ostream& out) { exports::perfetto(out, *traces, analysis); };
  } else {
    const MergedFlame merged = flame->merged(functions);
    FlameTree tree;
    if (threads.empty()) {
      tree = merged.tree;
    } else {
      // The selected threads' own trees, merged.
      for (const MergedFlame::Thread& t : merged.threads) {
        if (!inScope(t.key)) continue;
        std::vector<uint32_t> image(t.tree.size(), FlameTree::kRoot);
        for (uint32_t id = 1; id < t.tree.size(); ++id) {
          image[id] = tree.child(image[t.tree[id].parent], t.tree[id].function);
          tree[image[id]].add(t.tree[id]);
        }
      }
    }
    if (args.fold == "direct") tree = tree.folded(RecursionFold::kDirect);
    if (args.fold == "indirect") tree = tree.folded(RecursionFold::kIndirect);
    uint64_t calls = 0;
    for (const FlameNode& n : tree.nodes())
      calls += n.calls;
    if (calls == 0) throw std::runtime_error(scope + " has no finished calls to export");
    if (merged.truncated_calls != 0)
      std::fprintf(stderr,
                   "shapetrace export: warning: %llu calls past the flame model's bound of %zu "
                   "stacks per thread count as their callers' own time\n",
                   static_cast<unsigned long long>(merged.truncated_calls),
                   FlameExtension::kDefaultMaxNodes);
    auto text = std::make_shared<std::string>(
        args.format == "folded" ? exports::folded(tree, analysis)
                                : exports::pprof(tree, analysis, recordingSpanNs(reader)));
    write = [text](std::ostream& out) { out << *text; };
  }
  writeOutput(args, write);
  return 0;
}

cli::Runner setupExport(CLI::App& command) {
  auto args = std::make_shared<ExportArgs>();
  command.add_option("dir", args->dir, "Recording directory")->required();
  command.add_option("--format,-f", args->format,
                     "folded (Brendan Gregg's stacks, self ns), speedscope (evented, per "
                     "thread), pprof (gzipped profile.proto: calls, total ns, self ns per stack), "
                     "perfetto (native protobuf trace, one slice per call)")
      ->required()
      ->check(CLI::IsMember({"folded", "speedscope", "pprof", "perfetto"}));
  command.add_flag("--readable", args->readable, cli::kReadableHelp);
  command.add_option("--output,-o", args->output, "Output file ('-' for stdout)")
      ->capture_default_str();
  addScopeFlags(command, args->scope);
  command.add_option("--fold", args->fold,
                     "folded and pprof: fold recursion (003): none, direct (f calling f), "
                     "indirect (any repeat of a function on the stack, into its top-most frame)")
      ->check(CLI::IsMember({"none", "direct", "indirect"}))
      ->capture_default_str();
  command.add_option("--jobs,-j", args->jobs, "Worker threads; 0 = one per core")
      ->check(CLI::Range(0u, 256u));
  return cli::usageErrorsExit2("export", [args] { return runExport(*args); });
}

const cli::Registration exportCommand{
    "export", "Export exact call data: folded stacks, speedscope, pprof, Perfetto", setupExport};

} // namespace
} // namespace shapetrace::analyzer
