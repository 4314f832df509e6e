// `shapetrace live --connect ENDPOINT [--http 127.0.0.1:PORT] [--no-http]`: the report page served
// on localhost and updating while the service runs, plus a one-screen terminal summary refreshed
// every second (for ssh sessions).
//
// The page is the report's own (page.h), served with its data and a "live" setting that makes it
// poll GET /api/snapshot (the page data as JSON) every second. The server binds 127.0.0.1 unless
// told otherwise: the page shows function names and timings of the traced program.
#include "analyzer.h"
#include "cli/analysis_flags.h"
#include "cli/command.h"
#include "report/live_session.h"
#include "report/page.h"

#include <httplib.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <stdexcept>
#include <thread>
#include <sys/socket.h>
#include <unistd.h>

namespace shapetrace::analyzer::report {
namespace {

struct LiveOptions {
  std::string connect;
  std::string http = "127.0.0.1:8470";
  bool no_http = false;
  double duration = 0;
  double interval = 1.0;
  AnalysisFlags analysis;

  LiveOptions() {
    // One analysis thread by default: the service being watched runs on the same machine.
    analysis.jobs = 1;
    analysis.extensions = "all";
  }
};

std::atomic<bool> g_stop{false};
void onSignal(int) { g_stop.store(true); }

std::pair<std::string, int> parseHostPort(const std::string& text) {
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0)
    throw std::invalid_argument("--http wants HOST:PORT (e.g. 127.0.0.1:8470), not '" + text + "'");
  const std::string host = text.substr(0, colon);
  const std::string port_text = text.substr(colon + 1);
  size_t used = 0;
  int port = -1;
  try {
    port = std::stoi(port_text, &used);
  } catch (const std::exception&) {
  }
  if (used != port_text.size() || port < 0 || port > 65535)
    throw std::invalid_argument("--http: '" + port_text + "' is not a port number (0-65535)");
  return {host, port};
}

bool isLoopback(const std::string& host) {
  return host == "127.0.0.1" || host == "localhost" || host == "::1" || host.starts_with("127.");
}

// The page with the latest data and the live setting.
std::string livePage(const LiveSnapshot& snapshot, int interval_ms) {
  nlohmann::ordered_json data = nlohmann::ordered_json::parse(snapshot.data_json);
  data["live"] = {{"snapshot", "/api/snapshot"}, {"interval_ms", interval_ms}};
  return renderPage(data);
}

std::string ns(double value) {
  char text[32];
  if (value < 1e3) std::snprintf(text, sizeof text, "%.0f ns", value);
  else if (value < 1e6) std::snprintf(text, sizeof text, "%.2f us", value / 1e3);
  else if (value < 1e9) std::snprintf(text, sizeof text, "%.2f ms", value / 1e6);
  else std::snprintf(text, sizeof text, "%.2f s", value / 1e9);
  return text;
}

// One screen: the state, the run's counts, the busiest clusters and the latest outliers.
void printSummary(const LiveSnapshot& s, const std::string& endpoint, const std::string& url,
                  bool tty) {
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
  const Analysis& a = *s.analysis;
  std::snprintf(line, sizeof line,
                "%zu threads  %llu events  %llu calls  %zu shapes  %zu clusters  %zu outliers  "
                "%llu dropped\n\n",
                a.threads.size(), static_cast<unsigned long long>(a.events),
                static_cast<unsigned long long>(a.calls), a.shapes.size() - 1,
                a.clustering.clusters.size(), a.outliers.size(),
                static_cast<unsigned long long>(s.run.droppedEvents()));
  out += line;
  std::vector<ClusterId> order(a.clustering.clusters.size());
  for (ClusterId i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](ClusterId x, ClusterId y) {
    const auto sx = a.cluster_stats[x].moments.sum(), sy = a.cluster_stats[y].moments.sum();
    return sx != sy ? sx > sy : x < y;
  });
  if (!order.empty()) {
    std::snprintf(line, sizeof line, "%-44s %6s %10s %10s %10s %10s\n", "cluster (by total time)",
                  "shapes", "calls", "mean", "p99", "total");
    out += line;
  }
  for (size_t i = 0; i < order.size() && i < 12; ++i) {
    const Cluster& c = a.clustering.clusters[order[i]];
    const DurationStats& st = a.cluster_stats[order[i]];
    const std::string name = "#" + std::to_string(order[i]) + " " + a.functions[c.function].name;
    std::snprintf(line, sizeof line, "%-44.44s %6zu %10llu %10s %10s %10s\n", name.c_str(),
                  c.shapes.size(), static_cast<unsigned long long>(st.moments.count()),
                  ns(st.moments.mean()).c_str(), ns(static_cast<double>(st.quantile(0.99))).c_str(),
                  ns(static_cast<double>(st.moments.sum())).c_str());
    out += line;
  }
  if (!a.outliers.empty()) out += "\nmost extreme outliers\n";
  for (size_t i = 0; i < a.outliers.size() && i < 5; ++i) {
    const Outlier& o = a.outliers[i];
    std::snprintf(line, sizeof line, "  %-40.40s thread %-6u %10s  (mean %s, %.1f sd)\n",
                  a.functions[o.function].name.c_str(), o.thread,
                  ns(static_cast<double>(o.duration_ns)).c_str(), ns(o.function_mean).c_str(),
                  o.score);
    out += line;
  }
  if (!tty) out += "\n";
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fflush(stdout);
}

int runLive(const LiveOptions& options) {
  const auto interval = std::chrono::milliseconds(static_cast<int64_t>(options.interval * 1000));

  // Bind first: a port in use is an error the user must see before anything else happens.
  httplib::Server server;
  // cpp-httplib sets SO_REUSEPORT by default, which lets a second server bind a port in use and
  // share its connections at random; SO_REUSEADDR alone makes "port in use" an error.
  server.set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  std::string url;
  if (!options.no_http) {
    const auto [host, port] = parseHostPort(options.http);
    const int bound = port == 0 ? server.bind_to_any_port(host) : (server.bind_to_port(host, port) ? port : -1);
    if (bound < 0)
      throw std::runtime_error("cannot listen on " + options.http +
                               ": the port is in use or the address is not local");
    if (!isLoopback(host))
      std::fprintf(stderr, "shapetrace live: warning: serving on %s, reachable from other hosts\n",
                   host.c_str());
    url = "http://" + (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" +
          std::to_string(bound) + "/";
  }

  LiveSession session(options.connect, options.analysis.settings,
                      options.analysis.workerCount(), options.analysis.extensions, interval);
  try {
    session.start();
  } catch (const std::exception& e) { // zmq::error_t: an endpoint ZeroMQ rejects
    throw std::runtime_error("cannot connect to " + options.connect + ": " + e.what());
  }

  std::thread http;
  if (!options.no_http) {
    const int interval_ms = static_cast<int>(interval.count());
    server.Get("/", [&session, interval_ms](const httplib::Request&, httplib::Response& res) {
      res.set_content(livePage(*session.latest(), interval_ms), "text/html; charset=utf-8");
    });
    server.Get("/api/snapshot", [&session](const httplib::Request&, httplib::Response& res) {
      res.set_header("Cache-Control", "no-store");
      res.set_content(session.latest()->data_json, "application/json");
    });
    // Browsers ask for an icon; an empty answer keeps their consoles free of 404s.
    server.Get("/favicon.ico",
               [](const httplib::Request&, httplib::Response& res) { res.status = 204; });
    http = std::thread([&server] { server.listen_after_bind(); });
    std::printf("shapetrace live: serving %s (Ctrl-C to stop)\n", url.c_str());
    std::fflush(stdout);
  }

  std::signal(SIGINT, onSignal);
  std::signal(SIGTERM, onSignal);
  const bool tty = ::isatty(STDOUT_FILENO) != 0;
  using Clock = std::chrono::steady_clock;
  const auto started = Clock::now();
  auto next_print = started + std::chrono::seconds(1);
  while (!g_stop.load()) {
    const auto now = Clock::now();
    if (options.duration > 0 &&
        now - started >= std::chrono::duration<double>(options.duration))
      break;
    if (now >= next_print) {
      printSummary(*session.latest(), options.connect, url, tty);
      next_print += std::chrono::seconds(1);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  session.stop();
  printSummary(*session.latest(), options.connect, url, false);
  if (http.joinable()) {
    server.stop();
    http.join();
  }
  return 0;
}

cli::Runner setupLive(CLI::App& command) {
  auto options = std::make_shared<LiveOptions>();
  command.add_option("--connect", options->connect,
                     "The collector's publish endpoint (shapetrace collect --publish ...)")
      ->required();
  command.add_option("--http", options->http,
                     "Serve the live page on HOST:PORT (port 0: any free port)")
      ->capture_default_str();
  command.add_flag("--no-http", options->no_http, "Terminal summary only, no web page");
  command.add_option("--duration", options->duration, "Stop after this many seconds (0: never)")
      ->check(CLI::NonNegativeNumber);
  command.add_option("--interval", options->interval, "Seconds between snapshots of the analysis")
      ->check(CLI::Range(0.1, 60.0))
      ->capture_default_str();
  addAnalysisFlags(command, options->analysis);
  return [options] { return runLive(*options); };
}

const cli::Registration live{"live",
                             "Analyse a running service: live page on localhost and a terminal "
                             "summary",
                             setupLive};

} // namespace
} // namespace shapetrace::analyzer::report
