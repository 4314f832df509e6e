// `shapetrace summarize DIR | --live ENDPOINT [scope] [--encoding E] [--k N] [--json FILE]
// [--dot FILE]`: how a stretch of execution unfolds, compactly (docs/summaries.md): run-length and
// grammar encodings with repetitions collapsed, the ThreadViewer proposal's summary, k-tail
// automata, N-level and interval compactions.
//
// The scope's names are checked first: against the analysis of the recording (the same Analyzer
// as `analyze`) when it names shapes, clusters or outliers, else against the recording's names
// (replay.h namesOf, a read of its headers); then the scope's threads are read again
// (summaries/sequences.h) into the encoding. A live stream is recorded into a temporary
// directory while it is analysed, and summarised from there when it ends. Exit codes: 0, 1 an error
// (unreadable recording, a name not in it, an instance that does not exist, a scope without calls,
// an unwritable output), 2 a usage error.
#include "analyzer.h"
#include "cli/analysis_flags.h"
#include "cli/command.h"
#include "cli/signals.h"
#include "cli/scope_flags.h"
#include "cli/write_file.h"
#include "extensions/run_info.h"
#include "input.h"
#include "replay.h"
#include "scope.h"
#include "summaries/encoders.h"
#include "summaries/sequences.h"

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <cstdlib>
#include <stdexcept>

namespace shapetrace::analyzer {
namespace {

using namespace summaries;

struct SummarizeArgs {
  std::string dir;
  std::string live;
  double duration = 0;
  ScopeRequest scope;
  std::string encoding = "summary";
  std::string form; // default: the encoding's
  uint64_t k = 0;   // 0: not given
  bool balanced = false;
  uint32_t levels = 3;
  uint32_t intervals = 32;
  summaries::Encoder::TextLimits text;
  std::string json;
  bool readable = false; // --readable: output files 0644, not 0600
  std::string dot;
  std::vector<std::string> with_values; // FUNC@argN
  AnalysisFlags analysis;
};

// --with-values FUNC@argN...: per analysis function index, the argument that names its calls.
std::vector<uint8_t> valuePositions(const Analysis& analysis,
                                    const std::vector<std::string>& choices) {
  std::vector<uint8_t> position(analysis.functions.size(), 0);
  for (const std::string& text : choices) {
    const std::optional<ValueChoice> choice = parseValueChoice(text);
    if (!choice)
      throw std::invalid_argument("--with-values: '" + text + "' is not FUNCTION@argN");
    if (choice->position == 0)
      throw std::invalid_argument("--with-values: '" + text +
                                  "': a call's symbol is written when it enters, before its "
                                  "return value is known; give an argument, FUNCTION@argN");
    for (uint32_t f : selectFunctions(analysis, choice->function)) position[f] = choice->position;
  }
  return position;
}


// A live stream, recorded while it is analysed: the recording is what the summary reads.
std::filesystem::path recordLive(const SummarizeArgs& args, Analyzer& analyzer) {
  namespace fs = std::filesystem;
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = (tmp != nullptr && *tmp != '\0' ? std::string(tmp) : std::string("/tmp")) +
                        "/shapetrace-summarize-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr)
    throw std::runtime_error("cannot create a temporary directory in " + pattern);
  const fs::path dir = fs::path(pattern) / "rec";
  recording::RecordingWriter writer(dir.string());
  LiveInput input(args.live);
  cli::installStopHandlers();
  using Clock = std::chrono::steady_clock;
  const auto started = Clock::now();
  while (cli::stop_signal.load() == 0 && !input.ended()) {
    if (args.duration > 0 &&
        Clock::now() - started >= std::chrono::duration<double>(args.duration))
      break;
    input.feed(analyzer, std::chrono::milliseconds(100), &writer);
  }
  input.catchUp(analyzer, cli::anotherStopSignal(), "summarize", &writer);
  input.countLoss(analyzer);
  if (!writer.close())
    throw std::runtime_error("recording the live stream failed: " + writer.error());
  return dir;
}

EncoderOptions encoderOptions(const SummarizeArgs& args, Encoding encoding) {
  EncoderOptions o;
  o.form = encoding == Encoding::kSummary ? SymbolForm::kEnterExit : SymbolForm::kString;
  if (!args.form.empty()) o.form = *parseSymbolForm(args.form);
  if (encoding == Encoding::kFsa) o.k = args.k == 0 ? 3 : static_cast<uint32_t>(args.k);
  else o.cutoff = args.k;
  if (args.k != 0 && encoding != Encoding::kFsa && encoding != Encoding::kRle &&
      encoding != Encoding::kSequitur)
    throw std::invalid_argument("--k applies to rle, sequitur (the cutoff) and fsa (the tail "
                                "length), not " + args.encoding);
  if (args.balanced && encoding != Encoding::kSequitur)
    throw std::invalid_argument("--balanced applies to the sequitur encoding");
  o.balanced = args.balanced;
  o.levels = args.levels;
  o.intervals = args.intervals;
  return o;
}

void write(const std::string& path, const std::string& text, bool readable) {
  if (path == "-")
    std::fwrite(text.data(), 1, text.size(), stdout);
  else
    cli::writeFileAtomically(path, text, readable);
}

int runSummarize(const SummarizeArgs& args) {
  if (args.dir.empty() == args.live.empty())
    throw std::invalid_argument("give either a recording directory or --live ENDPOINT");
  const Encoding encoding = *parseEncoding(args.encoding);
  if (!args.dot.empty() && encoding != Encoding::kFsa)
    throw std::invalid_argument("--dot writes the fsa encoding's automaton: add --encoding fsa");
  const EncoderOptions options = encoderOptions(args, encoding);

  keepFreedMemory();
  std::vector<NamedExtension> extensions;
  auto run_owner = std::make_unique<RunInfoExtension>();
  const RunInfoExtension* run = run_owner.get();
  extensions.push_back({std::string(RunInfoExtension::kName), std::move(run_owner)});
  Analyzer analyzer(args.analysis.settings, args.analysis.workerCount(), std::move(extensions));
  std::filesystem::path live_recording;
  std::string dir = args.dir;
  if (!args.live.empty()) {
    live_recording = recordLive(args, analyzer);
    dir = live_recording.string();
  } else if (!std::filesystem::is_directory(dir)) {
    throw std::runtime_error(dir + " is not a recording directory");
  }
  struct RemoveAfter {
    std::filesystem::path dir;
    ~RemoveAfter() {
      std::error_code ignored;
      if (!dir.empty()) std::filesystem::remove_all(dir.parent_path(), ignored);
    }
  } remove_after{live_recording};

  recording::RecordingReader reader(dir);
  // The scope's names come from the analysis when it names a shape, cluster or outlier (or the
  // stream was analysed live anyway); otherwise from the recording's names alone, which costs a
  // read of its headers instead of an analysis of every thread.
  Analysis analysis;
  uint64_t run_start = UINT64_MAX;
  if (!args.live.empty()) {
    analyzer.finish();
    analysis = analyzer.snapshot();
    run_start = run->run().firstNs();
  } else if (needsAnalysis(args.scope)) {
    analysis = analyzeRecording(reader, analyzer, "summarize");
    run_start = run->run().firstNs();
  } else {
    RecordingNames names = namesOf(reader, args.analysis.settings);
    analysis = std::move(names.analysis);
    run_start = names.first_ns;
    warnOfDamage(reader, "summarize");
    warnOfLoss(analysis, "summarize");
  }
  const Scope scope = resolveScope(analysis, run_start, args.scope);

  std::optional<ValueSymbols> symbols;
  if (!args.with_values.empty()) symbols.emplace(analysis, valuePositions(analysis, args.with_values));
  Encoder encoder(encoding, options);
  const ReplayStats stats =
      replayScope(reader, analysis, scope, encoder.sink(), symbols ? &*symbols : nullptr);
  if (symbols) {
    // The calls told apart by their values are functions of their own from here on.
    for (const std::string& name : symbols->names()) {
      FunctionSummary f;
      f.name = name;
      analysis.functions.push_back(std::move(f));
    }
    if (symbols->missingCalls() != 0)
      std::cerr << "summarize: " << symbols->missingCalls()
                << " calls of the --with-values functions have no such argument recorded (build "
                   "with SHAPETRACE_PASS_ARGS naming it): written as their function\n";
    if (symbols->cappedCalls() != 0)
      std::cerr << "summarize: " << symbols->cappedCalls() << " calls past "
                << ValueSymbols::kMaxSymbols
                << " distinct values are written as their function\n";
  }
  if (stats.sequences == 0) {
    if (scope.roots == Scope::Roots::kInstance)
      throw std::runtime_error("no call starts at " + std::to_string(scope.instance_ns) +
                               " ns on " + threadLabel(analysis, scope.threads.front()) +
                               (scope.instance_function == UINT32_MAX
                                    ? std::string()
                                    : " (a call of " +
                                          analysis.functions[scope.instance_function].name + ")"));
    throw std::runtime_error("no calls in the scope (" + scope.description + ")");
  }

  const std::string head = "# " + scope.description + ": " + std::to_string(stats.sequences) +
                           (stats.sequences == 1 ? " sequence, " : " sequences, ") +
                           std::to_string(stats.calls) + " calls" +
                           (encoder.symbols() != 0
                                ? ", " + std::to_string(encoder.symbols()) + " symbols (" +
                                      std::string(symbolFormName(options.form)) + " form)"
                                : std::string()) +
                           (stats.truncated != 0 ? ", " + std::to_string(stats.truncated) +
                                                       " cut short by lost events"
                                                 : std::string()) +
                           "\n";
  if (!args.json.empty()) {
    nlohmann::ordered_json json = encoder.json(analysis, args.text.max_sequences);
    json["scope"] = {{"description", scope.description},
                     {"sequences", stats.sequences},
                     {"calls", stats.calls},
                     {"truncated", stats.truncated}};
    write(args.json, json.dump() + "\n", args.readable);
  }
  if (!args.dot.empty()) write(args.dot, encoder.dot(analysis), args.readable);
  if (args.json != "-" && args.dot != "-") {
    std::cout << head;
    encoder.writeText(std::cout, analysis, args.text);
    std::cout.flush();
  }
  return 0;
}

cli::Runner setupSummarize(CLI::App& command) {
  auto args = std::make_shared<SummarizeArgs>();
  command.add_option("dir", args->dir, "Recording directory");
  command.add_option("--live", args->live,
                     "Summarise the live stream the collector publishes at this ZeroMQ endpoint "
                     "(recorded into a temporary directory until the collector's end marker, "
                     "Ctrl-C, SIGTERM or --duration)");
  command.add_option("--duration", args->duration, "Live: stop after this many seconds")
      ->check(CLI::NonNegativeNumber);
  addScopeFlags(command, args->scope);
  command.add_option("--encoding,-e", args->encoding,
                     "rle (run-length, cutoff --k), sequitur (grammar with repetitions "
                     "collapsed, cutoff --k, --balanced), summary (phases, 001), fsa (k-tail "
                     "automaton, k = --k), nlevel (N-level call tuples), intervals (time per "
                     "function per interval)")
      ->check(CLI::IsMember({"rle", "sequitur", "summary", "fsa", "nlevel", "intervals"}))
      ->capture_default_str();
  command.add_option("--form", args->form,
                     "Symbols: string (a call is its function, a return is ∨; the default), calls "
                     "(calls only), enter-exit (+f, -f; the summary's default)")
      ->check(CLI::IsMember({"string", "calls", "enter-exit"}));
  command.add_option("--k", args->k,
                     "rle, sequitur: counts above k are written * (default: none); fsa: the tail "
                     "length (default 3, at most 8)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 62));
  command.add_flag("--balanced", args->balanced,
                   "sequitur: only well-nested rules (002's balanced variant)");
  command.add_option("--levels", args->levels, "nlevel: N, the longest tuple")
      ->check(CLI::Range(1u, 64u))
      ->capture_default_str();
  command.add_option("--intervals", args->intervals, "intervals: at most this many")
      ->check(CLI::Range(2u, 1u << 20))
      ->capture_default_str();
  command.add_option("--max-sequences", args->text.max_sequences,
                     "Most distinct sequences (nlevel: tuples) written")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  command.add_option("--max-runs", args->text.max_runs,
                     "Text output: most runs written per sequence or rule body, and lines per "
                     "summary (the rest counted; 0: all; the JSON has everything)")
      ->capture_default_str();
  command.add_flag("--full-names", args->text.full_names,
                   "Text output: functions by their full demangled names (default: short names, "
                   "made unique with #2, #3...)");
  command.add_option("--with-values", args->with_values,
                     "FUNCTION@argN: a call of FUNCTION whose argN was recorded "
                     "(SHAPETRACE_PASS_ARGS) is the symbol FUNCTION@argN=VALUE, so that calls "
                     "with different values are different symbols (repeatable)");
  command.add_flag("--readable", args->readable, cli::kReadableHelp);
  command.add_option("--json", args->json,
                     "Write the result as JSON (docs/summaries.md) to this file ('-': stdout)");
  command.add_option("--dot", args->dot, "fsa: write the automaton in Graphviz ('-': stdout)");
  addAnalysisFlags(command, args->analysis);
  // The analysis only names shapes, clusters and outliers here: no extension, no timeline.
  command.remove_option(command.get_option("--extensions"));
  command.remove_option(command.get_option("--timeline-bins"));
  return cli::usageErrorsExit2("summarize", [args] {
    if (args->encoding == "fsa" && args->k > kMaxTail)
      throw std::invalid_argument("--k: the tail length is at most " + std::to_string(kMaxTail));
    return runSummarize(*args);
  });
}

const cli::Registration summarizeCommand{
    "summarize",
    "Structure summaries: run-length, grammar (Sequitur), phases, k-tail automata, N-level and "
    "interval compactions of threads, functions, shapes, clusters, calls or windows",
    setupSummarize};

} // namespace
} // namespace shapetrace::analyzer
