// `shapetrace filter DIR --budget 1.2x -o FILE [--keep PATTERN]... [--call-cost NS]
// [--cpu-time SECONDS]`: the rule file (docs/pass.md, "Filters") that brings the cost of recording
// a program like the one recorded within a budget, as Score-P's `scorep-score -f` writes a filter
// from a profile.
//
// The model (docs/analyzer.md, "shapetrace filter"): every recorded call costs the hooks `c` ns
// (--call-cost, default kDefaultCallCostNs, measured by tests/bench/runtime_hooks_bench.py), so the
// run without hooks took P = W - N c, where W is the recording's time (the self time of its timed
// calls, or --cpu-time) and N its calls; recording all but the functions S costs
// (P + (N - calls(S)) c) / P. Functions are left out one at a time, leaves first (a function whose
// every callee is already out is a leaf then), most calls first, shortest first on a tie, until the
// estimate is within the budget; then every choice the budget can do without is taken back, the
// latest first. Never left out: a function called at the root of a thread's stack (the top of its
// shapes), one that --keep names, one that no module table named (no rule could name it).
//
// Exit codes: 0 the file was written (within the budget); 1 an error (unreadable recording, a
// budget that the functions kept alone exceed, times too short for the call cost); 2 a usage error.
#include "analyzer.h"
#include "cli/analysis_flags.h"
#include "cli/command.h"
#include "cli/write_file.h"
#include "duration_text.h"
#include "extensions/callers.h"
#include "function_names.h"
#include "input.h"

#include <fnmatch.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace shapetrace::analyzer {
namespace {

// What one recorded call (enter and exit) costs the program, in ns: docs/BENCHMARKS.md, "Runtime
// hooks" (35.4-39.2 ns per call recorded losslessly) and the Boost.Beast server (17.8 ns per event).
constexpr double kDefaultCallCostNs = 37;

struct FilterArgs {
  std::string dir;
  std::string budget;
  std::string output;
  std::vector<std::string> keep;
  double call_cost_ns = kDefaultCallCostNs;
  double cpu_time_s = 0; // 0: the recording's time
  bool readable = false;
};

// "1.2x" or "1.2": the overhead allowed, as a ratio to the program without hooks.
double parseBudget(const std::string& text) {
  std::string number = text;
  if (!number.empty() && (number.back() == 'x' || number.back() == 'X')) number.pop_back();
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(number, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (number.empty() || used != number.size() || !std::isfinite(value))
    throw std::invalid_argument("--budget: '" + text + "' is not a ratio (e.g. 1.2x)");
  if (value <= 1)
    throw std::invalid_argument("--budget: " + text +
                                " leaves nothing for the hooks: give a ratio above 1 (1.2x: the "
                                "program's time plus 20%)");
  return value;
}

struct FunctionCost {
  uint64_t calls = 0;
  uint64_t measured = 0;
  uint64_t self_ns = 0;
  bool at_root = false;
  std::vector<uint32_t> callees; // other functions it calls, model indices
  bool candidate = false;
  bool excluded = false;
};

// Per model function, from the callers extension's edges.
std::vector<FunctionCost> functionCosts(const Analysis& analysis) {
  std::vector<FunctionCost> costs(analysis.functions.size());
  for (const auto& [name, result] : analysis.extensions) {
    if (name != CallersExtension::kName) continue;
    for (const auto& edge : result["edges"]) {
      FunctionCost& callee = costs.at(edge["callee"].get<uint32_t>());
      callee.calls += edge["calls"].get<uint64_t>();
      callee.measured += edge["measured"].get<uint64_t>();
      callee.self_ns += edge["self_ns"].get<uint64_t>();
      if (edge["caller"].is_null()) {
        callee.at_root = true;
        continue;
      }
      const uint32_t caller = edge["caller"].get<uint32_t>(), index = edge["callee"].get<uint32_t>();
      if (caller != index) costs.at(caller).callees.push_back(index);
    }
  }
  return costs;
}

bool matchesGlob(const std::string& pattern, const std::string& text) {
  return !text.empty() && ::fnmatch(pattern.c_str(), text.c_str(), 0) == 0;
}

// A name a rule file's `exclude` matches exactly: a mangled (or C) name has no glob characters.
bool ruleSafe(const std::string& name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '.' || c == '$';
  });
}

void markCandidates(const Analysis& analysis, std::vector<FunctionCost>& costs,
                    const std::vector<std::string>& keep) {
  std::vector<bool> keep_used(keep.size(), false);
  for (size_t f = 0; f < costs.size(); ++f) {
    const FunctionSummary& function = analysis.functions[f];
    bool kept = false;
    for (size_t k = 0; k < keep.size(); ++k)
      if (matchesGlob(keep[k], function.name) || matchesGlob(keep[k], function.mangled))
        kept = keep_used[k] = true;
    costs[f].candidate = !kept && !costs[f].at_root && costs[f].calls != 0 && function.known &&
                         ruleSafe(function.identity);
  }
  for (size_t k = 0; k < keep.size(); ++k)
    if (!keep_used[k])
      throw std::runtime_error("--keep " + keep[k] + ": no function of the recording matches");
}

bool isLeaf(const std::vector<FunctionCost>& costs, const FunctionCost& function) {
  return std::none_of(function.callees.begin(), function.callees.end(),
                      [&](uint32_t callee) { return !costs[callee].excluded; });
}

// The next function to leave out: a leaf when one is left, the most calls, the shortest.
uint32_t nextChoice(const std::vector<FunctionCost>& costs) {
  uint32_t best = UINT32_MAX;
  bool best_leaf = false;
  for (uint32_t f = 0; f < costs.size(); ++f) {
    const FunctionCost& c = costs[f];
    if (!c.candidate || c.excluded) continue;
    const bool leaf = isLeaf(costs, c);
    if (best != UINT32_MAX) {
      const FunctionCost& b = costs[best];
      if (leaf != best_leaf) {
        if (!leaf) continue;
      } else if (c.calls != b.calls) {
        if (c.calls < b.calls) continue;
      } else if (c.self_ns * b.measured >= b.self_ns * c.measured) {
        continue; // not shorter per call (cross-multiplied means)
      }
    }
    best = f;
    best_leaf = leaf;
  }
  return best;
}

struct Estimate {
  double program_ns = 0; // P: the run without hooks
  uint64_t calls = 0;    // N
  double call_cost_ns = 0;
  double overhead(uint64_t calls_left_out) const {
    return (program_ns + double(calls - calls_left_out) * call_cost_ns) / program_ns;
  }
};

// The functions to leave out, in the order chosen.
std::vector<uint32_t> choose(std::vector<FunctionCost>& costs, const Estimate& estimate,
                             double budget) {
  std::vector<uint32_t> chosen;
  uint64_t left_out = 0;
  while (estimate.overhead(left_out) > budget) {
    const uint32_t next = nextChoice(costs);
    if (next == UINT32_MAX) break;
    costs[next].excluded = true;
    left_out += costs[next].calls;
    chosen.push_back(next);
  }
  for (size_t i = chosen.size(); i-- > 0;) {
    const uint64_t without = left_out - costs[chosen[i]].calls;
    if (estimate.overhead(without) > budget) continue;
    costs[chosen[i]].excluded = false;
    left_out = without;
    chosen.erase(chosen.begin() + static_cast<std::ptrdiff_t>(i));
  }
  return chosen;
}

std::string ratio(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2fx", value);
  return text;
}

std::string percent(double part, double whole) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f%%", whole > 0 ? 100 * part / whole : 0.0);
  return text;
}

std::string ruleFile(const FilterArgs& args, const Analysis& analysis,
                     const std::vector<FunctionCost>& costs, const std::vector<uint32_t>& chosen,
                     double budget, double expected) {
  std::string text = "# shapetrace filter " + args.dir + " --budget " + args.budget +
                     ": expected overhead " + ratio(expected) + " (budget " + ratio(budget) +
                     ")\n# Use with SHAPETRACE_PASS_FILTER=<this file> (docs/pass.md, "
                     "\"Filters\").\n";
  for (uint32_t f : chosen) {
    const FunctionCost& c = costs[f];
    text += "# " + analysis.functions[f].name + ": " + std::to_string(c.calls) + " calls, " +
            std::to_string(c.measured != 0 ? c.self_ns / c.measured : 0) + " ns self per call\n";
    text += "exclude " + analysis.functions[f].identity + "\n";
  }
  return text;
}

int runFilter(const FilterArgs& args) {
  const double budget = parseBudget(args.budget);
  if (!std::filesystem::is_directory(args.dir))
    throw std::runtime_error(args.dir + " is not a recording directory");
  recording::RecordingReader reader(args.dir);
  std::vector<NamedExtension> extensions;
  extensions.push_back(
      {std::string(CallersExtension::kName), std::make_unique<CallersExtension>()});
  AnalysisSettings settings;
  settings.sum_dag_statistics = false;
  settings.cluster_shapes = false; // only calls and times are read
  Analyzer analyzer(settings, workerCount(0), std::move(extensions));
  const Analysis analysis = analyzeRecording(reader, analyzer, "filter");
  warnOfLoss(analysis, "filter");

  std::vector<FunctionCost> costs = functionCosts(analysis);
  markCandidates(analysis, costs, args.keep);
  Estimate estimate;
  estimate.call_cost_ns = args.call_cost_ns;
  uint64_t traced_ns = 0;
  for (const FunctionCost& c : costs) {
    estimate.calls += c.calls;
    traced_ns += c.self_ns;
  }
  if (estimate.calls == 0) throw std::runtime_error(args.dir + " holds no calls");
  const double run_ns = args.cpu_time_s > 0 ? args.cpu_time_s * 1e9 : double(traced_ns);
  estimate.program_ns = run_ns - double(estimate.calls) * args.call_cost_ns;
  if (estimate.program_ns <= 0)
    throw std::runtime_error(
        "the hooks' cost of " + std::to_string(estimate.calls) + " calls at " +
        describeNs(args.call_cost_ns) + " each exceeds the run's " +
        describeNs(run_ns) +
        (args.cpu_time_s > 0 ? " (--cpu-time)" : " (the self time of its timed calls)") +
        ": give a lower --call-cost, or --cpu-time");

  const std::vector<uint32_t> chosen = choose(costs, estimate, budget);
  uint64_t calls_out = 0, self_out = 0;
  for (uint32_t f : chosen) {
    calls_out += costs[f].calls;
    self_out += costs[f].self_ns;
  }
  const double expected = estimate.overhead(calls_out);
  if (expected > budget)
    throw std::runtime_error("no filter reaches " + ratio(budget) + ": with every function that "
                             "may be left out left out, recording costs " + ratio(expected) +
                             " (the functions kept: called at a thread's root, named by --keep, "
                             "or unnamed)");

  cli::writeFileAtomically(args.output,
                           ruleFile(args, analysis, costs, chosen, budget, expected),
                           args.readable);
  std::printf("%s: %s calls of %zu functions in %s; the hooks at %s a call\n", args.dir.c_str(),
              std::to_string(estimate.calls).c_str(),
              static_cast<size_t>(std::count_if(
                  analysis.functions.begin(), analysis.functions.end(),
                  [](const FunctionSummary& f) { return f.calls > 0; })), // not those left out
              describeNs(run_ns).c_str(),
              describeNs(args.call_cost_ns).c_str());
  std::printf("estimated overhead recording every function: %s\n",
              ratio(estimate.overhead(0)).c_str());
  std::printf("left out: %zu functions, %s calls (%s of the calls), %s of the recorded self time\n",
              chosen.size(), std::to_string(calls_out).c_str(),
              percent(double(calls_out), double(estimate.calls)).c_str(),
              percent(double(self_out), double(traced_ns)).c_str());
  std::printf("expected overhead with %s: %s (budget %s)\n", args.output.c_str(),
              ratio(expected).c_str(), ratio(budget).c_str());
  for (uint32_t f : chosen)
    std::printf("  %12s calls %10s self/call  %s\n", std::to_string(costs[f].calls).c_str(),
                describeNs(costs[f].measured != 0
                               ? double(costs[f].self_ns) / double(costs[f].measured)
                               : 0)
                    .c_str(),
                shortFunctionName(analysis.functions[f].name).c_str());
  return 0;
}

cli::Runner setupFilter(CLI::App& command) {
  auto args = std::make_shared<FilterArgs>();
  command.add_option("dir", args->dir, "Recording directory")->required();
  command.add_option("--budget", args->budget,
                     "The overhead allowed, as a ratio to the program without hooks (1.2x: "
                     "20% more time)")
      ->required();
  command.add_option("--output,-o", args->output,
                     "The rule file to write (SHAPETRACE_PASS_FILTER, docs/pass.md)")
      ->required();
  command.add_option("--keep", args->keep,
                     "Never leave out the functions this glob matches (demangled name with its "
                     "parameters, or mangled name); repeatable")
      ->allow_extra_args(false);
  command.add_option("--call-cost", args->call_cost_ns,
                     "What the hooks cost per recorded call, in ns (docs/BENCHMARKS.md, "
                     "\"Runtime hooks\")")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  command.add_option("--cpu-time", args->cpu_time_s,
                     "The recorded run's CPU time in seconds (user + system), instead of the "
                     "self time of its calls: for a program whose threads wait inside traced "
                     "functions")
      ->check(CLI::PositiveNumber);
  command.add_flag("--readable", args->readable, cli::kReadableHelp);
  return cli::usageErrorsExit2("filter", [args] { return runFilter(*args); });
}

const cli::Registration filterCommand{
    "filter",
    "Write the rule file that brings recording's overhead within a budget (leaves out the "
    "most-called short functions)",
    setupFilter};

} // namespace
} // namespace shapetrace::analyzer
