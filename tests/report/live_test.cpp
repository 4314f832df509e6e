// `shapetrace live` end to end: a real PUB socket publishes the service trace (the fixture
// publisher), the command analyses it, serves the page and the snapshot over real HTTP, and prints
// its terminal summary; plus every usage error (port in use, bad --http, bad endpoint) and the
// "waiting for collector" state.
#include "support/files.h"
#include "support/memory.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <regex>
#include <spawn.h>
#include <sstream>
#include <sys/wait.h>
#include <thread>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

extern char** environ;

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

using shapetrace::testing::slurp;

// A child process with stdout and stderr in files.
class Child {
public:
  Child(std::vector<std::string> args, const fs::path& out, const fs::path& err) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
  }
  ~Child() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      wait();
    }
  }
  int wait() {
    int status = 0;
    if (pid_ > 0 && ::waitpid(pid_, &status, 0) == pid_) pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  void terminate() { ::kill(pid_, SIGTERM); }
  pid_t pid() const { return pid_; }

private:
  pid_t pid_ = -1;
};

// A free TCP port on 127.0.0.1 (bound and released; good enough for a test).
int freePort() {
  const int sock = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  int port = -1;
  if (::bind(sock, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
      ::getsockname(sock, reinterpret_cast<sockaddr*>(&address), &length) == 0)
    port = ntohs(address.sin_port);
  ::close(sock);
  return port;
}

class LiveTest : public ::testing::Test {
protected:
  void SetUp() override {
    dir = fs::temp_directory_path() /
          ("shapetrace-live-" + std::to_string(::getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  void TearDown() override { fs::remove_all(dir); }

  std::pair<int, std::string> run(const std::string& args) {
    const std::string command = std::string(SHAPETRACE_BINARY) + " " + args + " >" +
                                (dir / "out").string() + " 2>" + (dir / "err").string();
    const int status = std::system(command.c_str());
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(dir / "err")};
  }

  // Waits (bounded) until `ready` holds; the bound only turns a hang into a failure.
  template <class F> bool eventually(F ready) {
    for (int i = 0; i < 300; ++i) {
      if (ready()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }

  // The port `shapetrace live --http 127.0.0.1:0` printed in dir/NAME.out; 0 (and a failure) when
  // it printed none.
  int servingPort(const std::string& name) {
    int port = 0;
    EXPECT_TRUE(eventually([&] {
      std::smatch m;
      const std::string out = slurp(dir / (name + ".out"));
      if (!std::regex_search(out, m, std::regex(R"(serving http://127\.0\.0\.1:(\d+)/)"))) return false;
      port = std::stoi(m[1]);
      return true;
    })) << slurp(dir / (name + ".err"));
    return port;
  }

  fs::path dir;
};

TEST_F(LiveTest, ServesThePageAndASnapshotThatGrowsWithTheStream) {
  const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(freePort());
  Child live({SHAPETRACE_BINARY, "live", "--connect", endpoint, "--http", "127.0.0.1:0",
              "--interval", "0.2"},
             dir / "live.out", dir / "live.err");
  const int port = servingPort("live");
  ASSERT_NE(port, 0);
  httplib::Client client("127.0.0.1", port);

  // Before anything is published: waiting, nothing analysed.
  auto first = client.Get("/api/snapshot");
  ASSERT_TRUE(first);
  EXPECT_EQ(first->status, 200);
  Json snapshot = Json::parse(first->body);
  EXPECT_TRUE(snapshot["live_state"]["waiting"].get<bool>());
  EXPECT_EQ(snapshot["live_state"]["endpoint"], endpoint);

  Child publisher({SHAPETRACE_PUBLISHER, endpoint, "--seconds", "1"}, dir / "pub.out",
                  dir / "pub.err");
  ASSERT_EQ(publisher.wait(), 0) << slurp(dir / "pub.err");
  ASSERT_TRUE(eventually([&] {
    auto r = client.Get("/api/snapshot");
    if (!r) return false;
    snapshot = Json::parse(r->body);
    return snapshot["model"]["summary"]["calls"].get<uint64_t>() == 8697; // every call published
  })) << snapshot["model"]["summary"].dump();
  EXPECT_FALSE(snapshot["live_state"]["waiting"].get<bool>());
  // Every event received is analysed once the stream is over (live_state.progress, the headline).
  ASSERT_TRUE(eventually([&] {
    snapshot = Json::parse(client.Get("/api/snapshot")->body);
    return snapshot["live_state"]["progress"]["analysed_events"] == 17394;
  })) << snapshot["live_state"].dump();
  EXPECT_EQ(snapshot["live_state"]["progress"],
            Json::parse(R"({"received_events":17394,"analysed_events":17394,"waiting_events":0,)"
                        R"("missed_items":0})"));
  EXPECT_EQ(snapshot["model"]["summary"]["threads"], 5);
  EXPECT_EQ(snapshot["model"]["summary"]["clusters"], 14);
  EXPECT_EQ(snapshot["run"]["processes"][0]["executable"], "/opt/kvstore/bin/kvstore-server");

  auto page = client.Get("/");
  ASSERT_TRUE(page);
  EXPECT_THAT(page->get_header_value("Content-Type"), ::testing::HasSubstr("text/html"));
  EXPECT_THAT(page->body, ::testing::HasSubstr(R"("live":{"snapshot":"/api/snapshot")"));
  EXPECT_EQ(page->body.find("https://"), std::string::npos);
  EXPECT_EQ(page->body.find("http://"), std::string::npos);

  live.terminate();
  EXPECT_EQ(live.wait(), 0);
  const std::string out = slurp(dir / "live.out");
  EXPECT_THAT(out, ::testing::HasSubstr(
                       "analysed 17394 of 17394 events received · 0 items missed · 0 events "
                       "dropped by the traced processes\n5 threads  17394 events  8697 calls  17 "
                       "shapes  14 clusters"));
  // Function names short (analyzer/function_names.h): without their parameters.
  EXPECT_THAT(out, ::testing::HasSubstr("kv::Server::handle "));
  EXPECT_EQ(out.find("kv::Server::handle("), std::string::npos) << out;
  EXPECT_THAT(out, ::testing::HasSubstr("outliers that lost the most time"));
}

// A process's peak resident memory so far (VmHWM in /proc/PID/status), in MiB; -1 when unknown.
int64_t peakRssMib(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line))
    if (line.starts_with("VmHWM:")) return std::stoll(line.substr(6)) / 1024;
  return -1;
}

// A thread-per-request service under `live`: 100,000 short threads. Ended threads past the first
// 1,000 are folded with every extension's state of them, so the session's memory follows the
// threads alive, not every thread it saw (a service like this grew without limit).
TEST_F(LiveTest, AHundredThousandShortThreadsCostBoundedMemory) {
  const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(freePort());
  Child live({SHAPETRACE_BINARY, "live", "--connect", endpoint, "--no-http", "--interval", "0.5"},
             dir / "live.out", dir / "live.err");
  // Over 10 s (the analysis keeps up; a publisher that exits with items queued drops them).
  Child publisher({SHAPETRACE_PUBLISHER, endpoint, "--short-threads", "100000", "--seconds", "10"},
                  dir / "pub.out", dir / "pub.err");
  ASSERT_EQ(publisher.wait(), 0) << slurp(dir / "pub.err");
  // The bound only turns a hang into a failure.
  bool all = false;
  for (int i = 0; i < 1200 && !all; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    all = slurp(dir / "live.out").find("100000 threads  400000 events  200000 calls") !=
          std::string::npos;
  }
  const std::string out = slurp(dir / "live.out");
  ASSERT_TRUE(all) << out.substr(out.size() > 3000 ? out.size() - 3000 : 0) << slurp(dir / "live.err");
  const int64_t peak = peakRssMib(live.pid());
  live.terminate();
  EXPECT_EQ(live.wait(), 0) << slurp(dir / "live.err");
  // About 80 MiB: the threads kept whole, the folded ones, the page's snapshot.
  if (shapetrace::testing::kPeakRssMeasuresTheCode) { // the binary is built as this test is
    EXPECT_GT(peak, 0);
    EXPECT_LT(peak, 300) << "MiB";
  }
  EXPECT_THAT(slurp(dir / "live.out"), ::testing::HasSubstr("0 items missed"));
}

// The samples of a /metrics text, read by the Prometheus project's own parser.
Json parseMetrics(const fs::path& dir, const std::string& text) {
  std::ofstream(dir / "metrics.txt") << text;
  const std::string command = std::string(SHAPETRACE_PARSE_METRICS) + " < " +
                              (dir / "metrics.txt").string() + " > " +
                              (dir / "metrics.json").string() + " 2> " +
                              (dir / "metrics.err").string();
  if (std::system(command.c_str()) != 0) {
    ADD_FAILURE() << slurp(dir / "metrics.err");
    return Json::array();
  }
  return Json::parse(slurp(dir / "metrics.json"));
}

// The value of the sample `name` with `labels` (a subset), or NaN.
double sampleValue(const Json& samples, const std::string& name, const Json& labels = Json::object()) {
  for (const Json& s : samples) {
    if (s["name"] != name) continue;
    bool match = true;
    for (auto& [k, v] : labels.items())
      match = match && s["labels"].contains(k) && s["labels"][k] == v;
    if (match) return s["value"].get<double>();
  }
  return std::nan("");
}

TEST_F(LiveTest, ServesPrometheusMetricsEqualToTheModel) {
  const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(freePort());
  Child live({SHAPETRACE_BINARY, "live", "--connect", endpoint, "--http", "127.0.0.1:0",
              "--interval", "0.2", "--metrics-top", "5", "--metrics-cluster-function",
              "kv::Server::handle"},
             dir / "live.out", dir / "live.err");
  const int port = servingPort("live");
  ASSERT_NE(port, 0);
  httplib::Client client("127.0.0.1", port);
  Child publisher({SHAPETRACE_PUBLISHER, endpoint, "--seconds", "1"}, dir / "pub.out",
                  dir / "pub.err");
  ASSERT_EQ(publisher.wait(), 0) << slurp(dir / "pub.err");
  Json snapshot;
  ASSERT_TRUE(eventually([&] {
    auto r = client.Get("/api/snapshot");
    if (!r) return false;
    snapshot = Json::parse(r->body);
    return snapshot["model"]["summary"]["calls"].get<uint64_t>() == 8697;
  }));
  // The stream is over: the next snapshots are the same moment, so both answers agree.
  auto metrics = client.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 200);
  EXPECT_EQ(metrics->get_header_value("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
  snapshot = Json::parse(client.Get("/api/snapshot")->body);
  const Json samples = parseMetrics(dir, metrics->body);
  const Json& model = snapshot["model"];

  EXPECT_EQ(sampleValue(samples, "shapetrace_calls_total"), 8697);
  EXPECT_EQ(sampleValue(samples, "shapetrace_events_total"), 17394);
  EXPECT_EQ(sampleValue(samples, "shapetrace_events_received_total"), 17394);
  EXPECT_EQ(sampleValue(samples, "shapetrace_events_waiting"), 0);
  EXPECT_EQ(sampleValue(samples, "shapetrace_clusters"), model["summary"]["clusters"].get<double>());
  EXPECT_EQ(sampleValue(samples, "shapetrace_events_dropped_total"), 0);
  // One count of outliers everywhere: every call judged one, kept or not.
  EXPECT_EQ(sampleValue(samples, "shapetrace_outliers_total"),
            model["summary"]["outliers_found"].get<double>());
  EXPECT_GE(model["summary"]["outliers_found"], model["summary"]["outliers_kept"]);

  // The five functions with the most time, each with its calls and its durations' histogram.
  std::vector<Json> functions(model["functions"].begin(), model["functions"].end());
  std::sort(functions.begin(), functions.end(), [](const Json& a, const Json& b) {
    const double sa = a["stats"]["sum_ns"].get<double>(), sb = b["stats"]["sum_ns"].get<double>();
    return sa != sb ? sa > sb : a["id"].get<int>() < b["id"].get<int>();
  });
  size_t function_series = 0;
  for (const Json& s : samples) function_series += s["name"] == "shapetrace_function_calls_total";
  EXPECT_EQ(function_series, 5u);
  for (size_t i = 0; i < 5; ++i) {
    const Json& f = functions[i];
    // Labelled with the short name: these have no template arguments, so it is the name without
    // its parameters.
    const std::string full = f["name"];
    const Json label = {{"function", full.substr(0, full.find('('))}};
    SCOPED_TRACE(f["name"].get<std::string>());
    EXPECT_EQ(sampleValue(samples, "shapetrace_function_calls_total", label), f["calls"].get<double>());
    EXPECT_EQ(sampleValue(samples, "shapetrace_function_duration_seconds_count", label),
              f["stats"]["count"].get<double>());
    EXPECT_NEAR(sampleValue(samples, "shapetrace_function_duration_seconds_sum", label),
                f["stats"]["sum_ns"].get<double>() / 1e9, 1e-9);
    Json inf = label;
    inf["le"] = "+Inf";
    EXPECT_EQ(sampleValue(samples, "shapetrace_function_duration_seconds_bucket", inf),
              f["stats"]["count"].get<double>());
    // Below the fastest call nothing; from the slowest on, everything.
    double previous = 0;
    for (const Json& s : samples) {
      if (s["name"] != "shapetrace_function_duration_seconds_bucket" || s["labels"]["function"] != label["function"]) continue;
      const double value = s["value"].get<double>();
      EXPECT_GE(value, previous);
      previous = value;
      const std::string le = s["labels"]["le"];
      if (le == "+Inf") continue;
      const double bound_ns = std::stod(le) * 1e9;
      if (bound_ns < f["stats"]["min_ns"].get<double>()) EXPECT_EQ(value, 0) << le;
      if (bound_ns > 1.04 * f["stats"]["max_ns"].get<double>()) EXPECT_EQ(value, f["stats"]["count"].get<double>()) << le;
    }
  }

  // Every cluster of kv::Server::handle, and no other.
  size_t handle_clusters = 0;
  for (const Json& c : model["clusters"]) {
    if (model["functions"][c["function"].get<size_t>()]["name"] != "kv::Server::handle(kv::Request const&)") continue;
    ++handle_clusters;
    std::string key;
    for (const Json& s : samples)
      if (s["name"] == "shapetrace_cluster_info" && s["labels"]["id"] == std::to_string(c["id"].get<int>()))
        key = s["labels"]["cluster"];
    ASSERT_EQ(key.size(), 16u) << c["id"];
    const Json label = {{"cluster", key}};
    EXPECT_EQ(sampleValue(samples, "shapetrace_cluster_calls_total", label), c["calls"].get<double>());
    EXPECT_EQ(sampleValue(samples, "shapetrace_cluster_duration_seconds_count", label),
              c["stats"]["count"].get<double>());
  }
  EXPECT_GT(handle_clusters, 0u);
  size_t info = 0;
  for (const Json& s : samples) info += s["name"] == "shapetrace_cluster_info";
  EXPECT_EQ(info, handle_clusters);
  live.terminate();
  EXPECT_EQ(live.wait(), 0);
}

TEST_F(LiveTest, InstanceRequestsAreCheckedAndNeedTheRecording) {
  const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(freePort());
  auto start = [&](std::vector<std::string> extra, const std::string& name) {
    std::vector<std::string> args{SHAPETRACE_BINARY, "live", "--connect", endpoint, "--http",
                                  "127.0.0.1:0"};
    args.insert(args.end(), extra.begin(), extra.end());
    return std::make_unique<Child>(args, dir / (name + ".out"), dir / (name + ".err"));
  };
  const std::string query = "/api/instance?process=1&thread=2&from_ns=10&to_ns=20&cluster=0";
  {
    auto plain = start({}, "plain");
    httplib::Client client("127.0.0.1", servingPort("plain"));
    auto r = client.Get(query);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 404);
    EXPECT_THAT(r->body, ::testing::HasSubstr("start shapetrace live with --recording DIR"));
  }
  fs::create_directories(dir / "rec");
  auto recorded = start({"--recording", (dir / "rec").string()}, "recorded");
  httplib::Client client("127.0.0.1", servingPort("recorded"));
  auto missing = client.Get("/api/instance?process=1&thread=2&from_ns=10&to_ns=20");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 400);
  EXPECT_EQ(missing->body, "give cluster, or function and duration_ns\n");
  auto bad = client.Get("/api/instance?process=1&thread=x&from_ns=10&to_ns=20&cluster=0");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  EXPECT_EQ(bad->body, "parameter thread is not a number: 'x'\n");
  auto backwards = client.Get("/api/instance?process=1&thread=2&from_ns=30&to_ns=20&cluster=0");
  ASSERT_TRUE(backwards);
  EXPECT_EQ(backwards->status, 400);
  auto none = client.Get(query); // no such thread in the (empty) analysis
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 404);
  EXPECT_EQ(none->body, "no such call in the recording (yet)\n");
  // A directory that does not exist is refused at the start.
  const auto [code, err] = run("live --connect " + endpoint + " --recording " +
                               (dir / "nowhere").string() + " --no-http --duration 0.1");
  EXPECT_EQ(code, 2);
  EXPECT_THAT(err, ::testing::HasSubstr("nowhere"));
}

TEST_F(LiveTest, SaysItIsWaitingForTheCollector) {
  const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(freePort());
  const auto [code, err] = run("live --connect " + endpoint + " --no-http --duration 1.2");
  EXPECT_EQ(code, 0) << err;
  EXPECT_THAT(slurp(dir / "out"), ::testing::HasSubstr("waiting for collector at " + endpoint));
}

TEST_F(LiveTest, PortInUseIsAClearError) {
  httplib::Server occupant;
  const int port = occupant.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  std::thread serving([&] { occupant.listen_after_bind(); });
  const auto [code, err] =
      run("live --connect tcp://127.0.0.1:1 --http 127.0.0.1:" + std::to_string(port));
  EXPECT_EQ(code, 1);
  EXPECT_THAT(err, ::testing::HasSubstr("cannot listen on 127.0.0.1:" + std::to_string(port)));
  occupant.stop();
  serving.join();
}

TEST_F(LiveTest, BadArgumentsAreClearErrors) {
  auto [code, err] = run("live --connect tcp://127.0.0.1:1 --http localhost");
  EXPECT_EQ(code, 1);
  EXPECT_THAT(err, ::testing::HasSubstr("--http wants HOST:PORT"));
  std::tie(code, err) = run("live --connect tcp://127.0.0.1:1 --http 127.0.0.1:99999");
  EXPECT_EQ(code, 1);
  EXPECT_THAT(err, ::testing::HasSubstr("not a port number"));
  std::tie(code, err) = run("live --connect nonsense://x --no-http --duration 1");
  EXPECT_EQ(code, 1);
  EXPECT_THAT(err, ::testing::HasSubstr("cannot connect to nonsense://x"));
  std::tie(code, err) = run("live");
  EXPECT_NE(code, 0);
  EXPECT_THAT(err, ::testing::HasSubstr("--connect is required"));
}

} // namespace

namespace {

std::string firstLine(const fs::path& file) {
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);
  return line;
}

// The port from a `live`'s "serving" line in `out` (waits for it; 0 when it never came).
int startLive(const fs::path& out, const std::string& host_pattern) {
  for (int i = 0; i < 300; ++i) {
    std::smatch m;
    const std::string text = slurp(out);
    if (std::regex_search(text, m, std::regex("serving https?://" + host_pattern + R"(:(\d+)/)")))
      return std::stoi(m[1]);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return 0;
}

// A raw connection to 127.0.0.1:port.
int connectTo(int port) {
  const int sock = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(sock, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    ::close(sock);
    return -1;
  }
  return sock;
}

// GET /api/snapshot with these header lines (each ending in CRLF), on a connection of its own;
// the whole answer.
std::string requestWithHeaders(int port, const std::string& headers) {
  const int sock = connectTo(port);
  if (sock < 0)
    return "no connection";
  const std::string text =
      "GET /api/snapshot HTTP/1.1\r\n" + headers + "Connection: close\r\n\r\n";
  ::send(sock, text.data(), text.size(), MSG_NOSIGNAL);
  std::string answer;
  char buffer[4096];
  ssize_t got = 0;
  while ((got = ::recv(sock, buffer, sizeof buffer, 0)) > 0)
    answer.append(buffer, static_cast<size_t>(got));
  ::close(sock);
  return answer;
}

// The same with this Host header (none when empty).
std::string request(int port, const std::string& host) {
  return requestWithHeaders(port, host.empty() ? "" : "Host: " + host + "\r\n");
}

TEST_F(LiveTest, AnswersOnlyRequestsForItsOwnNames) {
  const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(freePort());
  Child live({SHAPETRACE_BINARY, "live", "--connect", endpoint, "--http", "127.0.0.1:0"},
             dir / "live.out", dir / "live.err");
  const int port = startLive(dir / "live.out", R"(127\.0\.0\.1)");
  ASSERT_GT(port, 0) << slurp(dir / "live.err");
  const std::string p = ":" + std::to_string(port);
  for (const std::string& host : {"127.0.0.1" + p, "localhost" + p, "LOCALHOST" + p, "[::1]" + p,
                                  std::string("localhost"), "127.1.2.3" + p,
                                  "[::ffff:127.0.0.1]" + p})
    EXPECT_THAT(request(port, host), ::testing::StartsWith("HTTP/1.1 200")) << host;
  // A DNS-rebinding page sends its own name, or any address its name resolves to; a wrong port is
  // not this server either.
  for (const std::string& host : {"attacker.example" + p, std::string("attacker.example"),
                                  std::string("localhost:1"), "localhost.attacker.example" + p,
                                  std::string(""), "1.2.3.4" + p, std::string("1.2.3.4"),
                                  "[::ffff:1.2.3.4]" + p, "[2001:db8::1]" + p}) {
    const std::string answer = request(port, host);
    EXPECT_THAT(answer, ::testing::StartsWith("HTTP/1.1 421")) << host;
    EXPECT_EQ(answer.find("live_state"), std::string::npos) << host;
  }
  // Two Host headers: refused whichever comes first.
  for (const std::string& headers : {"Host: localhost" + p + "\r\nHost: attacker.example\r\n",
                                     "Host: attacker.example\r\nHost: localhost" + p + "\r\n",
                                     "Host: localhost" + p + "\r\nHost: localhost" + p + "\r\n"})
    EXPECT_THAT(requestWithHeaders(port, headers), ::testing::StartsWith("HTTP/1.1 421"))
        << headers;
}

TEST_F(LiveTest, ClientsTricklingAHeaderDoNotKeepItFromAnsweringAndTimeOut) {
  const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(freePort());
  Child live({SHAPETRACE_BINARY, "live", "--connect", endpoint, "--http", "127.0.0.1:0"},
             dir / "live.out", dir / "live.err");
  const int port = startLive(dir / "live.out", R"(127\.0\.0\.1)");
  ASSERT_GT(port, 0) << slurp(dir / "live.err");
  // 40 connections that start a request and send one more byte of it every half second.
  std::vector<int> slow;
  for (int i = 0; i < 40; ++i) {
    const int sock = connectTo(port);
    ASSERT_GE(sock, 0);
    const std::string start = "GET /api/snapshot HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ";
    ASSERT_EQ(::send(sock, start.data(), start.size(), MSG_NOSIGNAL), ssize_t(start.size()));
    slow.push_back(sock);
  }
  std::atomic<bool> trickling{true};
  std::thread trickler([&] {
    while (trickling) {
      for (int sock : slow)
        ::send(sock, "a", 1, MSG_NOSIGNAL);
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
  });
  // Meanwhile an ordinary client is answered at once.
  for (int i = 0; i < 3; ++i) {
    httplib::Client client("127.0.0.1", port);
    client.set_read_timeout(3, 0);
    const auto started = std::chrono::steady_clock::now();
    auto r = client.Get("/api/snapshot");
    ASSERT_TRUE(r) << "request " << i << " not answered";
    EXPECT_EQ(r->status, 200);
    EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(2));
  }
  trickling = false;
  trickler.join();
  // A connection that stops sending its header is closed after the read timeout (2 s).
  const auto stopped = std::chrono::steady_clock::now();
  for (int sock : slow) {
    timeval wait{10, 0};
    ::setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
    // An error status at most (cpp-httplib answers 400 to a header it could not read), then the
    // end of the connection; never the data.
    std::string answer;
    char buffer[4096];
    ssize_t got = 0;
    while ((got = ::recv(sock, buffer, sizeof buffer, 0)) > 0)
      answer.append(buffer, static_cast<size_t>(got));
    EXPECT_TRUE(got == 0 || errno == ECONNRESET) << "not closed";
    EXPECT_TRUE(answer.empty() || answer.starts_with("HTTP/1.1 4")) << answer;
    ::close(sock);
  }
  EXPECT_LT(std::chrono::steady_clock::now() - stopped, std::chrono::seconds(5));
  live.terminate();
  EXPECT_EQ(live.wait(), 0);
}

TEST_F(LiveTest, AWildcardBindIsReportedWithAnAddressToOpen) {
  const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(freePort());
  Child live({SHAPETRACE_BINARY, "live", "--connect", endpoint, "--http", "[::]:0", "--token-file",
              (dir / "token").string()},
             dir / "live.out", dir / "live.err");
  const int port = startLive(dir / "live.out", "localhost");
  ASSERT_GT(port, 0) << slurp(dir / "live.out") << slurp(dir / "live.err");
  EXPECT_THAT(slurp(dir / "live.err"),
              ::testing::HasSubstr("serving on every address (::), reachable from other hosts"));
  httplib::Client client("::1", port);
  auto r = client.Get("/api/snapshot", {{"Authorization", "Bearer " + firstLine(dir / "token")}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  live.terminate();
  EXPECT_EQ(live.wait(), 0);
}

TEST_F(LiveTest, OffLoopbackItRefusesToStartWithoutAToken) {
  auto [code, err] = run("live --connect tcp://127.0.0.1:1 --http 0.0.0.0:0 --duration 1");
  EXPECT_EQ(code, 1);
  EXPECT_THAT(err, ::testing::HasSubstr("refusing to serve the live page on 0.0.0.0:0: it is "
                                        "reachable from other hosts and would be unauthenticated"));
  std::ofstream(dir / "open-token") << "0123456789abcdef0123\n";
  fs::permissions(dir / "open-token", fs::perms::owner_read | fs::perms::owner_write |
                                          fs::perms::group_read | fs::perms::others_read);
  std::tie(code, err) = run("live --connect tcp://127.0.0.1:1 --http 0.0.0.0:0 --duration 1 "
                            "--token-file " + (dir / "open-token").string());
  EXPECT_EQ(code, 1);
  EXPECT_THAT(err, ::testing::HasSubstr("is accessible to other users; run 'chmod 600"));
}

TEST_F(LiveTest, WithATokenOnlyRequestsThatCarryItAreAnswered) {
  const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(freePort());
  const fs::path token_file = dir / "token";
  Child live({SHAPETRACE_BINARY, "live", "--connect", endpoint, "--http", "0.0.0.0:0",
              "--token-file", token_file.string()},
             dir / "live.out", dir / "live.err");
  const int port = startLive(dir / "live.out", "localhost");
  ASSERT_GT(port, 0) << slurp(dir / "live.err");
  // Made private, with a fresh 256-bit token, printed once in the URL to open.
  EXPECT_EQ(fs::status(token_file).permissions() & fs::perms::mask,
            fs::perms::owner_read | fs::perms::owner_write);
  const std::string token = firstLine(token_file);
  EXPECT_EQ(token.size(), 64u);
  EXPECT_THAT(slurp(dir / "live.out"), ::testing::HasSubstr("/?token=" + token + " "));

  httplib::Client client("127.0.0.1", port);
  for (const auto& path : {"/", "/api/snapshot", "/api/snapshot?token=wrong"}) {
    auto r = client.Get(path);
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 401) << path;
    EXPECT_EQ(r->body.find("live_state"), std::string::npos) << path;
  }
  auto r = client.Get("/api/snapshot", {{"Authorization", "Bearer x" + token}});
  EXPECT_EQ(r->status, 401);
  r = client.Get("/api/snapshot", {{"Authorization", "Bearer " + token}});
  EXPECT_EQ(r->status, 200);
  EXPECT_NE(r->body.find("live_state"), std::string::npos);
  // The printed URL opens the page and leaves a cookie for the page's own requests.
  r = client.Get("/?token=" + token);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Set-Cookie"),
            "shapetrace_token=" + token + "; HttpOnly; SameSite=Strict; Path=/");
  r = client.Get("/api/snapshot", {{"Cookie", "other=1; shapetrace_token=" + token}});
  EXPECT_EQ(r->status, 200);
  // Only the documented paths exist, and no request carries a large body.
  r = client.Get("/etc/passwd", {{"Authorization", "Bearer " + token}});
  EXPECT_EQ(r->status, 404);
  r = client.Post("/api/snapshot", {{"Authorization", "Bearer " + token}},
                  std::string(1 << 20, 'x'), "text/plain");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413);
  live.terminate();
  EXPECT_EQ(live.wait(), 0);
}

// --tls-cert/--tls-key: the page over HTTPS (cpp-httplib's OpenSSL support), with the token.
TEST_F(LiveTest, ServesHttpsWithACertificate) {
  const std::string cert = (dir / "cert.pem").string(), key = (dir / "key.pem").string();
  ASSERT_EQ(std::system(("openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost "
                         "-keyout " + key + " -out " + cert + " 2>/dev/null").c_str()), 0);
  const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(freePort());
  Child live({SHAPETRACE_BINARY, "live", "--connect", endpoint, "--http", "127.0.0.1:0",
              "--tls-cert", cert, "--tls-key", key, "--token-file", (dir / "token").string()},
             dir / "live.out", dir / "live.err");
  const int port = startLive(dir / "live.out", R"(127\.0\.0\.1)");
  ASSERT_GT(port, 0) << slurp(dir / "live.err");
  EXPECT_THAT(slurp(dir / "live.out"), ::testing::HasSubstr("serving https://127.0.0.1:"));
  httplib::SSLClient client("127.0.0.1", port);
  client.enable_server_certificate_verification(false); // self-signed for the test
  auto r = client.Get("/api/snapshot", {{"Authorization", "Bearer " + firstLine(dir / "token")}});
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 200);
  r = client.Get("/api/snapshot");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
  // Plain HTTP on the same port gets no data.
  EXPECT_EQ(request(port, "127.0.0.1").find("live_state"), std::string::npos);
  live.terminate();
  EXPECT_EQ(live.wait(), 0);
  auto [code, err] = run("live --connect " + endpoint + " --tls-cert " + cert + " --tls-key " + cert);
  EXPECT_EQ(code, 1);
  EXPECT_THAT(err, ::testing::HasSubstr("cannot use the TLS certificate"));
}

} // namespace
