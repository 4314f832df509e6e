// `shapetrace live --connect ENDPOINT [--http 127.0.0.1:PORT] [--no-http]`: the report page served
// on localhost and updating while the service runs, plus a one-screen terminal summary refreshed
// every second (for ssh sessions).
//
// The page is the report's own (page.h), served with its data and a "live" setting that makes it
// poll GET /api/snapshot (the page data as JSON) every second. The server binds 127.0.0.1 unless
// told otherwise: the page shows function names and timings of the traced program.
//
// The server, its access checks and its hardening are page_server.h's (shared with `shapetrace
// fleet --http`); only the documented paths are served.
#include "analyzer.h"
#include "cli/analysis_flags.h"
#include "fleet/cli/nats_flags.h"
#include "fleet/host_publisher.h"
#include "cli/command.h"
#include "cli/prometheus_text.h"
#include "cli/signals.h"
#include "report/cli/page_server.h"
#include "report/live_instance.h"
#include "report/page.h"
#include "report/live_session.h"
#include "scope.h"
#include "report/page.h"
#include "report/terminal_summary.h"

#include <httplib.h>

#include <atomic>
#include <condition_variable>
#include <csignal>
#include <deque>
#include <mutex>
#include <optional>
#include <cstdio>
#include <stdexcept>
#include <thread>
#include <sys/socket.h>
#include <unistd.h>

namespace shapetrace::analyzer::report {
namespace {

struct LiveArgs {
  std::string connect;
  PageServerOptions page{"live", "127.0.0.1:8470", "", "", ""};
  std::string recording; // the collector's --out: exact call instances on a click
  bool no_http = false;
  double duration = 0;
  double interval = 1.0;
  AnalysisFlags analysis;
  MetricsSettings metrics;
  // The fleet (docs/fleet.md): publish a summary every `window` seconds to `stream` on NATS.
  std::string nats_url, stream, host;
  double window = 10;
  fleet::NatsSettings nats;

  LiveArgs() {
    // Every core by default (--jobs 0): a live view that falls behind shows an old picture; the
    // headline says how far behind it is ("analysed X of Y events received").
    analysis.extensions = "all";
  }
};



// The page with the latest data and the live setting.
std::string livePage(const LiveSnapshot& snapshot, int interval_ms, bool instances) {
  return renderLivePage(nlohmann::ordered_json::parse(snapshot.data_json),
                        {"/api/snapshot", interval_ms, instances ? "/api/instance" : "",
                         instances ? "/api/flame" : ""});
}

constexpr size_t kMaxInstanceCalls = 5000; // as the report's default --max-instance-calls

// GET /api/flame: the flame graph of a window, thread or cluster from the recording
// (live_instance.h).
void answerFlame(const LiveSession& session, const std::string& recording,
                 const httplib::Request& req, httplib::Response& res) {
  res.set_header("Cache-Control", "no-store");
  auto fail = [&](int status, const std::string& why) {
    res.status = status;
    res.set_content(why + "\n", "text/plain");
  };
  if (recording.empty())
    return fail(404, "no recording: start shapetrace live with --recording DIR (the collector's "
                     "--out)");
  const auto snapshot = session.latest();
  try {
    res.set_content(dataText(readLiveFlame(recording, *snapshot->analysis,
                                           snapshot->run.firstNs(), req.params)),
                    "application/json");
  } catch (const ScopeError& e) {
    fail(404, e.what());
  } catch (const std::invalid_argument& e) {
    fail(400, e.what());
  } catch (const std::exception& e) { // the recording cannot be read
    fail(500, "cannot read the recording " + recording + ": " + e.what());
  }
}

// GET /api/instance: one exact call from the recording (live_instance.h), 404 when there is none.
void answerInstance(const LiveSession& session, const std::string& recording,
                    const httplib::Request& req, httplib::Response& res) {
  res.set_header("Cache-Control", "no-store");
  if (recording.empty()) {
    res.status = 404;
    res.set_content("no recording: start shapetrace live with --recording DIR (the collector's "
                    "--out)\n",
                    "text/plain");
    return;
  }
  InstanceQuery query;
  try {
    query = parseInstanceQuery(req.params);
  } catch (const std::invalid_argument& e) {
    res.status = 400;
    res.set_content(std::string(e.what()) + "\n", "text/plain");
    return;
  }
  try {
    const auto snapshot = session.latest();
    const auto instance = readLiveInstance(recording, *snapshot->analysis, query, kMaxInstanceCalls);
    if (!instance) {
      res.status = 404;
      res.set_content("no such call in the recording (yet)\n", "text/plain");
      return;
    }
    res.set_content(dataText(*instance), "application/json"); // as the page's data reads
  } catch (const std::exception& e) { // the recording cannot be read
    res.status = 500;
    res.set_content("cannot read the recording " + recording + ": " + e.what() + "\n",
                    "text/plain");
  }
}

// One line on the fleet's summaries (live --nats).
std::string publisherLine(const fleet::HostPublisher* publisher, const std::string& stream) {
  if (publisher == nullptr) return "";
  const fleet::PublisherStatus st = publisher->status();
  std::string line = "fleet: " + std::to_string(st.published) + " of " +
                     std::to_string(st.encoded) + " summaries published to " + stream + " (last " +
                     std::to_string(st.last_bytes) + " bytes)";
  if (!st.connected) {
    line += "; NATS is away: analysing and recording locally, the latest summary goes out when it "
            "is back";
    // A refused connection (wrong credentials, an untrusted certificate) says why.
    if (!st.last_error.empty()) line += " (" + st.last_error + ")";
  } else if (!st.last_error.empty())
    line += "; last attempt failed: " + st.last_error;
  if (!st.state_error.empty())
    line += "; the run's state cannot be kept (a restart starts a new run): " + st.state_error;
  return line + "\n";
}

// One screen: the state, the run's counts, the busiest clusters and the latest outliers.
void printSummary(const LiveSnapshot& s, const std::string& endpoint, const std::string& url,
                  bool tty, const std::string& fleet_line = "") {
  std::string out;
  char line[512];
  if (tty) out += "\x1b[H\x1b[2J";
  const double seconds = std::chrono::duration<double>(s.elapsed).count();
  if (s.waiting) {
    std::snprintf(line, sizeof line, "shapetrace live  %5.0fs  waiting for collector at %s\n",
                  seconds, endpoint.c_str());
  } else {
    std::snprintf(line, sizeof line, "shapetrace live  %5.0fs  %s  %llu items%s\n", seconds,
                  endpoint.c_str(), static_cast<unsigned long long>(s.items),
                  s.undecodable ? (", " + std::to_string(s.undecodable) + " undecodable").c_str()
                                : "");
  }
  out += line;
  if (!url.empty()) out += "page: " + url + "\n";
  out += fleet_line;
  const Analysis& a = *s.analysis;
  out += progressLine(s.progress, s.run.droppedEvents()) + "\n";
  std::snprintf(line, sizeof line,
                "%llu threads  %llu events  %llu calls  %zu shapes  %zu clusters  %llu outliers "
                "(%zu most extreme kept)\n\n",
                static_cast<unsigned long long>(threadCount(a)),
                static_cast<unsigned long long>(a.events),
                static_cast<unsigned long long>(a.calls), a.shapes.size() - 1,
                a.clustering.clusters.size(), static_cast<unsigned long long>(a.outliers_found),
                a.outliers.size());
  out += line;
  if (const std::string loss = inputLossLine(a); !loss.empty()) out += loss + "\n\n";
  if (const std::string filtered = filteredLine(a); !filtered.empty()) out += filtered + "\n\n";
  out += clusterTables(a, 12, 5);
  if (!tty) out += "\n";
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fflush(stdout);
}

int runLive(const LiveArgs& options) {
  const auto interval = std::chrono::milliseconds(static_cast<int64_t>(options.interval * 1000));

  // Bind first: a port in use is an error the user must see before anything else happens.
  std::optional<PageServer> server;
  if (!options.no_http)
    server.emplace(options.page);
  const std::string url = server ? server->url() : "";

  // Before the session, which calls it until it stops.
  std::unique_ptr<fleet::HostPublisher> publisher;
  if (!options.nats_url.empty()) {
    fleet::NatsSettings nats = options.nats;
    nats.url = options.nats_url;
    // With the recording, the run persists beside it: a restarted host continues it.
    const std::string state =
        options.recording.empty() ? "" : options.recording + "/fleet-" + options.host + ".json";
    publisher = std::make_unique<fleet::HostPublisher>(nats, options.stream, options.host,
                                                       options.recording, state);
  }
  LiveSession session(options.connect, options.analysis.settings,
                      options.analysis.workerCount(), options.analysis.extensions, interval,
                      options.metrics);
  if (publisher && publisher->resumed()) {
    std::fprintf(stderr,
                 "shapetrace live: resuming run %llu of host %s: the analysis starts from the "
                 "recording %s\n",
                 static_cast<unsigned long long>(publisher->run()), options.host.c_str(),
                 options.recording.c_str());
    session.resumeFrom(options.recording);
  }
  if (publisher) {
    session.onWindow(std::chrono::milliseconds(static_cast<int64_t>(options.window * 1000)),
                     [&publisher](Analyzer& analyzer, const LiveProgress& progress,
                                  bool final) { publisher->takeSummary(analyzer, progress, final); });
  }
  try {
    session.start();
  } catch (const std::exception& e) { // zmq::error_t: an endpoint ZeroMQ rejects
    throw std::runtime_error("cannot connect to " + options.connect + ": " + e.what());
  }

  if (server) {
    httplib::Server& routes = server->routes();
    const int interval_ms = static_cast<int>(interval.count());
    const bool instances = !options.recording.empty();
    routes.Get("/", [&session, interval_ms, instances](const httplib::Request&,
                                                       httplib::Response& res) {
      res.set_content(livePage(*session.latest(), interval_ms, instances),
                      "text/html; charset=utf-8");
    });
    routes.Get("/api/instance", [&session, &options](const httplib::Request& req,
                                                     httplib::Response& res) {
      answerInstance(session, options.recording, req, res);
    });
    routes.Get("/api/flame", [&session, &options](const httplib::Request& req,
                                                  httplib::Response& res) {
      answerFlame(session, options.recording, req, res);
    });
    routes.Get("/api/snapshot", [&session](const httplib::Request&, httplib::Response& res) {
      res.set_header("Cache-Control", "no-store");
      res.set_content(session.latest()->data_json, "application/json");
    });
    // Prometheus scrapes the same moment as the page's snapshot (docs/report.md, "Metrics").
    routes.Get("/metrics", [&session](const httplib::Request&, httplib::Response& res) {
      res.set_content(session.latest()->metrics, std::string(cli::PrometheusText::kContentType));
    });
    server->start();
  }

  cli::installStopHandlers();
  const bool tty = ::isatty(STDOUT_FILENO) != 0;
  using Clock = std::chrono::steady_clock;
  const auto started = Clock::now();
  auto next_print = started + std::chrono::seconds(1);
  while (cli::stop_signal.load() == 0) {
    const auto now = Clock::now();
    if (options.duration > 0 &&
        now - started >= std::chrono::duration<double>(options.duration))
      break;
    if (now >= next_print) {
      printSummary(*session.latest(), options.connect, url, tty,
                   publisherLine(publisher.get(), options.stream));
      next_print += std::chrono::seconds(1);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  // What was received is analysed before the last summary; the next signal stops at once.
  session.finish(cli::anotherStopSignal());
  if (publisher && !publisher->waitDelivered(std::chrono::seconds(3)))
    std::fprintf(stderr, "shapetrace live: the last summary was not delivered to NATS (%s)\n",
                 publisher->status().last_error.c_str());
  printSummary(*session.latest(), options.connect, url, false,
               publisherLine(publisher.get(), options.stream));
  if (server) server->stop();
  return 0;
}

cli::Runner setupLive(CLI::App& command) {
  auto options = std::make_shared<LiveArgs>();
  command.add_option("--connect", options->connect,
                     "The collector's publish endpoint (shapetrace collect --publish ...)")
      ->required();
  addPageServerFlags(command, options->page);
  command.add_option("--recording", options->recording,
                     "The recording the collector writes (its --out): a click on the page opens "
                     "the exact call from it")
      ->check(CLI::ExistingDirectory);
  command.add_flag("--no-http", options->no_http, "Terminal summary only, no web page");
  command.add_option("--duration", options->duration, "Stop after this many seconds (0: never)")
      ->check(CLI::NonNegativeNumber);
  command.add_option("--interval", options->interval, "Seconds between snapshots of the analysis")
      ->check(CLI::Range(0.1, 60.0))
      ->capture_default_str();
  command.add_option("--metrics-top", options->metrics.top_functions,
                     "/metrics: per-function series for this many functions, those with the most "
                     "time")
      ->check(CLI::Range(0, 10000))
      ->capture_default_str();
  command.add_option("--metrics-cluster-function", options->metrics.cluster_functions,
                     "/metrics: per-cluster series for the clusters of this function (a request "
                     "handler; its name without parameters, or mangled); repeatable");
  command.add_option("--nats", options->nats_url,
                     "Publish a summary of the analysis every --window seconds to NATS JetStream "
                     "at this URL, for `shapetrace fleet` (docs/fleet.md)");
  command.add_option("--stream", options->stream,
                     "With --nats: the JetStream stream (made when missing)")
      ->default_val("shapetrace");
  command.add_option("--host", options->host,
                     "With --nats: this host's name in the fleet (default: the hostname)");
  command.add_option("--window", options->window, "With --nats: seconds between summaries")
      ->check(CLI::Range(0.1, 3600.0))
      ->capture_default_str();
  fleet::addNatsAuthFlags(command, options->nats);
  addAnalysisFlags(command, options->analysis);
  command.callback([options] {
    fleet::checkNatsAuth(options->nats);
    if (options->nats_url.empty()) return;
    if (options->host.empty()) {
      char name[256] = {};
      ::gethostname(name, sizeof name - 1);
      options->host = name;
      // A hostname's dots would split the NATS subject.
      for (char& c : options->host)
        if (!fleet::isNatsToken(std::string(1, c))) c = '_';
    }
    fleet::checkNatsNames(options->stream, options->host);
  });
  return [options] { return runLive(*options); };
}

const cli::Registration live{"live",
                             "Analyse a running service: live page on localhost and a terminal "
                             "summary",
                             setupLive};

} // namespace
} // namespace shapetrace::analyzer::report
