// The options of every command that runs the analysis (analyze, report, live), declared once so
// that they mean the same thing, with the same checks and help, everywhere.
#pragma once

#include "analysis.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <string>
#include <thread>

namespace shapetrace::analyzer {

struct AnalysisOptions {
  double threshold = 1.5;
  std::string clustering = "appendix-a";
  unsigned jobs = 0; // 0: one per core
  uint32_t timeline_bins = 1024;
  size_t max_outliers = 1000;
  double outlier_sigma = 2.0;
  uint64_t outlier_min_samples = 10;

  AnalysisSettings settings() const {
    AnalysisSettings s;
    s.cluster_threshold = threshold;
    s.method = clustering == "complete-linkage" ? ClusteringMethod::kCompleteLinkage
                                                : ClusteringMethod::kAppendixA;
    s.options.timeline_bins = timeline_bins;
    s.options.max_outliers = max_outliers;
    s.options.outlier_sigma = outlier_sigma;
    s.options.outlier_min_samples = outlier_min_samples;
    s.sum_dag_statistics = false; // the report and the live page do not list the DAG
    return s;
  }
  unsigned workerCount() const {
    return jobs != 0 ? jobs : std::max(1u, std::thread::hardware_concurrency());
  }
};

// Declares the options on `command`, with `options`' current values as defaults.
inline void addAnalysisOptions(CLI::App& command, AnalysisOptions& options) {
  command.add_option("--threshold", options.threshold,
                     "cluster_threshold: largest Shape distance within a cluster")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  command.add_option("--clustering", options.clustering,
                     "appendix-a (the paper's, order-dependent) or complete-linkage "
                     "(order-invariant)")
      ->check(CLI::IsMember({"appendix-a", "complete-linkage"}))
      ->capture_default_str();
  command.add_option("--jobs,-j", options.jobs,
                     "Worker threads (threads of the trace are spread over them); 0 = one per core")
      ->check(CLI::Range(0u, 256u))
      ->capture_default_str();
  command.add_option("--timeline-bins", options.timeline_bins,
                     "Most time bins kept per thread for the occurrence timeline")
      ->check(CLI::Range(2u, 1u << 20))
      ->capture_default_str();
  command.add_option("--max-outliers", options.max_outliers, "Most outliers kept (most extreme)")
      ->capture_default_str();
  command.add_option("--outlier-sigma", options.outlier_sigma,
                     "A call is an outlier above mean + this many standard deviations")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  command.add_option("--outlier-min-samples", options.outlier_min_samples,
                     "Calls of a function (or shape) needed before its outliers are judged")
      ->capture_default_str();
}

} // namespace shapetrace::analyzer
