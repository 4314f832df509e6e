// The fleet through a real nats-server (started by the test, JetStream on a temporary directory):
// hosts publish their summaries with HostPublisher (what `shapetrace live --nats` runs), the
// `shapetrace fleet` binary merges them. The merged model must be the one a single analyzer
// computes over the union of the hosts' items, whatever happened on the way.
#include "fleet/host_publisher.h"
#include "fleet/nats.h"
#include "hosts.h"
#include "model_json.h"
#include "nats_server.h"
#include "collector/process.h"
#include "recording/recording.h"
#include "support/command.h"

#include <cstdio>
#include <fstream>
#include <optional>
#include <gtest/gtest.h>

#include <csignal>
#include <nlohmann/json.hpp>
#include <thread>

namespace shapetrace::fleet {
namespace {

using analyzer::AnalysisSettings;
using analyzer::Analyzer;
using nlohmann::json;

// The model as the fleet's --json holds it, without what only the fleet has ("fleet") and what
// summaries do not carry (the DAG's size).
json modelPart(json model) {
  model.erase("fleet");
  model["summary"].erase("dag_nodes");
  return model;
}

json unionModel(const std::vector<std::vector<wire::StreamItem>>& hosts) {
  Analyzer single(AnalysisSettings{}, 1);
  for (const auto& items : hosts)
    for (const auto& item : items)
      single.consume(item);
  return modelPart(json::parse(analyzer::toJson(single.snapshot()).dump()));
}

class FleetNats : public shapetrace::testing::CommandTest {
protected:
  FleetNats() : CommandTest("shapetrace-fleet-") {}
  void SetUp() override {
    CommandTest::SetUp();
    std::filesystem::create_directories(dir / "nats");
    nats = std::make_unique<testing::NatsServer>(dir / "nats");
    settings.url = nats->url();
  }
  void TearDown() override {
    nats.reset();
    CommandTest::TearDown();
  }

  // Runs `shapetrace fleet` for a moment and returns its --json.
  json runFleet(const std::string& durable = "view") {
    const auto result =
        runCommand(std::string(SHAPETRACE_BINARY) + " fleet --nats " + nats->url() +
                   " --stream S --durable " + durable + " --duration 3 --json " +
                   (dir / "fleet.json").string() + " --html " + (dir / "fleet.html").string());
    EXPECT_EQ(result.exit_code, 0) << result.err;
    fleet_out = result.out;
    return json::parse(shapetrace::testing::slurp(dir / "fleet.json"));
  }
  std::string fleet_out; // the last runFleet's terminal summary

  // A host publishing the analysis of `items` as one summary, delivered before it returns.
  void publishHost(const std::string& host, const std::vector<wire::StreamItem>& items) {
    Analyzer analyzer(AnalysisSettings{}, 1);
    for (const auto& item : items)
      analyzer.consume(item);
    HostPublisher publisher(settings, "S", host, "/var/rec/" + host);
    publisher.takeSummary(analyzer);
    ASSERT_TRUE(publisher.waitDelivered(std::chrono::seconds(20))) << publisher.status().last_error;
  }

  std::unique_ptr<testing::NatsServer> nats;
  NatsSettings settings;
};

TEST_F(FleetNats, ThreeHostsMergeToTheSingleAnalyzerModelOfTheirUnion) {
  std::vector<std::vector<wire::StreamItem>> hosts;
  for (unsigned host = 0; host < 3; ++host) {
    hosts.push_back(testing::hostItems(host));
    publishHost("host-" + std::to_string(host), hosts.back());
  }
  const json model = runFleet();
  EXPECT_EQ(modelPart(model).dump(1), unionModel(hosts).dump(1));
  const json& fleet = model["fleet"];
  ASSERT_EQ(fleet["hosts"].size(), 3u);
  // The report page of the same model.
  const std::string page = shapetrace::testing::slurp(dir / "fleet.html");
  EXPECT_NE(page.find("<html"), std::string::npos);
  EXPECT_NE(page.find("\"kind\":\"fleet\""), std::string::npos);
  EXPECT_NE(page.find("_Z6handlev"), std::string::npos);
  EXPECT_EQ(fleet["hosts"][1]["host"], "host-1");
  EXPECT_EQ(fleet["hosts"][1]["recording"], "/var/rec/host-1");
  EXPECT_EQ(fleet["hosts"][1]["threads"].size(), 4u);
  EXPECT_EQ(fleet["accepted"], 3);
  EXPECT_EQ(fleet["malformed"], 0);
  // The terminal summary: live's tables, each row with the hosts it comes from.
  EXPECT_NE(fleet_out.find("3 hosts, 12 threads"), std::string::npos) << fleet_out;
  EXPECT_NE(fleet_out.find("cluster (by time summed over calls)"), std::string::npos) << fleet_out;
  EXPECT_NE(fleet_out.find("  hosts\n"), std::string::npos) << fleet_out;
  EXPECT_NE(fleet_out.find("  host-0,host-1,host-2\n"), std::string::npos) << fleet_out;
}

TEST_F(FleetNats, AResentSummaryIsADuplicateAndAForeignMessageIsSkipped) {
  const auto items = testing::hostItems(0);
  Analyzer analyzer(AnalysisSettings{}, 1);
  for (const auto& item : items)
    analyzer.consume(item);
  const wire::Bytes summary = encodeSummary({"host-0", 1, 0, "", 42}, analyzer.mergeInputs());
  SummaryPublisher host(settings, "S", "host-0");
  ASSERT_EQ(host.publish(summary, 42, 1, std::chrono::seconds(5)), "");
  // The same summary again under another message id (JetStream's duplicate window would drop a
  // re-send with the same one): only the fleet can tell.
  ASSERT_EQ(host.publish(summary, 43, 1, std::chrono::seconds(5)), "");
  // Bytes that are no summary, on a host's subject.
  SummaryPublisher foreign(settings, "S", "intruder");
  const std::string junk = "{\"not\": \"a summary\"}....";
  ASSERT_EQ(foreign.publish(std::as_bytes(std::span(junk)), 1, 1, std::chrono::seconds(5)), "");

  const json model = runFleet();
  const json& fleet = model["fleet"];
  EXPECT_EQ(fleet["accepted"], 1);
  EXPECT_GE(fleet["duplicates"], 1); // the re-send (and the consumer's delivery of the latest)
  EXPECT_EQ(fleet["malformed"], 2);  // the latest of "intruder", then the consumer's delivery
  EXPECT_EQ(modelPart(model).dump(1), unionModel({items}).dump(1));
  EXPECT_NE(shapetrace::testing::slurp(dir / "stderr").find("not a summary"), std::string::npos);
}

// The forged summary of docs/security.md (8 threads naming function 2^24-1) took 4 GB and ended
// the view with bad_alloc, and every restart again, JetStream keeping it. Now it costs what its
// bytes do: the view survives it, twice, and merges the good summary published after it.
TEST_F(FleetNats, TheForgedSummaryStopsNothingAndTheNextGoodOneIsMerged) {
  publishHost("forger", testing::largestFunctionIdItems(8));
  const auto items = testing::hostItems(0);
  publishHost("host-0", items);
  for (int run = 0; run < 2; ++run) {
    const json model = runFleet("view");
    const json& fleet = model["fleet"];
    ASSERT_EQ(fleet["hosts"].size(), 2u) << run;
    EXPECT_EQ(fleet["hosts"][0]["host"], "forger");
    EXPECT_EQ(fleet["hosts"][0]["threads"].size(), 8u);
    EXPECT_EQ(fleet["hosts"][1]["host"], "host-0");
    EXPECT_EQ(fleet["hosts"][1]["threads"].size(), 4u);
    EXPECT_EQ(fleet["malformed"], 0);
    EXPECT_EQ(model["summary"]["threads"], 12);
  }
}

TEST_F(FleetNats, ARestartedFleetViewResumesAndCountsNothingTwice) {
  std::vector<std::vector<wire::StreamItem>> hosts;
  for (unsigned host = 0; host < 3; ++host)
    hosts.push_back(testing::hostItems(host));
  // Host 0 publishes half its items, the others everything.
  const size_t half = hosts[0].size() / 2;
  Analyzer host0(AnalysisSettings{}, 1);
  HostPublisher publisher0(settings, "S", "host-0", "");
  for (size_t i = 0; i < half; ++i)
    host0.consume(hosts[0][i]);
  publisher0.takeSummary(host0);
  ASSERT_TRUE(publisher0.waitDelivered(std::chrono::seconds(20)));
  publishHost("host-1", hosts[1]);
  publishHost("host-2", hosts[2]);
  const json first = runFleet("view");
  EXPECT_EQ(first["fleet"]["accepted"], 3);

  // While the view is down, host 0 publishes the rest.
  for (size_t i = half; i < hosts[0].size(); ++i)
    host0.consume(hosts[0][i]);
  publisher0.takeSummary(host0);
  ASSERT_TRUE(publisher0.waitDelivered(std::chrono::seconds(20)));
  const json second = runFleet("view");
  EXPECT_EQ(modelPart(second).dump(1), unionModel(hosts).dump(1));
  EXPECT_EQ(second["fleet"]["hosts"][0]["sequence"], 2);
  // The durable consumer delivers only host 0's second summary, already taken as its latest.
  EXPECT_EQ(second["fleet"]["duplicates"], 1);
}

TEST_F(FleetNats, NatsKilledAndRestartedLosesNothingAndCountsTheGap) {
  const auto items = testing::hostItems(0, 1, 2, 3);
  const size_t third = items.size() / 3;
  Analyzer analyzer(AnalysisSettings{}, 1);
  HostPublisher publisher(settings, "S", "host-0", "");
  size_t fed = 0;
  auto feed = [&](size_t until) {
    for (; fed < until; ++fed)
      analyzer.consume(items[fed]);
  };
  feed(third);
  publisher.takeSummary(analyzer);
  ASSERT_TRUE(publisher.waitDelivered(std::chrono::seconds(20)));

  nats->stop(SIGKILL);
  feed(2 * third);
  publisher.takeSummary(analyzer); // sequence 2: NATS is away
  EXPECT_FALSE(publisher.waitDelivered(std::chrono::milliseconds(1500)));
  feed(items.size());
  publisher.takeSummary(analyzer); // sequence 3 supersedes 2, never sent
  const PublisherStatus away = publisher.status();
  EXPECT_FALSE(away.connected);
  EXPECT_EQ(away.published, 1u);
  EXPECT_EQ(away.superseded, 1u);

  nats->start();
  ASSERT_TRUE(publisher.waitDelivered(std::chrono::seconds(30))) << publisher.status().last_error;
  EXPECT_EQ(publisher.status().published, 2u);
  const json model = runFleet();
  EXPECT_EQ(modelPart(model).dump(1), unionModel({items}).dump(1));
  EXPECT_EQ(model["fleet"]["hosts"][0]["sequence"], 3);
  EXPECT_EQ(model["fleet"]["skipped"], 2); // 1 and 2: superseded by 3, which holds them
}

// `shapetrace live --nats` end to end: a publisher as a collector's (the report tests' service
// trace) feeds live, which publishes a summary every window and a last one when it stops; the
// fleet view then holds exactly live's final analysis.
TEST_F(FleetNats, LivePublishesItsAnalysisForTheFleet) {
  const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(testing::freePort());
  const std::string live = std::string(SHAPETRACE_BINARY) + " live --connect " + endpoint +
                           " --no-http --duration 5 --nats " + nats->url() +
                           " --stream S --host web-1 --window 0.5 >" + (dir / "live.out").string() +
                           " 2>" + (dir / "live.err").string();
  std::thread live_thread([&] { EXPECT_EQ(std::system(live.c_str()), 0); });
  const std::string publisher = std::string(SHAPETRACE_PUBLISHER) + " " + endpoint +
                                " --seconds 1 >/dev/null 2>" + (dir / "pub.err").string();
  EXPECT_EQ(std::system(publisher.c_str()), 0) << shapetrace::testing::slurp(dir / "pub.err");
  live_thread.join();
  const std::string out = shapetrace::testing::slurp(dir / "live.out");
  // live's last terminal summary, and its fleet line: every summary taken was published.
  const size_t last = out.rfind("shapetrace live");
  ASSERT_NE(last, std::string::npos) << out;
  const std::string final_summary = out.substr(last);
  unsigned long long encoded = 0, published = 0;
  const size_t fleet_line = final_summary.find("fleet: ");
  ASSERT_NE(fleet_line, std::string::npos) << final_summary;
  ASSERT_EQ(std::sscanf(final_summary.c_str() + fleet_line, "fleet: %llu of %llu summaries",
                        &published, &encoded),
            2);
  EXPECT_EQ(published, encoded);
  EXPECT_GE(encoded, 2u);

  const json model = runFleet();
  ASSERT_EQ(model["fleet"]["hosts"].size(), 1u);
  EXPECT_EQ(model["fleet"]["hosts"][0]["host"], "web-1");
  EXPECT_EQ(model["fleet"]["hosts"][0]["sequence"], encoded);
  const json& summary = model["summary"];
  ASSERT_GT(summary["events"].get<uint64_t>(), 0u);
  char counts[256];
  std::snprintf(counts, sizeof counts,
                "%llu threads  %llu events  %llu calls  %llu shapes  %llu clusters",
                static_cast<unsigned long long>(summary["threads"].get<uint64_t>()),
                static_cast<unsigned long long>(summary["events"].get<uint64_t>()),
                static_cast<unsigned long long>(summary["calls"].get<uint64_t>()),
                static_cast<unsigned long long>(summary["shapes"].get<uint64_t>()),
                static_cast<unsigned long long>(summary["clusters"].get<uint64_t>()));
  EXPECT_NE(final_summary.find(counts), std::string::npos) << counts << "\n" << final_summary;

  // The host stopped after analysing everything it received, and said so in its last summary:
  // the fleet's headline is complete, with nothing it lacks.
  const uint64_t events = summary["events"].get<uint64_t>();
  EXPECT_TRUE(model["fleet"]["hosts"][0]["final"].get<bool>());
  EXPECT_EQ(model["fleet"]["progress"],
            json({{"received_events", events}, {"analysed_events", events}, {"waiting_events", 0},
                  {"missed_items", 0}}));
  EXPECT_NE(fleet_out.find("analysed " + std::to_string(events) + " of " +
                           std::to_string(events) + " events received · 0 items missed"),
            std::string::npos)
      << fleet_out;
}

// A host's live analyzer killed with -9 mid-run never sends its final summary: the fleet's model
// says it is as of that host's latest summary, and names the host.
TEST_F(FleetNats, AHostStoppedMidStreamIsNamedAsLackingItsFinalSummary) {
  const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(testing::freePort());
  const std::string live = std::string(SHAPETRACE_BINARY) + " live --connect " + endpoint +
                           " --no-http --nats " + nats->url() +
                           " --stream S --host web-2 --window 0.2 >" + (dir / "live.out").string() +
                           " 2>" + (dir / "live.err").string() + " & echo $! >" +
                           (dir / "live.pid").string();
  ASSERT_EQ(std::system(live.c_str()), 0);
  const std::string publisher = std::string(SHAPETRACE_PUBLISHER) + " " + endpoint +
                                " --seconds 1 >/dev/null 2>" + (dir / "pub.err").string();
  EXPECT_EQ(std::system(publisher.c_str()), 0) << shapetrace::testing::slurp(dir / "pub.err");
  // Once a summary taken after events were analysed is out, the analyzer dies without a word.
  // Each terminal summary prints the summaries published, then the events analysed.
  auto latest = [&](unsigned long long& published, unsigned long long& analysed) {
    const std::string out = shapetrace::testing::slurp(dir / "live.out");
    const size_t fleet = out.rfind("fleet: ");
    return fleet != std::string::npos &&
           std::sscanf(out.c_str() + fleet, "fleet: %llu of %*u summaries", &published) == 1 &&
           out.find("analysed ", fleet) != std::string::npos &&
           std::sscanf(out.c_str() + out.find("analysed ", fleet), "analysed %llu", &analysed) == 1;
  };
  bool published = false;
  std::optional<unsigned long long> published_once_analysed;
  for (int i = 0; i < 300 && !published; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    unsigned long long sent = 0, analysed = 0;
    if (!latest(sent, analysed) || analysed == 0) continue;
    if (!published_once_analysed) published_once_analysed = sent;
    published = sent > *published_once_analysed + 1;
  }
  const pid_t pid = std::stoi(shapetrace::testing::slurp(dir / "live.pid"));
  ::kill(pid, SIGKILL);
  ASSERT_TRUE(published) << shapetrace::testing::slurp(dir / "live.out");

  const json model = runFleet();
  ASSERT_EQ(model["fleet"]["hosts"].size(), 1u);
  EXPECT_FALSE(model["fleet"]["hosts"][0]["final"].get<bool>());
  const json& progress = model["fleet"]["progress"];
  EXPECT_GT(progress["received_events"].get<uint64_t>(), 0u);
  EXPECT_EQ(progress["note"],
            "as of each host's latest summary; 1 host run has not sent a final summary (still "
            "running, or it did not arrive): web-2");
  EXPECT_NE(fleet_out.find("1 host run has not sent a final summary"), std::string::npos)
      << fleet_out;
}

// A host's analyzer killed with -9 mid-run and restarted, with real processes: a collector records
// the traced example service and publishes to `live --nats --recording`; live is killed while the
// service runs and started again on the same recording. The restarted live continues the run (the
// state file beside the recording) from everything recorded, then live, nothing twice: the fleet
// holds one run of the host whose model is exactly the single-analyzer model of the recording.
TEST_F(FleetNats, AHostKilledAndRestartedOnItsRecordingLosesNothingAndDuplicatesNothing) {
  using shapetrace::testing::Child;
  using namespace std::chrono_literals;
  const std::string rec = (dir / "rec").string();
  const std::string collector_socket = "ipc://" + (dir / "c.sock").string();
  const std::string publish = "tcp://127.0.0.1:" + std::to_string(testing::freePort());
  Child collect({SHAPETRACE_BINARY, "collect", "--listen", collector_socket, "--publish", publish,
                 "--out", rec});
  for (auto line = collect.readLine(); line; line = collect.readLine())
    if (line->find("recording to") != std::string::npos) break;
  auto startLive = [&] {
    return std::make_unique<Child>(std::vector<std::string>{
        SHAPETRACE_BINARY, "live", "--connect", publish, "--no-http", "--recording", rec, "--nats",
        nats->url(), "--stream", "S", "--host", "web-1", "--window", "0.2"});
  };
  auto live = startLive();
  std::this_thread::sleep_for(500ms);
  Child service({KVSTORE_BINARY, "--seconds", "3", "--data-dir", (dir / "kv").string()},
                {{"SHAPETRACE_ENDPOINT", collector_socket}});
  std::this_thread::sleep_for(1200ms);
  live->signal(SIGKILL);
  live->wait();
  // What the collector records meanwhile reaches the restarted live from the recording.
  std::this_thread::sleep_for(500ms);
  ASSERT_TRUE(std::filesystem::exists(rec + "/fleet-web-1.json"));
  live = startLive();
  EXPECT_EQ(service.wait(), 0);
  collect.signal(SIGTERM);
  EXPECT_EQ(collect.wait(), 0);

  // Every recorded item, once: wait until the restarted live has fed as many as the recording
  // holds (its terminal summary counts them each second), then stop it.
  uint64_t recorded = 0;
  {
    recording::RecordingReader reader(rec);
    while (reader.next()) ++recorded;
  }
  ASSERT_GT(recorded, 1000u);
  bool resumed = false;
  unsigned long long fed = 0;
  for (auto line = live->readLine(); line; line = live->readLine()) {
    resumed = resumed || line->find("resuming run") != std::string::npos;
    const size_t at = line->find(publish + "  ");
    if (line->rfind("shapetrace live", 0) == 0 && at != std::string::npos &&
        std::sscanf(line->c_str() + at + publish.size(), " %llu items", &fed) == 1 &&
        fed >= recorded)
      break;
  }
  EXPECT_EQ(fed, recorded);
  EXPECT_TRUE(resumed);
  live->signal(SIGTERM);
  const std::string out = live->readAll();
  EXPECT_EQ(live->wait(), 0) << out;

  const json model = runFleet();
  // One run: the restarted live continued the killed one's, with its latest sequence.
  ASSERT_EQ(model["fleet"]["hosts"].size(), 1u) << model["fleet"].dump(1);
  const json state = json::parse(shapetrace::testing::slurp(rec + "/fleet-web-1.json"));
  EXPECT_EQ(model["fleet"]["hosts"][0]["run"], state["run"]);
  EXPECT_EQ(model["fleet"]["hosts"][0]["sequence"], state["sequence"]);
  Analyzer single(AnalysisSettings{}, 1);
  {
    recording::RecordingReader reader(rec);
    while (auto item = reader.nextItem()) single.consume(std::move(*item));
  }
  const json expected = modelPart(json::parse(analyzer::toJson(single.snapshot()).dump()));
  EXPECT_EQ(modelPart(model)["summary"].dump(), expected["summary"].dump());
  EXPECT_EQ(modelPart(model).dump(1), expected.dump(1));
}

TEST_F(FleetNats, UsageErrorsExitTwoAndAnUnreachableServerIsAnError) {
  const std::string fleet = std::string(SHAPETRACE_BINARY) + " fleet";
  auto result = runCommand(fleet + " --stream S");
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("--nats is required"), std::string::npos) << result.err;
  result = runCommand(fleet + " --nats " + nats->url() + " --stream a.b");
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("'a.b': letters, digits"), std::string::npos) << result.err;
  result = runCommand(fleet + " --nats " + nats->url() + " --durable 'x y'");
  EXPECT_EQ(result.exit_code, 2);
  result =
      runCommand(std::string(SHAPETRACE_BINARY) + " live --connect ipc:///nonexistent --nats " +
                 nats->url() + " --host web.17 --no-http --duration 0.1");
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("'web.17'"), std::string::npos) << result.err;
  // The live page: an address reachable from other hosts needs a token; a port in use is an error.
  result = runCommand(fleet + " --nats " + nats->url() + " --http 0.0.0.0:0 --duration 1");
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("shapetrace fleet: error: refusing to serve the live page on "
                            "0.0.0.0:0"),
            std::string::npos)
      << result.err;
  {
    std::filesystem::create_directories(dir / "squatter");
    testing::NatsServer squatter(dir / "squatter"); // anything listening on the port will do
    result = runCommand(fleet + " --nats " + nats->url() + " --http 127.0.0.1:" +
                        squatter.url().substr(squatter.url().rfind(':') + 1) + " --duration 1");
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_NE(result.err.find("cannot listen on 127.0.0.1:"), std::string::npos) << result.err;
  }
  // A state file beside the recording that is not this host's.
  std::filesystem::create_directories(dir / "rec");
  std::ofstream(dir / "rec" / "fleet-web-1.json") << R"({"host":"web-2","run":7,"sequence":3})";
  result = runCommand(std::string(SHAPETRACE_BINARY) +
                      " live --connect ipc:///nonexistent --nats " + nats->url() +
                      " --host web-1 --no-http --duration 0.1 --recording " +
                      (dir / "rec").string());
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("fleet-web-1.json is not the fleet state of host web-1 (remove it to "
                            "start a new run)"),
            std::string::npos)
      << result.err;
  nats->stop(SIGTERM);
  result = runCommand(fleet + " --nats " + settings.url + " --duration 1");
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("shapetrace fleet: error: NATS connection to " + settings.url),
            std::string::npos)
      << result.err;
}

} // namespace
} // namespace shapetrace::fleet
