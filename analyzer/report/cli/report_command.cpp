// `shapetrace report DIR -o report.html`: the whole run on one self-contained HTML page.
//
// One pass over the recording feeds the Analyzer (the same code path as `shapetrace analyze`) and
// the run's facts; then the embedded instances are read back through the recording's index, and
// the page is written next to its final name and renamed, so an open browser never sees half a
// file.
#include "analyzer.h"
#include "cli/analysis_options.h"
#include "cli/command.h"
#include "recording/recording.h"
#include "report/page.h"
#include "report/report_data.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <thread>

namespace shapetrace::analyzer::report {
namespace {

struct ReportOptions {
  std::string dir;
  std::string output = "report.html";
  // A finer timeline than analyze's default: it is what the page draws when zoomed out.
  AnalysisOptions analysis{.timeline_bins = 2048};
  DetailLimits limits;
};

void writeFile(const std::string& path, const std::string& text) {
  const std::string partial = path + ".partial";
  {
    std::ofstream out(partial, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error("cannot write " + partial);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    if (!out.flush()) throw std::runtime_error("cannot write " + partial);
  }
  if (std::rename(partial.c_str(), path.c_str()) != 0)
    throw std::runtime_error("cannot rename " + partial + " to " + path);
}

int runReport(const ReportOptions& options) {
  if (!std::filesystem::is_directory(options.dir))
    throw std::runtime_error(options.dir + " is not a recording directory");
  recording::RecordingReader reader(options.dir);
  Analyzer analyzer(options.analysis.settings(), options.analysis.workerCount());
  RunInfo run;
  while (auto item = reader.nextItem()) {
    run.observe(*item);
    analyzer.consume(std::move(*item));
  }
  analyzer.count(Stat::recording_damage, reader.damage().size());
  analyzer.count(Stat::undecodable_messages, reader.undecodable());
  for (const recording::Damage& d : reader.damage())
    std::fprintf(stderr, "shapetrace report: warning: segment %u: %s at offset %llu (%llu bytes)\n",
                 d.segment, recording::damageKindName(d.kind),
                 static_cast<unsigned long long>(d.offset),
                 static_cast<unsigned long long>(d.length));
  analyzer.finish();
  const Analysis analysis = analyzer.snapshot();

  InstanceReader instances(reader, analysis, run.functions());
  DetailSummary detail;
  const auto embedded = collectInstances(instances, analysis, options.limits, detail);
  const std::string page = renderPage(reportData(
      analysis, run, {"recording", options.dir, utcNow()}, embedded, options.limits, detail));
  writeFile(options.output, page);

  std::printf("%s: %zu threads, %llu events, %zu shapes, %zu clusters, %zu outliers, %llu dropped "
              "events\n",
              options.output.c_str(), analysis.threads.size(),
              static_cast<unsigned long long>(analysis.events), analysis.shapes.size() - 1,
              analysis.clustering.clusters.size(), analysis.outliers.size(),
              static_cast<unsigned long long>(run.droppedEvents()));
  std::printf("embedded %zu exact instances (%zu exemplars of %zu clusters, %zu outliers)%s; "
              "%.1f MB\n",
              embedded.size(), detail.exemplar_instances, detail.clusters_with_instances,
              detail.outlier_instances, detail.capped ? ", capped by the detail limits" : "",
              static_cast<double>(page.size()) / 1e6);
  return 0;
}

cli::Runner setupReport(CLI::App& command) {
  auto options = std::make_shared<ReportOptions>();
  command.add_option("dir", options->dir, "Recording directory (from `shapetrace record`)")
      ->required();
  command.add_option("-o,--output", options->output, "The HTML file to write")
      ->capture_default_str();
  addAnalysisOptions(command, options->analysis);
  command.add_option("--exemplars", options->limits.exemplars_per_cluster,
                     "Exact instances embedded per cluster (0-2: first occurrence, slowest bin)")
      ->check(CLI::Range(0, 2))
      ->capture_default_str();
  command.add_option("--outlier-instances", options->limits.outlier_instances,
                     "Most extreme outliers whose exact call is embedded")
      ->capture_default_str();
  command.add_option("--max-instances", options->limits.max_instances,
                     "Most exact instances embedded in all")
      ->capture_default_str();
  command.add_option("--max-instance-calls", options->limits.max_instance_calls,
                     "Most calls listed per embedded instance")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  return [options] { return runReport(*options); };
}

const cli::Registration report{"report",
                               "Write the run's timeline, clusters and outliers as one HTML page",
                               setupReport};

} // namespace
} // namespace shapetrace::analyzer::report
