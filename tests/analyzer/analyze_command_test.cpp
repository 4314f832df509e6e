// `shapetrace analyze` end to end: recordings written by the collector's RecordingWriter, a live
// stream from a real ZeroMQ PUB socket, the JSON file, determinism, and every usage error.
#include "fanout/fanout.h"
#include "recording/recording.h"
#include "trace_builder.h"
#include "support/command.h"
#include "wire/codec.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <zmq.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/wait.h>
#include <thread>

namespace shapetrace::analyzer {
namespace {

namespace fs = std::filesystem;
using testing::batchItem;
using testing::call;
using testing::eventsOf;

using Result = shapetrace::testing::CommandResult;
using shapetrace::testing::slurp;

class AnalyzeCommandTest : public shapetrace::testing::CommandTest {
protected:
  AnalyzeCommandTest() : CommandTest("shapetrace-analyze-") {}

  Result shapetrace(const std::string& args) {
    return runCommand(std::string(SHAPETRACE_BINARY) + " " + args);
  }

  std::vector<wire::StreamItem> trace() {
    wire::ModuleTable table{"m", 0, {}};
    table.functions.push_back({1, "_Z4mainv", "main()", "main.cpp", 3});
    table.functions.push_back({2, "_Z4workv", "work()", "main.cpp", 9});
    std::vector<wire::StreamItem> items{{1, table}, {1, wire::ThreadStart{11, 0, "worker"}}};
    for (uint32_t thread : {11u, 12u})
      items.push_back(batchItem(1, thread, 0,
                                eventsOf({call(1, {call(2), call(2, {call(2)})}), call(2)})));
    items.push_back({1, wire::Gap{12, 4, 0, 0, 0}});
    return items;
  }

  fs::path record(const std::vector<wire::StreamItem>& items) {
    const fs::path rec = dir / "rec";
    recording::RecordingWriter writer(rec.string());
    for (const auto& item : items)
      EXPECT_TRUE(writer.append(wire::encodeItem(item)));
    EXPECT_TRUE(writer.close());
    return rec;
  }
};

TEST_F(AnalyzeCommandTest, AnalyzesARecordingIntoTheJsonModel) {
  const fs::path rec = record(trace());
  const Result r = shapetrace("analyze " + rec.string() + " --json " + (dir / "a.json").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("20 events, 10 calls, 2 threads, 2 functions"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("gap_markers"), std::string::npos) << r.out;
  const auto json = nlohmann::json::parse(slurp(dir / "a.json"));
  EXPECT_EQ(json["summary"]["events"], 20);
  EXPECT_EQ(json["functions"][0]["name"], "main()");
  EXPECT_EQ(json["threads"][0]["name"], "worker");
  EXPECT_EQ(json["threads"][1]["diagnostics"]["events_dropped"], 4);
  EXPECT_FALSE(fs::exists(dir / "a.json.partial"));
}

TEST_F(AnalyzeCommandTest, SameInputSameBytesWhateverTheJobs) {
  const fs::path rec = record(trace());
  ASSERT_EQ(shapetrace("analyze " + rec.string() + " -j 1 --distances --json " +
                       (dir / "one.json").string()).exit_code, 0);
  ASSERT_EQ(shapetrace("analyze " + rec.string() + " -j 3 --distances --json " +
                       (dir / "three.json").string()).exit_code, 0);
  EXPECT_EQ(slurp(dir / "one.json"), slurp(dir / "three.json"));
  EXPECT_TRUE(nlohmann::json::parse(slurp(dir / "one.json")).contains("distances"));
}

TEST_F(AnalyzeCommandTest, JsonToStdout) {
  const fs::path rec = record(trace());
  const Result r = shapetrace("analyze " + rec.string() + " --json -");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["format"], "shapetrace-analysis");
}

// A header-only library's instantiations have names of thousands of characters (Boost.Asio's): the
// outlier lines print them short, the model keeps them whole.
TEST_F(AnalyzeCommandTest, OutlierLinesNameTemplateInstantiationsShort) {
  const std::string name =
      "void ns::run<ns::Executor<std::allocator<void>>, ns::Handler<int, char>>"
      "(ns::Executor<std::allocator<void>>&)";
  wire::ModuleTable table{"m", 0, {}};
  table.functions.push_back({1, "_ZN2ns3runE", name, "run.cpp", 5});
  std::vector<testing::Call> calls;
  for (uint64_t i = 0; i < 200; ++i) calls.push_back(call(1, {}, 100 + i % 7));
  calls.push_back(call(1, {}, 1'000'000));
  const fs::path rec = record({{1, table}, batchItem(1, 11, 0, eventsOf(calls))});
  const Result r = shapetrace("analyze " + rec.string() + " --json " + (dir / "a.json").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("most extreme outliers:\n  ns::run<...>  thread 11 at "), std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("Executor"), std::string::npos) << r.out;
  EXPECT_EQ(nlohmann::json::parse(slurp(dir / "a.json"))["functions"][0]["name"], name);
}

TEST_F(AnalyzeCommandTest, ThresholdAndClusteringOptionsReachTheModel) {
  const fs::path rec = record(trace());
  ASSERT_EQ(shapetrace("analyze " + rec.string() + " --threshold 0 --clustering complete-linkage "
                       "--json " + (dir / "a.json").string()).exit_code, 0);
  const auto json = nlohmann::json::parse(slurp(dir / "a.json"));
  EXPECT_EQ(json["settings"]["cluster_threshold"], 0.0);
  EXPECT_EQ(json["settings"]["clustering"], "complete-linkage");
  EXPECT_EQ(json["clusters"].size(), json["shapes"].size());
}

TEST_F(AnalyzeCommandTest, UsageErrors) {
  Result r = shapetrace("analyze");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("give either a recording directory or --live ENDPOINT"), std::string::npos);
  r = shapetrace("analyze " + (dir / "missing").string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("shapetrace analyze: error:"), std::string::npos) << r.err;
  r = shapetrace("analyze " + dir.string() + " --live tcp://127.0.0.1:1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(shapetrace("analyze " + dir.string() + " --threshold -1").exit_code, 2);
  EXPECT_EQ(shapetrace("analyze " + dir.string() + " --clustering kmeans").exit_code, 2);
  EXPECT_EQ(shapetrace("analyze " + dir.string() + " --timeline-bins 1").exit_code, 2);
  r = shapetrace("analyze " + dir.string()); // a directory without segments
  EXPECT_EQ(r.exit_code, 1);
  r = shapetrace("analyze " + dir.string() + " --extensions callers,flames");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown extension 'flames' (known: run_info, callers, flame, summaries; "
                       "or all, none)"),
            std::string::npos) << r.err;
}

TEST_F(AnalyzeCommandTest, ExtensionsRunOnlyWhenSelected) {
  const fs::path rec = record(trace());
  ASSERT_EQ(shapetrace("analyze " + rec.string() + " --json " + (dir / "core.json").string())
                .exit_code, 0);
  ASSERT_EQ(shapetrace("analyze " + rec.string() + " --extensions all --json " +
                       (dir / "all.json").string()).exit_code, 0);
  auto core = nlohmann::ordered_json::parse(slurp(dir / "core.json"));
  auto all = nlohmann::ordered_json::parse(slurp(dir / "all.json"));
  EXPECT_FALSE(core.contains("extensions"));
  ASSERT_TRUE(all.contains("extensions"));
  EXPECT_TRUE(all["extensions"].contains("run_info"));
  EXPECT_FALSE(all["extensions"]["callers"]["edges"].empty());
  all.erase("extensions");
  // Functions that only an extension named (none finished a call) may be added; here all did.
  EXPECT_EQ(all.dump(), core.dump());
}

// `explain --csv`: a table of runs in the DRT paper's layout, id,input,time,f1..fm. Every third
// run calls decompress and costs ten times as much per unit of input.
TEST_F(AnalyzeCommandTest, ExplainReadsATableOfRuns) {
  std::string table = "id,input_size,time,parse,decompress\n";
  for (int i = 1; i <= 40; ++i) {
    const int x = 1 + i % 20;
    const bool slow = i % 3 == 0;
    table += "r" + std::to_string(i) + "," + std::to_string(x) + "," +
             std::to_string(slow ? 1000 * x + 50 : 100 * x + 10) + ",1," + (slow ? "1" : "0") + "\n";
  }
  const fs::path csv = dir / "runs.csv";
  std::ofstream(csv) << table;
  const Result r = shapetrace("explain --csv " + csv.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("40 runs of runs.csv, input: input_size\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cluster 1: 13 runs, time = 1000 ns x input_size + 50 ns (rms 0 ns)\n"
                       "  cluster 2: 27 runs, time = 100 ns x input_size + 10 ns (rms 0 ns)\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("height 1):\n  (the mean over the clusters of their runs predicted right: "
                       "cluster 1 100.0%, cluster 2 100.0%; of all runs: 100.0%)\n"
                       "  if calls of decompress > 0:\n    -> cluster 1 (13 of 13)\n"
                       "  else:\n    -> cluster 2 (27 of 27)\n"),
            std::string::npos)
      << r.out;

  std::ofstream(dir / "bad.csv") << "id,x,t,f\nr1,1,zz,0\n";
  const Result bad = shapetrace("explain --csv " + (dir / "bad.csv").string());
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("bad.csv:2: 'zz' is not a number"), std::string::npos) << bad.err;
  std::ofstream(dir / "short.csv") << "id,x,t,f\nr1,1,2\n";
  const Result short_row = shapetrace("explain --csv " + (dir / "short.csv").string());
  EXPECT_EQ(short_row.exit_code, 1);
  EXPECT_NE(short_row.err.find("short.csv:2: 3 cells, the header has 4"), std::string::npos)
      << short_row.err;
  EXPECT_EQ(shapetrace("explain " + (dir / "rec").string() + " --csv " + csv.string()).exit_code, 2);
  EXPECT_EQ(shapetrace("explain").exit_code, 2);
}

TEST_F(AnalyzeCommandTest, UnwritableJsonIsAnError) {
  const fs::path rec = record(trace());
  const Result r = shapetrace("analyze " + rec.string() + " --json " +
                              (dir / "no" / "such" / "dir.json").string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("cannot write"), std::string::npos) << r.err;
}

TEST_F(AnalyzeCommandTest, LiveStreamFromTheCollectorsPublisher) {
  zmq::context_t context;
  fanout::Publisher publisher(context, "tcp://127.0.0.1:*", 10000, "");
  const std::string endpoint = publisher.endpoint();
  const fs::path out = dir / "live.json";
  Result result;
  std::thread analyzer([&] {
    result = shapetrace("analyze --live " + endpoint + " --duration 20 --snapshot-every 0.1 --json " +
                        out.string());
  });
  auto publish = [&](const std::vector<std::byte>& bytes) {
    zmq::message_t message(bytes.data(), bytes.size());
    publisher.publish(message);
  };
  // A subscriber only receives what is published after it joined: publish one thread per round,
  // each under a new thread id, until a snapshot shows one arrived.
  uint32_t thread = 100;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  bool seen = false;
  while (!seen && std::chrono::steady_clock::now() < deadline) {
    publish(wire::encodeItem(batchItem(1, thread++, 0, eventsOf({call(1, {call(2)})}))));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (fs::exists(out)) {
      try {
        seen = !nlohmann::json::parse(slurp(out))["threads"].empty();
      } catch (const nlohmann::json::exception&) {
      }
    }
  }
  publish(std::vector<std::byte>(16, std::byte{0x5a})); // not a stream message
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  publisher.end(); // the analyzer stops at the end marker, long before --duration
  analyzer.join();
  ASSERT_TRUE(seen);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto json = nlohmann::json::parse(slurp(out));
  ASSERT_FALSE(json["threads"].empty());
  for (const auto& t : json["threads"]) {
    EXPECT_EQ(t["calls"], 2);
    EXPECT_EQ(t["events"], 4);
  }
  EXPECT_EQ(json["summary"]["shapes"], 2);
  for (const auto& d : json["diagnostics"]) {
    if (d["name"] == "undecodable_messages") EXPECT_EQ(d["count"], 1);
    if (d["name"] == "live_items_missed") EXPECT_EQ(d["count"], 0);
  }
}

} // namespace
} // namespace shapetrace::analyzer
