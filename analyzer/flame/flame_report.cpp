#include "flame/flame_report.h"

#include "flame/flame_extension.h"
#include "recording/recording.h"

#include <cstdio>

namespace shapetrace::analyzer::report {

void FlameReportPart::addFlags(CLI::App& command) {
  command.add_option("--flame-scope-events", limits_.max_events,
                     "Events read back for the flame graphs of clusters and of outliers against "
                     "typical calls, each thread from its start for its share (0: none)")
      ->capture_default_str();
  command.add_option("--flame-scope-clusters", limits_.max_clusters,
                     "Clusters with the most time that get a flame graph of their calls")
      ->capture_default_str();
  command.add_option("--flame-scope-shapes", limits_.max_shapes,
                     "Shapes of those clusters (cluster by cluster) that get a flame graph of their "
                     "calls")
      ->capture_default_str();
  command.add_option("--flame-scope-functions", limits_.max_functions,
                     "Functions with the most outliers that get flame graphs of their outlier and "
                     "typical calls")
      ->capture_default_str();
  command.add_option("--flame-scope-total-nodes", limits_.max_total_nodes,
                     "Nodes of all the scoped flame graphs embedded (bounds the page's size; "
                     "clusters first, then outlier functions, then shapes)")
      ->capture_default_str();
  command.add_option("--flame-scope-nodes", limits_.max_nodes,
                     "Distinct stacks under the calls of one function, shared by its scoped flame "
                     "graphs (calls on further stacks are left out and counted)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
}

// The flame graphs of clusters and of outliers need each call's cluster, known when it ends: one
// bounded replay of the recording (scope_trees.h), with a reader of its own.
void FlameReportPart::start(const ReportRun& run) {
  if (run.analyzer.extension(FlameExtension::kName) == nullptr || limits_.max_events == 0) return;
  const Analysis& analysis = run.analysis;
  reading_ = std::async(std::launch::async, [this, recording = run.recording, &analysis] {
    recording::RecordingReader own(recording);
    return readScopeTrees(own, analysis, limits_);
  });
}

void FlameReportPart::addData(const ReportRun& run, nlohmann::ordered_json& data) {
  if (!reading_.valid()) return;
  trees_ = reading_.get();
  data["flame_scopes"] = scopeTreesJson(*trees_, run.analysis, limits_);
}

void FlameReportPart::printSummary() const {
  if (!trees_) return;
  std::printf("scoped flame graphs: %zu clusters, %zu shapes, outliers of %zu functions, from "
              "%llu of %llu events%s\n",
              trees_->clusters.size(), trees_->shapes.size(), trees_->functions.size(),
              static_cast<unsigned long long>(trees_->events_read),
              static_cast<unsigned long long>(trees_->events),
              trees_->complete() ? "" : " (--flame-scope-events; the page says so)");
}

} // namespace shapetrace::analyzer::report
