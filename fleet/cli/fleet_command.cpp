// `shapetrace fleet --nats URL --stream NAME`: the merged model of every host's latest summary
// (docs/fleet.md). Reads each host's latest summary from the stream, then new ones through a
// durable JetStream consumer; merges them exactly (fleet/merge.h); rewrites --json with the model
// (as `analyze --json` writes it, plus a "fleet" object) and --html (the report page of the merged
// model), and prints a summary line whenever the model changed, at most every --snapshot-every
// seconds. With --http it serves the live page of the merged model (report/cli/page_server.h, as
// `shapetrace live` does) with a host column and a per-host filter (?host=NAME: the model merged
// from that host's summaries only).
#include "cli/command.h"
#include "cli/signals.h"
#include "cli/write_file.h"
#include "fleet/cli/nats_flags.h"
#include "fleet/merge.h"
#include "fleet/nats.h"
#include "model_json.h"
#include "report/cli/page_server.h"
#include "report/page.h"
#include "report/report_data.h"
#include "report/terminal_summary.h"
#include "wire/format_error.h"

#include <chrono>
#include <cstdio>
#include <mutex>
#include <set>
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
  analyzer::report::PageServerOptions page{"fleet", "", "", "", ""}; // served when http is set
};

// What the fleet's model lacks besides the hosts' own lag: the hosts whose last summary is not
// here ("" when nothing).
std::string lacking(const FleetModel& model) {
  std::string note;
  const std::vector<std::string> open = model.hostsWithoutFinalSummary();
  if (!open.empty()) {
    const std::set<std::string> names(open.begin(), open.end());
    std::string list;
    for (const std::string& name : names) list += (list.empty() ? "" : ", ") + name;
    note = "as of each host's latest summary; " + std::to_string(open.size()) +
           " host run" + (open.size() > 1 ? "s have" : " has") +
           " not sent a final summary (still running, or it did not arrive): " + list;
  }
  // Summaries skipped in a run's sequence are not lacking: the later one holds what they held.
  return note;
}

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
                     {"progress", analyzer::report::progressJson(summary.header.progress)},
                     {"final", summary.header.final},
                     {"threads", std::move(threads)}});
  }
  const FleetCounters& c = model.counters();
  return {{"stream", args.stream},
          {"durable", args.durable},
          {"accepted", c.accepted},
          {"duplicates", c.duplicates},
          {"malformed", c.malformed},
          {"skipped", c.skipped},
          {"progress", analyzer::report::progressJson(model.progress(), lacking(model))},
          {"hosts", std::move(hosts)}};
}

// Decodes and offers one message; anything that is not a summary is counted and skipped. So is a
// summary the view cannot take for any other reason: its caller acknowledges it all the same, so
// that no message stops the view, nor every restart of it (JetStream keeps what is not
// acknowledged, and each subject's latest message).
void take(FleetModel& model, const ReceivedSummary& message) {
  try {
    model.offer(decodeSummary(message.bytes));
  } catch (const wire::FormatError& e) {
    model.countMalformed();
    std::fprintf(stderr, "shapetrace fleet: skipped a message on %s that is not a summary: %s\n",
                 message.subject.c_str(), e.what());
  } catch (const std::exception& e) {
    model.countMalformed();
    std::fprintf(stderr, "shapetrace fleet: skipped a summary on %s that could not be taken: %s\n",
                 message.subject.c_str(), e.what());
  }
}

// Which hosts each thread, shape, cluster and outlier of `analysis` (merged from `model`) comes
// from: the page's and the terminal summary's host column.
struct HostsOf {
  std::vector<std::string> thread;          // per thread of the analysis, in its order
  std::vector<std::set<std::string>> shape; // per shape id
  std::vector<std::set<std::string>> cluster;
  std::vector<std::string> outlier;         // per outlier, in the analysis' order
};

HostsOf hostsOf(const analyzer::Analysis& analysis, const FleetModel& model) {
  const auto thread_hosts = model.threadHosts();
  auto hostOf = [&](uint64_t process, uint32_t thread) {
    const auto it = thread_hosts.find({process, thread});
    return it == thread_hosts.end() ? std::string() : it->second;
  };
  HostsOf hosts;
  hosts.shape.resize(analysis.shapes.size());
  for (const analyzer::ThreadSummary& t : analysis.threads) {
    hosts.thread.push_back(hostOf(t.key.process, t.key.thread));
    for (const analyzer::ShapeId shape : t.shapes)
      hosts.shape[shape].insert(hosts.thread.back());
  }
  for (const analyzer::Cluster& cluster : analysis.clustering.clusters) {
    std::set<std::string>& of_cluster = hosts.cluster.emplace_back();
    for (const analyzer::ShapeId shape : cluster.shapes)
      of_cluster.insert(hosts.shape[shape].begin(), hosts.shape[shape].end());
  }
  for (const analyzer::Outlier& o : analysis.outliers)
    hosts.outlier.push_back(hostOf(o.process, o.thread));
  return hosts;
}

// The report page's data of `analysis` (the merged model, or one host's when `selected` is set)
// plus "fleet": the hosts, the host of every thread, shape, cluster and outlier (the page's host
// column), and the host selected (docs/fleet.md). No exact calls: those stay in the hosts'
// recordings.
nlohmann::ordered_json pageData(const analyzer::Analysis& analysis, const FleetModel& model,
                                const FleetArgs& args, const std::string& selected) {
  const analyzer::report::DetailLimits none{0, 0, 0, 1};
  nlohmann::ordered_json data = analyzer::report::reportData(
      analysis, {"fleet", args.nats.url + " " + args.stream, analyzer::report::utcNow()}, {}, none,
      {});
  const HostsOf hosts = hostsOf(analysis, model);
  nlohmann::ordered_json shapes = nlohmann::ordered_json::object();
  for (size_t id = 0; id < hosts.shape.size(); ++id)
    if (!hosts.shape[id].empty()) shapes[std::to_string(id)] = hosts.shape[id];
  std::set<std::string> names;
  for (const auto& [key, summary] : model.hosts())
    names.insert(key.first);
  data["fleet"] = fleetJson(model, args);
  data["fleet"]["host_names"] = names;
  data["fleet"]["selected"] = selected;
  data["fleet"]["thread_hosts"] = hosts.thread;
  data["fleet"]["shape_hosts"] = std::move(shapes);
  data["fleet"]["cluster_hosts"] = hosts.cluster;
  data["fleet"]["outlier_hosts"] = hosts.outlier;
  data["live_state"] = {{"endpoint", args.nats.url + " " + args.stream},
                        {"waiting", model.hosts().empty()},
                        {"waiting_for", "summaries"},
                        {"items", model.counters().accepted},
                        {"items_label", "summaries"},
                        {"progress", analyzer::report::progressJson(model.progress(),
                                                                    lacking(model))}};
  return data;
}

// The model and the page data the server hands out, shared between the loop that takes summaries
// and the server's threads. A host's filtered data is merged on the first request after a change.
class FleetView {
public:
  explicit FleetView(const FleetArgs& args) : args_(args) {}

  // Runs `change` on the model under the lock.
  template <typename Change> void update(Change change) {
    std::lock_guard lock(mutex_);
    change(model_);
  }
  // The page data of the whole fleet (`host` empty) or of one host; nullopt when no host of that
  // name has published.
  std::optional<std::string> dataText(const std::string& host) {
    std::lock_guard lock(mutex_);
    const uint64_t version = counted();
    if (!host.empty() && !hasHost(host)) return std::nullopt;
    auto& [at, text] = cache_[host];
    if (at != version || text.empty()) {
      text = analyzer::report::dataText(pageData(model_.merge(args_.settings, host), model_, args_,
                                                 host));
      at = version;
    }
    return text;
  }
  // Merges the whole fleet and writes --json, --html and the summary line; caches the page data.
  void writeSnapshot();
  // Summaries and malformed messages taken so far: what the snapshots are versioned by.
  uint64_t taken() {
    std::lock_guard lock(mutex_);
    return counted();
  }

private:
  uint64_t counted() const {
    const FleetCounters& c = model_.counters();
    return c.accepted + c.duplicates + c.malformed;
  }
  bool hasHost(const std::string& host) const {
    for (const auto& [key, summary] : model_.hosts())
      if (key.first == host) return true;
    return false;
  }

  const FleetArgs& args_;
  std::mutex mutex_;
  FleetModel model_;
  std::map<std::string, std::pair<uint64_t, std::string>> cache_; // host -> (version, data)
};

void FleetView::writeSnapshot() {
  std::lock_guard lock(mutex_);
  const FleetModel& model = model_;
  const FleetArgs& args = args_;
  const analyzer::Analysis analysis = model.merge(args.settings);
  if (!args.json.empty()) {
    nlohmann::ordered_json json = analyzer::toJson(analysis);
    json["fleet"] = fleetJson(model, args);
    cli::writeFileAtomically(args.json, json.dump() + "\n");
  }
  if (!args.html.empty() || !args.page.http.empty()) {
    const auto data = pageData(analysis, model, args, "");
    if (!args.html.empty())
      cli::writeFileAtomically(args.html, analyzer::report::renderPage(data));
    cache_[""] = {counted(), analyzer::report::dataText(data)};
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
  // The tables `shapetrace live` shows, with the hosts of each row.
  const HostsOf hosts = hostsOf(analysis, model);
  auto join = [](const std::set<std::string>& names) {
    std::string text;
    for (const std::string& name : names) text += (text.empty() ? "" : ",") + name;
    return text;
  };
  const std::string tables = analyzer::report::clusterTables(
      analysis, 12, 5,
      {[&](analyzer::ClusterId id) { return join(hosts.cluster[id]); },
       [&](const analyzer::Outlier& o) {
         return hosts.outlier[static_cast<size_t>(&o - analysis.outliers.data())];
       }});
  const std::string note = lacking(model);
  std::printf("%s%s%s\n%s\n",
              analyzer::report::progressLine(model.progress(), analysis.diagnostics.count(analyzer::Stat::events_dropped)).c_str(),
              note.empty() ? "" : "\n", note.c_str(), tables.c_str());
  std::fflush(stdout);
}

// GET / and /api/snapshot, both with ?host=NAME for one host's model.
void addRoutes(httplib::Server& routes, FleetView& view, const FleetArgs& args) {
  const int interval_ms = static_cast<int>(args.snapshot_every * 1000);
  auto answer = [&view, interval_ms](const httplib::Request& req, httplib::Response& res,
                                     bool page) {
    res.set_header("Cache-Control", "no-store");
    const std::string host = req.get_param_value("host");
    const auto text = view.dataText(host);
    if (!text) {
      res.status = 404;
      res.set_content("no host " + host + " has published to the fleet\n", "text/plain");
      return;
    }
    if (!page) return res.set_content(*text, "application/json");
    // The host is one of the fleet's, a NATS token: safe in a URL as it is.
    res.set_content(analyzer::report::renderLivePage(
                        nlohmann::ordered_json::parse(*text),
                        {"/api/snapshot" + (host.empty() ? "" : "?host=" + host), interval_ms, "",
                         ""}),
                    "text/html; charset=utf-8");
  };
  routes.Get("/", [answer](const httplib::Request& req, httplib::Response& res) {
    answer(req, res, true);
  });
  routes.Get("/api/snapshot", [answer](const httplib::Request& req, httplib::Response& res) {
    answer(req, res, false);
  });
}

int runFleet(const FleetArgs& args) {
  // Bind first: a port in use is an error the user must see before anything else happens.
  std::optional<analyzer::report::PageServer> server;
  if (!args.page.http.empty()) server.emplace(args.page);
  cli::installStopHandlers();
  SummarySubscriber subscriber(args.nats, args.stream, args.durable);
  FleetView view(args);
  view.update([&subscriber](FleetModel& model) {
    for (const ReceivedSummary& message : subscriber.latestPerHost())
      take(model, message);
  });
  if (server) {
    addRoutes(server->routes(), view, args);
    server->start();
  }
  uint64_t written = UINT64_MAX;
  using Clock = std::chrono::steady_clock;
  const auto started = Clock::now();
  const auto every = std::chrono::duration<double>(args.snapshot_every);
  auto next_snapshot = started;
  while (cli::stop_signal.load() == 0) {
    if (args.duration > 0 && Clock::now() - started >= std::chrono::duration<double>(args.duration))
      break;
    auto messages = subscriber.fetch(64, std::chrono::milliseconds(200));
    view.update([&messages](FleetModel& model) {
      for (ReceivedSummary& message : messages) {
        take(model, message);
        // Acknowledged once taken: a restarted fleet view starts from every host's latest
        // summary and then from here, so nothing is counted twice.
        if (message.ack)
          message.ack();
      }
    });
    if (view.taken() != written && Clock::now() >= next_snapshot) {
      written = view.taken();
      view.writeSnapshot();
      next_snapshot = Clock::now() + std::chrono::duration_cast<Clock::duration>(every);
    }
  }
  if (view.taken() != written)
    view.writeSnapshot();
  if (server) server->stop();
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
  analyzer::report::addPageServerFlags(command, args->page);
  command.callback([args] {
    checkNatsNames(args->stream, args->durable);
    checkNatsAuth(args->nats);
  });
  return [args] { return runFleet(*args); };
}

const cli::Registration fleet{"fleet",
                              "Merge the summaries hosts publish to NATS JetStream (live --nats) "
                              "into one model",
                              setupFleet};

} // namespace
} // namespace shapetrace::fleet
