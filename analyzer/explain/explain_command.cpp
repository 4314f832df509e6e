// `shapetrace explain DIR... --input KEY [--function F]` (or `--csv FILE`): why are some requests,
// or some runs, slow? Discriminant regression trees (explain/explain.h, docs/explain.md): the data
// points are the calls of F in one recording, the recordings themselves, or the rows of a table of
// runs; they are clustered into lines of time
// against the input, and a decision tree over the calls and shapes under each point says what
// separates the clusters.
#include "analyzer.h"
#include "cli/analysis_flags.h"
#include "cli/command.h"
#include "cli/write_file.h"
#include "explain/explain.h"
#include "input.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <stdexcept>

namespace shapetrace::analyzer {
namespace {

struct ExplainArgs {
  std::vector<std::string> dirs;
  std::string clusters = "auto";
  std::string method = "klinear";
  std::string kernel = "approximate";
  std::string json;
  bool readable = false; // --readable: output files 0644, not 0600
  std::string inputs_csv; // across runs: DIR,VALUE per line instead of an annotation
  std::string runs_csv;   // a table of runs instead of recordings: id,input,time,f1..fm
  bool no_shapes = false;
  ExplainSettings settings;
  AnalysisFlags analysis;
};

int usage(const std::string& message) {
  std::fprintf(stderr, "shapetrace explain: error: %s\n", message.c_str());
  return 2;
}

// One recording's analysis with the explain extension; its result in the model.
nlohmann::ordered_json explainPass(const std::string& dir, const ExplainSettings& settings,
                                   bool runs, const AnalysisFlags& flags) {
  if (!std::filesystem::is_directory(dir))
    throw std::runtime_error(dir + " is not a recording directory");
  recording::RecordingReader reader(dir);
  std::vector<NamedExtension> extensions;
  extensions.push_back(
      {ExplainExtension::kName,
       std::make_unique<ExplainExtension>(settings, runs, flags.settings.thread.max_depth)});
  // The points' variables are calls and shapes, never clusters of shapes.
  AnalysisSettings analysis_settings = flags.settings;
  analysis_settings.cluster_shapes = false;
  Analyzer analyzer(analysis_settings, flags.workerCount(), std::move(extensions));
  const Analysis analysis = analyzeRecording(reader, analyzer, "explain");
  for (const auto& [name, result] : analysis.extensions)
    if (name == ExplainExtension::kName)
      return result;
  throw std::logic_error("the explain extension did not run");
}

// The inputs CSV: "DIR,VALUE" per line (a first line whose value is not a number is a header
// naming the input). Keys are the directories as written, and their last path component.
struct InputsCsv {
  std::string name = "input";
  std::map<std::string, double> by_dir;
};
InputsCsv readInputsCsv(const std::string& path) {
  std::ifstream in(path);
  if (!in)
    throw std::runtime_error("cannot read " + path);
  InputsCsv csv;
  std::string line;
  for (size_t number = 1; std::getline(in, line); ++number) {
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    if (line.empty())
      continue;
    const size_t comma = line.rfind(',');
    const std::string dir = line.substr(0, comma == std::string::npos ? 0 : comma);
    const std::string value = comma == std::string::npos ? "" : line.substr(comma + 1);
    try {
      size_t used = 0;
      const double v = std::stod(value, &used);
      if (used != value.size() || dir.empty())
        throw std::invalid_argument("");
      csv.by_dir[dir] = v;
      csv.by_dir[std::filesystem::path(dir).filename().string()] = v;
    } catch (const std::exception&) {
      if (number == 1 && comma != std::string::npos) {
        csv.name = value;
        continue;
      }
      throw ExplainError(path + ":" + std::to_string(number) + ": not DIR,VALUE: '" + line + "'");
    }
  }
  return csv;
}

// Across runs: one data point per recording.
nlohmann::ordered_json explainRuns(const ExplainArgs& args) {
  ExplainData data;
  data.unit = "run";
  data.subject = "runs";
  data.input_name = args.settings.input_key;
  std::optional<InputsCsv> csv;
  if (!args.inputs_csv.empty()) {
    csv = readInputsCsv(args.inputs_csv);
    data.input_name = csv->name;
  }
  std::vector<nlohmann::ordered_json> runs;
  std::string program;
  std::string first_dir;
  for (const std::string& dir : args.dirs) {
    nlohmann::ordered_json run = explainPass(dir, args.settings, true, args.analysis);
    if (run.contains("error"))
      throw ExplainError(dir + ": " + run["error"].get<std::string>());
    const std::string executable =
        std::filesystem::path(run["executable"].get<std::string>()).filename().string();
    if (first_dir.empty()) {
      program = executable;
      first_dir = dir;
    } else if (executable != program) {
      throw ExplainError("recordings of different programs: " + first_dir + " is of '" + program +
                         "', " + dir + " of '" + executable + "'");
    }
    if (csv) {
      auto it = csv->by_dir.find(dir);
      if (it == csv->by_dir.end())
        it = csv->by_dir.find(std::filesystem::path(dir).filename().string());
      if (it == csv->by_dir.end())
        throw ExplainError(args.inputs_csv + " has no line for " + dir);
      run["input"] = it->second;
    } else if (run["input"].is_null()) {
      const bool value = ExplainExtension::parseValueInput(args.settings.input_key).has_value();
      throw ExplainError(dir + " has no " + (value ? "value '" : "annotation '") +
                         args.settings.input_key + "' (" + run["keys"].get<std::string>() + ")");
    }
    run["dir"] = dir;
    runs.push_back(std::move(run));
  }
  // Features: every function called in some run, by identity, in name order.
  std::map<std::string, std::pair<std::string, std::vector<std::pair<uint32_t, double>>>> functions;
  const auto n = static_cast<Eigen::Index>(runs.size());
  data.points.inputs.resize(n, 1);
  data.points.times.resize(n);
  for (uint32_t r = 0; r < runs.size(); ++r) {
    data.points.inputs(r, 0) = runs[r]["input"].get<double>();
    data.points.times(r) = runs[r]["span_ns"].get<double>();
    for (const auto& [identity, call] : runs[r]["calls"].items()) {
      auto& entry = functions[identity];
      entry.first = call[0].get<std::string>();
      entry.second.emplace_back(r, call[1].get<double>());
    }
    data.point_refs.push_back({{"recording", runs[r]["dir"]}});
  }
  // Beyond the paper: calls of every shape, matched across runs by structure.
  std::map<std::string, std::pair<std::string, std::vector<std::pair<uint32_t, double>>>> shapes;
  for (uint32_t r = 0; r < runs.size(); ++r)
    if (runs[r].contains("shapes"))
      for (const auto& [key, shape] : runs[r]["shapes"].items()) {
        auto& entry = shapes[key];
        entry.first = shape[0].get<std::string>();
        entry.second.emplace_back(r, shape[1].get<double>());
      }
  data.features.points = runs.size();
  for (const auto& [identity, entry] : functions) {
    const uint32_t f = data.features.add("calls of " + entry.first);
    for (const auto& [row, calls] : entry.second)
      data.features.set(f, row, calls);
    data.feature_refs.push_back({{"kind", "function"}, {"name", entry.first}});
  }
  std::map<std::string, int> described; // shapes that read alike get a number
  for (const auto& [key, entry] : shapes) {
    const int seen = described[entry.first]++;
    const uint32_t f =
        data.features.add("calls of the " + entry.first +
                          (seen == 0 ? "" : " (variant " + std::to_string(seen + 1) + ")"));
    for (const auto& [row, calls] : entry.second)
      data.features.set(f, row, calls);
    data.feature_refs.push_back({{"kind", "shape"}, {"key", key}});
  }
  data.seen = runs.size();
  return explainData(data, args.settings);
}

int report(const ExplainArgs& args, const nlohmann::ordered_json& model);

int runExplain(ExplainArgs& args) {
  ExplainSettings& s = args.settings;
  if (args.clusters == "auto") {
    s.clusters = 0;
  } else {
    try {
      size_t used = 0;
      const unsigned long k = std::stoul(args.clusters, &used);
      if (used != args.clusters.size() || k == 0 || k > 64)
        throw std::invalid_argument("range");
      s.clusters = static_cast<uint32_t>(k);
    } catch (const std::exception&) {
      return usage("--clusters: '" + args.clusters + "' is neither 'auto' nor a number 1..64");
    }
  }
  s.search.method = args.method == "spectral" ? drt::Method::kSpectral : drt::Method::kKLinear;
  s.search.spectral.kernel =
      args.kernel == "exact" ? drt::Kernel::kExact : drt::Kernel::kApproximate;
  s.search.spectral.seed = s.search.klinear.seed = s.search.spectral.alignment.seed = s.tree.seed;
  s.search.spectral.trim = s.search.klinear.trim;
  s.shapes = !args.no_shapes;
  if (!args.runs_csv.empty()) {
    if (!args.dirs.empty() || !args.inputs_csv.empty())
      return usage("--csv is a table of runs: give no recording and no --inputs with it");
    std::ifstream table(args.runs_csv);
    if (!table)
      throw std::runtime_error("cannot read " + args.runs_csv);
    return report(args, explainData(readRunsTable(table, args.runs_csv), s));
  }
  if (args.dirs.empty())
    return usage("give one recording or several (or --csv FILE, a table of runs)");
  const bool across_runs = args.dirs.size() > 1;
  if (!across_runs && s.function.empty())
    return usage("one recording: give --function F, whose calls are the data points (several "
                 "recordings: each run is one)");
  if (across_runs && s.input_key.empty() && args.inputs_csv.empty())
    return usage("several recordings: give --input KEY, the annotation that is each run's input "
                 "(or --inputs FILE.csv)");
  if (!across_runs && !args.inputs_csv.empty())
    return usage("--inputs is for several recordings (one run each)");
  nlohmann::ordered_json model;
  if (across_runs) {
    model = explainRuns(args);
  } else {
    model = explainPass(args.dirs[0], s, false, args.analysis);
    if (model.contains("error"))
      throw ExplainError(model["error"].get<std::string>());
  }
  return report(args, model);
}

// The model as JSON (--json) and as text (unless the JSON goes to stdout).
int report(const ExplainArgs& args, const nlohmann::ordered_json& model) {
  if (!args.json.empty()) {
    // Names come from the input (a table's header, a recording's functions): bytes that are not
    // UTF-8 are replaced (U+FFFD), as the report's page does, rather than failing the command.
    const std::string text =
        model.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
    if (args.json == "-")
      std::fwrite(text.data(), 1, text.size(), stdout);
    else
      cli::writeFileAtomically(args.json, text, args.readable);
  }
  if (args.json != "-")
    std::fputs(describeExplanation(model).c_str(), stdout);
  return 0;
}

cli::Runner setupExplain(CLI::App& command) {
  auto args = std::make_shared<ExplainArgs>();
  ExplainSettings& s = args->settings;
  command.add_option("dirs", args->dirs,
                     "Recording directories: one (its calls of --function are the data points) or "
                     "several (each run is one)");
  command.add_option("--csv", args->runs_csv,
                     "Instead of recordings, a table of runs in the DRT paper's layout: a header "
                     "id,input,time,f1,...,fm, then per run its input, its time (ns) and the "
                     "calls of each function");
  command.add_option("--input", s.input_key,
                     "The annotation key (shapetrace_annotate) whose value is a point's input, or "
                     "FUNC@argN / FUNC@retval: a value recorded at compile time's choice "
                     "(SHAPETRACE_PASS_ARGS) of a call of FUNC under the point (a number: a "
                     "string recorded with /s is refused); without it, a "
                     "call's position among its thread's calls");
  command.add_option("--inputs", args->inputs_csv,
                     "Several recordings: a CSV of DIR,VALUE lines giving each run's input "
                     "(instead of an annotation; a first line DIR,NAME names it)");
  command.add_option("--function", s.function,
                     "Within one run: the function whose calls are the data points (its name, "
                     "its name without parameters, or its mangled name)");
  command
      .add_option("--clusters", args->clusters,
                  "Number of lines, or auto: the smallest number within --max-error "
                  "(the paper's Algorithm 1)")
      ->capture_default_str();
  command.add_option("--max-clusters", s.max_clusters, "auto: the most lines tried")
      ->check(CLI::Range(1u, 64u))
      ->capture_default_str();
  command
      .add_option("--max-error", s.max_error,
                  "auto: the RMS error allowed, as a fraction of the mean time")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  command
      .add_option("--method", args->method,
                  "klinear (Algorithm 2, lines as centroids) or spectral (the alignment kernel)")
      ->check(CLI::IsMember({"klinear", "spectral"}))
      ->capture_default_str();
  command
      .add_option("--kernel", args->kernel,
                  "spectral: approximate (Algorithm 3, quadratic) or exact (cubic)")
      ->check(CLI::IsMember({"approximate", "exact"}))
      ->capture_default_str();
  command
      .add_option("--delta", s.search.spectral.alignment.delta,
                  "spectral: the alignment kernel's tube, its half-width around a line as a "
                  "fraction of the time's range")
      ->check(CLI::Range(1e-9, 1.0))
      ->capture_default_str();
  command
      .add_option("--scale", s.search.spectral.alignment.scale,
                  "spectral: sigma, the similarity of two points is e^(-alpha / sigma)")
      ->check(CLI::Range(1e-9, 1e9))
      ->capture_default_str();
  command
      .add_option("--trim", s.search.klinear.trim,
                  "Fraction of points farthest from their line left out of the fits (klinear: "
                  "of each refit; spectral: of the final lines; 0: the paper's exactly)")
      ->check(CLI::Range(0.0, 0.5))
      ->capture_default_str();
  command
      .add_option("--restarts", s.search.klinear.restarts,
                  "klinear: initial partitions tried (the least squared error wins)")
      ->check(CLI::Range(1u, 10000u))
      ->capture_default_str();
  command.add_option("--tree-depth", s.tree.max_depth, "The decision tree's largest height")
      ->check(CLI::Range(0u, 64u))
      ->capture_default_str();
  command.add_option("--min-leaf", s.tree.min_leaf, "Fewest points on each side of a split")
      ->check(CLI::Range(1u, 1u << 30))
      ->capture_default_str();
  command
      .add_option("--min-gain", s.tree.min_gain,
                  "Least drop of the tree's impurity a split must give, as a fraction of the "
                  "root's (rpart's cp)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  command.add_option("--folds", s.tree.folds, "Cross-validation folds for the tree's accuracy")
      ->check(CLI::Range(2u, 1000u))
      ->capture_default_str();
  command
      .add_option("--seed", s.tree.seed, "Seed of every random choice (restarts, sampling, folds)")
      ->capture_default_str();
  command
      .add_option("--max-points", s.max_points,
                  "Calls kept per thread; beyond, a uniform sample (reservoir)")
      ->check(CLI::Range(1u, 1u << 30))
      ->capture_default_str();
  command.add_flag("--no-shapes", args->no_shapes,
                   "Leave out each call's own shape (each run's shapes) from the auxiliary "
                   "variables (shapes are never clustered here)");
  command.add_flag("--readable", args->readable, cli::kReadableHelp);
  command.add_option("--json", args->json,
                     "Write the explanation as JSON to this file ('-' for "
                     "stdout, without the text)");
  addAnalysisFlags(command, args->analysis);
  command.footer("Exit codes: 0 explained, 1 an error (no such function or annotation, fewer "
                 "points than clusters, recordings of different programs, no K within the "
                 "error bound), 2 a usage error. See docs/explain.md.");
  return [args] { return runExplain(*args); };
}

const cli::Registration explain{"explain",
                                "Why are some requests or runs slow: lines of time against an "
                                "input, and the calls that separate them",
                                setupExplain};

} // namespace
} // namespace shapetrace::analyzer
