// `shapetrace fleet --nats URL --stream NAME`: the merged model of every host's latest summary
// (docs/fleet.md). Reads each host's latest summary from the stream, then new ones through a
// durable JetStream consumer; merges them exactly (fleet/merge.h); rewrites --json with the model
// (as `analyze --json` writes it, plus a "fleet" object) and --html (the report page of the merged
// model), and prints a summary line whenever the model changed, at most every --snapshot-every
// seconds.
#include "cli/command.h"
#include "cli/signals.h"
#include "cli/write_file.h"
#include "fleet/cli/nats_flags.h"
#include "fleet/merge.h"
#include "fleet/nats.h"
#include "model_json.h"
#include "report/page.h"
#include "report/report_data.h"
#include "wire/format_error.h"

#include <chrono>
#include <cstdio>
#include <thread>

namespace shapetrace::fleet {
namespace {

struct FleetArgs {
  NatsSettings nats;
  std::string stream = "shapetrace";
  std::string durable = "shapetrace-fleet";
  std::string json;
  std::string html;
  double snapshot_every = 1.0;
  double duration = 0;
  analyzer::AnalysisSettings settings;
};

nlohmann::ordered_json fleetJson(const FleetModel& model, const FleetArgs& args) {
  nlohmann::ordered_json hosts = nlohmann::ordered_json::array();
  for (const auto& [key, summary] : model.hosts()) {
    nlohmann::ordered_json threads = nlohmann::ordered_json::array();
    uint64_t events = 0, calls = 0;
    for (const HostThread& thread : summary.threads) {
      threads.push_back({{"process", thread.key.process}, {"thread", thread.key.thread}});
      events += thread.result.events;
      calls += thread.result.calls;
    }
    hosts.push_back({{"host", summary.header.host},
                     {"run", summary.header.run},
                     {"sequence", summary.header.sequence},
                     {"window_end_ns", summary.header.window_end_ns},
                     {"recording", summary.header.recording},
                     {"events", events},
                     {"calls", calls},
                     {"threads", std::move(threads)}});
  }
  const FleetCounters& c = model.counters();
  return {{"stream", args.stream},      {"durable", args.durable},  {"accepted", c.accepted},
          {"duplicates", c.duplicates}, {"malformed", c.malformed}, {"skipped", c.skipped},
          {"hosts", std::move(hosts)}};
}

// Decodes and offers one message; anything that is not a summary is counted and skipped.
void take(FleetModel& model, const ReceivedSummary& message) {
  try {
    model.offer(decodeSummary(message.bytes));
  } catch (const wire::FormatError& e) {
    model.countMalformed();
    std::fprintf(stderr, "shapetrace fleet: skipped a message on %s that is not a summary: %s\n",
                 message.subject.c_str(), e.what());
  }
}

void writeSnapshot(const FleetModel& model, const FleetArgs& args) {
  const analyzer::Analysis analysis = model.merge(args.settings);
  if (!args.json.empty()) {
    nlohmann::ordered_json json = analyzer::toJson(analysis);
    json["fleet"] = fleetJson(model, args);
    cli::writeFileAtomically(args.json, json.dump() + "\n");
  }
  if (!args.html.empty()) {
    // The report page of the merged model (no exact calls: those stay in the hosts' recordings).
    const analyzer::report::DetailLimits none{0, 0, 0, 1};
    const auto data = analyzer::report::reportData(
        analysis, {"fleet", args.nats.url + " " + args.stream, analyzer::report::utcNow()}, {},
        none, {});
    cli::writeFileAtomically(args.html, analyzer::report::renderPage(data));
  }
  const FleetCounters& c = model.counters();
  std::printf("shapetrace fleet: %zu hosts, %zu threads, %llu events, %llu calls, %zu shapes, %zu "
              "clusters; %llu summaries (%llu duplicates, %llu skipped, %llu malformed)\n",
              model.hosts().size(), analysis.threads.size(),
              static_cast<unsigned long long>(analysis.events),
              static_cast<unsigned long long>(analysis.calls), analysis.shapes.size() - 1,
              analysis.clustering.clusters.size(), static_cast<unsigned long long>(c.accepted),
              static_cast<unsigned long long>(c.duplicates),
              static_cast<unsigned long long>(c.skipped),
              static_cast<unsigned long long>(c.malformed));
  std::fflush(stdout);
}

int runFleet(const FleetArgs& args) {
  cli::installStopHandlers();
  SummarySubscriber subscriber(args.nats, args.stream, args.durable);
  FleetModel model;
  for (const ReceivedSummary& message : subscriber.latestPerHost())
    take(model, message);
  auto counted = [&model] {
    const FleetCounters& c = model.counters();
    return c.accepted + c.duplicates + c.malformed;
  };
  uint64_t written = UINT64_MAX;
  using Clock = std::chrono::steady_clock;
  const auto started = Clock::now();
  const auto every = std::chrono::duration<double>(args.snapshot_every);
  auto next_snapshot = started;
  while (cli::stop_signal.load() == 0) {
    if (args.duration > 0 && Clock::now() - started >= std::chrono::duration<double>(args.duration))
      break;
    for (ReceivedSummary& message : subscriber.fetch(64, std::chrono::milliseconds(200))) {
      take(model, message);
      // Acknowledged once taken: a restarted fleet view starts from every host's latest summary
      // and then from here, so nothing is counted twice.
      if (message.ack)
        message.ack();
    }
    if (counted() != written && Clock::now() >= next_snapshot) {
      writeSnapshot(model, args);
      written = counted();
      next_snapshot = Clock::now() + std::chrono::duration_cast<Clock::duration>(every);
    }
  }
  if (counted() != written)
    writeSnapshot(model, args);
  return 0;
}

cli::Runner setupFleet(CLI::App& command) {
  auto args = std::make_shared<FleetArgs>();
  command.add_option("--nats", args->nats.url, "The NATS server (nats://HOST:PORT, tls://...)")
      ->required();
  command.add_option("--stream", args->stream, "The JetStream stream the hosts publish to")
      ->capture_default_str();
  command
      .add_option("--durable", args->durable,
                  "The durable consumer's name: a fleet view restarted with the same name "
                  "resumes where it left off")
      ->capture_default_str();
  command.add_option("--json", args->json,
                     "Rewrite FILE with the merged model (analyze --json's, plus \"fleet\") "
                     "whenever it changes");
  command.add_option("--html", args->html,
                     "Rewrite FILE with the report page of the merged model whenever it changes");
  command
      .add_option("--snapshot-every", args->snapshot_every,
                  "Seconds between merges of a changing model")
      ->check(CLI::Range(0.05, 3600.0))
      ->capture_default_str();
  command.add_option("--duration", args->duration, "Stop after this many seconds (0: never)")
      ->check(CLI::NonNegativeNumber);
  command
      .add_option("--threshold", args->settings.cluster_threshold,
                  "cluster_threshold: largest Shape distance within a cluster")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  addNatsAuthFlags(command, args->nats);
  command.callback([args] { checkNatsNames(args->stream, args->durable); });
  return [args] { return runFleet(*args); };
}

const cli::Registration fleet{"fleet",
                              "Merge the summaries hosts publish to NATS JetStream (live --nats) "
                              "into one model",
                              setupFleet};

} // namespace
} // namespace shapetrace::fleet
