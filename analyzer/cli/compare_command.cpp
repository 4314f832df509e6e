// `shapetrace compare DIR A [B] [--with DIR2]`: two call sequences aligned by Needleman-Wunsch
// (001's comparison view; docs/summaries.md "Comparing two calls"). A and B each name a call
// instance (THREAD@TIME, outlier:N), a thread (THREAD) or a window of one (THREAD@FROM..TO), in
// the recording DIR, or B in DIR2. Without B, a call is compared with a typical call of its
// function: "why was this call slow".
//
// Both recordings are analysed (the names refer to the analysis); the two sides are read back
// (summaries/sequences.h) as runs of symbols and aligned over the runs when that is cheaper than
// the full table. Exit codes: 0, 1 an error (unreadable recording, a name not in it, an instance
// that does not exist, two recordings of different programs, sequences too long to align), 2 a
// usage error.
#include "analyzer.h"
#include "cli/analysis_flags.h"
#include "cli/command.h"
#include "cli/write_file.h"
#include "extensions/run_info.h"
#include "input.h"
#include "replay.h"
#include "scope.h"
#include "summaries/comparison.h"
#include "summaries/sequences.h"

#include <cstdio>
#include <filesystem>
#include <memory>
#include <set>
#include <stdexcept>
#include <unordered_map>

namespace shapetrace::analyzer {
namespace {

using namespace summaries;

struct CompareArgs {
  std::string dir;
  std::string a, b;
  std::string with;
  std::string form = "calls";
  uint32_t depth = UINT32_MAX;
  summaries::ComparisonOptions options;
  std::string json;
  bool readable = false; // --readable: output files 0644, not 0600
  AnalysisFlags analysis;
};

// One recording, analysed.
struct Side {
  std::unique_ptr<recording::RecordingReader> reader;
  std::unique_ptr<Analyzer> analyzer;
  const RunInfoExtension* run = nullptr;
  Analysis analysis;
  uint64_t run_start = UINT64_MAX;
};

// `full`: the analysis (shapes, outliers); otherwise the recording's names suffice (replay.h).
Side open(const std::string& dir, const AnalysisFlags& flags, bool full) {
  if (!std::filesystem::is_directory(dir))
    throw std::runtime_error(dir + " is not a recording directory");
  Side side;
  side.reader = std::make_unique<recording::RecordingReader>(dir);
  if (!full) {
    RecordingNames names = namesOf(*side.reader, flags.settings);
    side.analysis = std::move(names.analysis);
    side.run_start = names.first_ns;
    warnOfDamage(*side.reader, "compare");
    warnOfLoss(side.analysis, "compare");
    return side;
  }
  std::vector<NamedExtension> extensions;
  auto run = std::make_unique<RunInfoExtension>();
  side.run = run.get();
  extensions.push_back({std::string(RunInfoExtension::kName), std::move(run)});
  side.analyzer = std::make_unique<Analyzer>(flags.settings, flags.workerCount(),
                                             std::move(extensions));
  side.analysis = analyzeRecording(*side.reader, *side.analyzer, "compare");
  side.run_start = side.run->run().firstNs();
  return side;
}

// What a side's text names, as a scope request.
ScopeRequest requestOf(const std::string& spec, uint32_t depth) {
  ScopeRequest r;
  r.depth = depth;
  if (spec.starts_with("outlier:")) {
    r.instance = spec;
    return r;
  }
  const size_t at = spec.rfind('@');
  if (at == std::string::npos) {
    r.thread = spec;
    return r;
  }
  const std::string when = spec.substr(at + 1);
  const size_t dots = when.find("..");
  if (dots == std::string::npos) {
    r.instance = spec;
    return r;
  }
  r.thread = spec.substr(0, at);
  r.from = when.substr(0, dots);
  r.to = when.substr(dots + 2);
  if (r.thread.empty() || r.from.empty() || r.to.empty())
    throw std::invalid_argument("'" + spec + "': a window is THREAD@FROM..TO");
  return r;
}

ComparedSequence collect(const Side& side, const Scope& scope, SymbolForm form) {
  SequenceCollector collector(form);
  replayScope(*side.reader, side.analysis, scope, collector);
  if (collector.sequences() == 0) {
    if (scope.roots == Scope::Roots::kInstance)
      throw std::runtime_error("no call starts at " + std::to_string(scope.instance_ns) +
                               " ns on " + threadLabel(side.analysis, scope.threads.front()));
    throw std::runtime_error("no calls in " + scope.description);
  }
  if (collector.sequences() > 1)
    throw std::runtime_error(scope.description + " is " + std::to_string(collector.sequences()) +
                             " sequences; name one thread or one call");
  ComparedSequence s = collector.take();
  s.label = scope.description;
  return s;
}

int runCompare(const CompareArgs& args) {
  const SymbolForm form = *parseSymbolForm(args.form);
  const bool typical = args.b.empty() || args.b == "typical";
  if (args.a == "typical") throw std::invalid_argument("A names a call; typical is for B");

  const ScopeRequest request_a = requestOf(args.a, args.depth);
  const ScopeRequest request_b = typical ? ScopeRequest{} : requestOf(args.b, args.depth);
  const bool two = !args.with.empty();
  // A typical call is found by its shape: that needs the analysis of B's recording.
  Side first = open(args.dir, args.analysis,
                    needsAnalysis(request_a) || (typical && !two) ||
                        (!two && needsAnalysis(request_b)));
  Side second_owner;
  if (two) second_owner = open(args.with, args.analysis, typical || needsAnalysis(request_b));
  const Side& second = two ? second_owner : first;

  // B's functions in A's index space: by identity across recordings, beyond A's when A has none.
  const Analysis& aa = first.analysis;
  const Analysis& ba = second.analysis;
  std::vector<uint32_t> to_a(ba.functions.size());
  if (two) {
    std::unordered_map<std::string, uint32_t> index;
    for (uint32_t i = 0; i < aa.functions.size(); ++i)
      index.emplace(aa.functions[i].identity, i);
    size_t shared = 0;
    for (uint32_t i = 0; i < ba.functions.size(); ++i) {
      const auto it = index.find(ba.functions[i].identity);
      shared += it != index.end();
      to_a[i] = it != index.end() ? it->second : static_cast<uint32_t>(aa.functions.size() + i);
    }
    if (shared == 0)
      throw std::runtime_error(args.dir + " and " + args.with +
                               " have no function in common: they are runs of different programs");
  } else {
    for (uint32_t i = 0; i < to_a.size(); ++i)
      to_a[i] = i;
  }

  const Scope scope_a = resolveScope(aa, first.run_start, request_a);
  ComparedSequence a = collect(first, scope_a, form);
  Scope scope_b;
  if (typical) {
    if (scope_a.roots != Scope::Roots::kInstance)
      throw std::invalid_argument("give B: a typical call is found for a call (A is " +
                                  scope_a.description + ")");
    const uint32_t function_a = a.info.function;
    uint32_t function_b = function_a;
    if (two) {
      function_b = UINT32_MAX;
      for (uint32_t i = 0; i < ba.functions.size(); ++i)
        if (to_a[i] == function_a) function_b = i;
      if (function_b == UINT32_MAX)
        throw std::runtime_error(args.with + " has no call of " + aa.functions[function_a].name);
    }
    // Across recordings the call's shape is not one of B's: B's most common shape of it.
    const auto found = findTypicalCall(*second.reader, ba, typicalShape(ba, function_b),
                                       a.info.thread, two ? std::nullopt
                                                          : std::optional(a.info.start_ns));
    if (!found)
      throw std::runtime_error("no typical call of " + ba.functions[function_b].name + " in " +
                               (two ? args.with : args.dir));
    scope_b.roots = Scope::Roots::kInstance;
    scope_b.threads = {found->thread};
    scope_b.instance_ns = found->start_ns;
    scope_b.instance_function = function_b;
    scope_b.depth = args.depth;
    scope_b.description = "a typical call of " + ba.functions[function_b].name + " (shape " +
                          std::to_string(found->shape) + ", at " + std::to_string(found->start_ns) +
                          " ns on " + threadLabel(ba, found->thread) + ")";
  } else {
    scope_b = resolveScope(ba, second.run_start, request_b);
  }
  ComparedSequence b = collect(second, scope_b, form);
  if (two) {
    for (summaries::Run& r : b.runs)
      if (r.symbol != kReturnSymbol) {
        const uint32_t f = to_a[symbolFunction(r.symbol)];
        r.symbol = isOpenSymbol(r.symbol) ? enterSymbol(f) : exitSymbol(f);
      }
  }

  const FunctionNamer name = [&](uint32_t f) -> std::string {
    if (f < aa.functions.size()) return aa.functions[f].name;
    if (f - aa.functions.size() < ba.functions.size())
      return ba.functions[f - aa.functions.size()].name;
    return "fn#" + std::to_string(f);
  };
  const Alignment alignment = alignSequences(a, b, args.options);
  if (!args.json.empty()) {
    nlohmann::ordered_json json{{"format", "shapetrace-compare"}, {"version", 1},
                                {"form", symbolFormName(form)}};
    json.update(comparisonJson(a, b, alignment, args.options, name, form));
    std::set<uint32_t> used;
    for (const ComparedSequence* s : {&a, &b})
      for (const summaries::Run& r : s->runs)
        if (r.symbol != kReturnSymbol) used.insert(symbolFunction(r.symbol));
    nlohmann::ordered_json functions = nlohmann::ordered_json::array();
    for (uint32_t f : used)
      functions.push_back({{"id", f}, {"name", name(f)}});
    json["functions"] = std::move(functions);
    const std::string text = json.dump() + "\n";
    if (args.json == "-") std::fwrite(text.data(), 1, text.size(), stdout);
    else cli::writeFileAtomically(args.json, text, args.readable);
  }
  if (args.json != "-")
    std::fputs(comparisonText(a, b, alignment, args.options, name, form).c_str(), stdout);
  return 0;
}

cli::Runner setupCompare(CLI::App& command) {
  auto args = std::make_shared<CompareArgs>();
  command.add_option("dir", args->dir, "Recording directory")->required();
  command.add_option("a", args->a,
                     "A: outlier:N, THREAD@TIME (the outermost call starting then), THREAD, or "
                     "THREAD@FROM..TO (the calls starting in that window); times as --from of "
                     "summarize")
      ->required();
  command.add_option("b", args->b,
                     "B, as A (in --with's recording when given); 'typical' or nothing: a typical "
                     "call of A's function (its usual shape, at most its median time)");
  command.add_option("--with", args->with, "The recording B is in (default: DIR)");
  command.add_option("--form", args->form,
                     "Symbols: calls (a call is its function; the default), string (calls and "
                     "returns), enter-exit")
      ->check(CLI::IsMember({"string", "calls", "enter-exit"}))
      ->capture_default_str();
  command.add_option("--depth", args->depth, "Levels of calls kept below each side's root");
  command.add_option("--match", args->options.scoring.match, "Score of a matched column")
      ->capture_default_str();
  command.add_option("--mismatch", args->options.scoring.mismatch,
                     "Score of a column of two different calls")
      ->capture_default_str();
  command.add_option("--gap", args->options.scoring.gap, "Score of a column with a gap")
      ->capture_default_str();
  command.add_option("--algorithm", args->options.algorithm,
                     "auto (the cheapest exact one), runs (over runs of repeated calls), full "
                     "(the quadratic table), hirschberg (linear memory)")
      ->check(CLI::IsMember({"auto", "runs", "full", "hirschberg"}))
      ->capture_default_str();
  command.add_option("--max-rows", args->options.max_rows, "Most aligned rows written")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  command.add_flag("--readable", args->readable, cli::kReadableHelp);
  command.add_option("--json", args->json,
                     "Write the comparison as JSON (docs/summaries.md) to this file ('-': stdout)");
  addAnalysisFlags(command, args->analysis);
  // The analysis only names shapes, clusters and outliers here: no extension, no timeline.
  command.remove_option(command.get_option("--extensions"));
  command.remove_option(command.get_option("--timeline-bins"));
  return cli::usageErrorsExit2("compare", [args] { return runCompare(*args); });
}

const cli::Registration compareCommand{
    "compare",
    "Align two call sequences (calls, threads, windows; or a call and a typical one) by "
    "Needleman-Wunsch",
    setupCompare};

} // namespace
} // namespace shapetrace::analyzer
