// The options of every command that runs the analysis (analyze, report, live), declared once so
// that they mean the same thing, with the same checks and help, everywhere. They are bound straight
// to an AnalysisSettings, so their defaults are the settings' own (a command may change one before
// declaring them, as report does for the timeline's resolution).
#pragma once

#include "analysis.h"
#include "extension.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <map>
#include <string>
#include <thread>

namespace shapetrace::analyzer {

// Worker threads for `jobs` (0: one per core).
inline unsigned workerCount(unsigned jobs) {
  return jobs != 0 ? jobs : std::max(1u, std::thread::hardware_concurrency());
}

struct AnalysisFlags {
  AnalysisFlags() { settings.sum_dag_statistics = false; } // only `analyze --dag` lists the DAG
  AnalysisSettings settings;
  unsigned jobs = 0;                // 0: one per core
  std::string extensions = "none";  // a selection for selectExtensions()

  unsigned workerCount() const { return analyzer::workerCount(jobs); }
  // The selected extensions, ready to run; throws std::invalid_argument for an unknown name.
  std::vector<NamedExtension> makeSelectedExtensions() const {
    return makeExtensions(selectExtensions(extensions), settings);
  }
};

// Declares the options on `command`, with `flags`' current values as defaults.
inline void addAnalysisFlags(CLI::App& command, AnalysisFlags& flags) {
  AnalysisSettings& s = flags.settings;
  command.add_option("--threshold", s.cluster_threshold,
                     "cluster_threshold: largest Shape distance within a cluster")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  const std::map<std::string, ClusteringMethod> methods{
      {"appendix-a", ClusteringMethod::kAppendixA},
      {"complete-linkage", ClusteringMethod::kCompleteLinkage}};
  // The help names the methods only: CLI11 would also print the map's values, enums of one byte,
  // as raw bytes (NUL, 0x01) in the help text.
  std::string names;
  for (const auto& [name, method] : methods)
    names += (names.empty() ? "" : ",") + name;
  command.add_option("--clustering", s.method,
                     "appendix-a (the paper's, order-dependent) or complete-linkage "
                     "(order-invariant)")
      ->transform(CLI::CheckedTransformer(methods).description("value in {" + names + "}"))
      ->default_str(std::string(clusteringMethodName(s.method)));
  command.add_option("--jobs,-j", flags.jobs,
                     "Worker threads (threads of the trace are spread over them); 0 = one per core")
      ->check(CLI::Range(0u, 256u))
      ->capture_default_str();
  command.add_option("--timeline-bins", s.thread.timeline_bins,
                     "Most time bins kept per thread for the occurrence timeline")
      ->check(CLI::Range(2u, 1u << 20))
      ->capture_default_str();
  command.add_option("--max-outliers", s.thread.max_outliers, "Most outliers kept (most extreme)")
      ->capture_default_str();
  command.add_option("--kept-ended-processes", s.kept_ended_processes,
                     "Ended processes kept whole; past them the first to end are folded into one "
                     "entry, 'N processes folded', their functions merged by name")
      ->capture_default_str();
  command.add_option("--max-depth", s.thread.max_depth,
                     "Calls nested deeper are not analysed (counted as calls_below_max_depth)")
      ->check(CLI::Range(1u, kMaxStackDepth))
      ->capture_default_str();
  command.add_option("--outlier-sigma", s.thread.outlier_sigma,
                     "A call is an outlier above mean + this many standard deviations")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  command.add_option("--outlier-min-samples", s.thread.outlier_min_samples,
                     "Calls of a function (or shape) needed before its outliers are judged")
      ->capture_default_str();
  std::string known;
  for (const ExtensionSpec& spec : extensionSpecs())
    known += "\n  " + std::string(spec.name) + ": " + std::string(spec.description);
  command.add_option("--extensions", flags.extensions,
                     "Analyses beyond the shapes to run, written under \"extensions\" in the "
                     "model: all, none, or names separated by commas:" + known)
      ->check([](const std::string& value) {
        try {
          selectExtensions(value);
          return std::string();
        } catch (const std::invalid_argument& e) {
          return std::string(e.what());
        }
      })
      ->capture_default_str();
}

} // namespace shapetrace::analyzer
