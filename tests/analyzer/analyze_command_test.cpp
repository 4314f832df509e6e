// `shapetrace analyze` end to end: recordings written by the collector's RecordingWriter, a live
// stream from a real ZeroMQ PUB socket, the JSON file, determinism, and every usage error.
#include "call_stack.h"
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
#include <iterator>
#include <sstream>
#include <sys/stat.h>
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
  // The same under /usr/bin/time: its stderr ends with "maxrss KB", the command's peak memory.
  Result measuredShapetrace(const std::string& args) {
    return runCommand("/usr/bin/time -f 'maxrss %M' " + std::string(SHAPETRACE_BINARY) + " " + args);
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
  // Two threads of 8 batches each, ended with their ThreadEnd counts, in segments of about two
  // batches: segment 0 holds the tables, then each segment two batches, the ends in the last.
  fs::path segmentedRecording(const fs::path& rec) {
    recording::RecordingOptions options;
    options.segment_bytes = 256;
    recording::RecordingWriter writer(rec.string(), options);
    wire::ModuleTable table{"m", 0, {}};
    table.functions.push_back({1, "_Z4mainv", "main()", "main.cpp", 3});
    table.functions.push_back({2, "_Z4workv", "work()", "main.cpp", 9});
    std::vector<wire::StreamItem> items{{1, table}, {1, wire::ProcessStart{}}};
    for (uint64_t sequence = 0; sequence < 8; ++sequence)
      for (uint32_t thread : {11u, 12u}) {
        std::vector<testing::Call> calls(40, call(1, {call(2)}));
        items.push_back(batchItem(1, thread, sequence, eventsOf(calls, 1000 + sequence * 10000)));
      }
    for (uint32_t thread : {11u, 12u})
      items.push_back({1, wire::ThreadEnd{thread, 100000, 640, 0, 8}});
    items.push_back({1, wire::ProcessEnd{100000, 1280, 0, 0, wire::EndReason::Exit, ""}});
    for (const auto& item : items)
      EXPECT_TRUE(writer.append(wire::encodeItem(item)));
    EXPECT_TRUE(writer.close());
    return rec;
  }

  // What every command that reads a recording says of it on stdout and stderr.
  std::string everyCommandsOutput(const fs::path& rec) {
    std::string all;
    for (const std::string& command :
         {"analyze " + rec.string(), "report " + rec.string() + " -o " + rec.string() + ".html",
          "summarize " + rec.string(), "export " + rec.string() + " --format folded",
          "diff " + rec.string() + " " + rec.string(), "dump " + rec.string()}) {
      const Result r = shapetrace(command);
      EXPECT_EQ(r.exit_code, 0) << command << "\n" << r.err;
      all += "$ " + command.substr(0, command.find(' ')) + "\n" + r.out + r.err;
    }
    return all;
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
  EXPECT_NE(r.out.find("outliers that lost the most time (1 found, 1 kept):\n  ns::run<...>  thread 11 at "),
            std::string::npos)
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
  // A column named by bytes that are not UTF-8 (found by explain_csv_fuzzer): the JSON model
  // replaces them (U+FFFD) instead of the command failing on them.
  std::string not_utf8 = table;
  not_utf8.replace(not_utf8.find("decompress"), 1, "\xD0");
  std::ofstream(dir / "bytes.csv") << not_utf8;
  const Result bytes = shapetrace("explain --csv " + (dir / "bytes.csv").string() + " --json " +
                                  (dir / "bytes.json").string());
  ASSERT_EQ(bytes.exit_code, 0) << bytes.err;
  std::ifstream bytes_json(dir / "bytes.json");
  const std::string model((std::istreambuf_iterator<char>(bytes_json)), {});
  EXPECT_NE(model.find("\xEF\xBF\xBD" "ecompress"), std::string::npos) << model;
  EXPECT_EQ(shapetrace("explain " + (dir / "rec").string() + " --csv " + csv.string()).exit_code, 2);
  EXPECT_EQ(shapetrace("explain").exit_code, 2);
}

// Segment 2 holds thread 11's first batch, segment 17 thread 12's last: deleted, the first is a
// batch missing before the thread's others, the second its lost tail, which only the thread's end
// (its ThreadEnd's batch count) tells. Every command says so.
TEST_F(AnalyzeCommandTest, MissingSegmentsAreALossInEveryCommand) {
  const fs::path rec = segmentedRecording(dir / "rec");
  ASSERT_TRUE(fs::exists(rec / "000018.seg"));
  fs::remove(rec / "000002.seg");
  fs::remove(rec / "000017.seg");
  const Result r = shapetrace("analyze " + rec.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string loss =
      "LOSS: the input is not what was recorded: 1 event batches lost at threads' ends, 1 event "
      "batches missing before others, 2 damaged or lost stretches of the recording; threads 11, "
      "12 (see diagnostics)";
  EXPECT_NE(r.out.find("2240 events, 1120 calls"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\n" + loss + "\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  batches_lost_at_end                     1  (data_loss)"),
            std::string::npos)
      << r.out;
  const std::string out = everyCommandsOutput(rec);
  for (const std::string& command : {"analyze", "report", "summarize", "export", "diff"})
    for (const std::string& segment : {"2", "17"})
      EXPECT_NE(out.find("shapetrace " + command + ": warning: segment " + segment +
                         ": lost (1 segment: its frames are gone)"),
                std::string::npos)
          << command << out;
  for (const std::string& command : {"report", "summarize", "export", "diff"})
    EXPECT_NE(out.find("shapetrace " + command + ": " + loss), std::string::npos) << command << out;
  for (const std::string& segment : {"2", "17"})
    EXPECT_NE(out.find("shapetrace dump: segment " + segment +
                       ": lost (1 segment: its frames are gone)"),
              std::string::npos)
        << out;
  const Result info = shapetrace("info " + rec.string());
  EXPECT_NE(info.out.find("process 0000000000000001 thread 12: 1 batches lost at its end (its end "
                          "says 8 were sent)"),
            std::string::npos)
      << info.out;
  EXPECT_NE(out.find("shapetrace dump: process 0000000000000001 thread 12: 1 batches lost at its "
                     "end (its end says 8 were sent)"),
            std::string::npos)
      << out;
  EXPECT_NE(info.out.find("segment 17: lost (1 segment: its frames are gone)"), std::string::npos)
      << info.out;
}

// An empty segment with others after it lost a whole segment's frames.
TEST_F(AnalyzeCommandTest, AnEmptyMiddleSegmentIsALoss) {
  const fs::path rec = segmentedRecording(dir / "rec");
  fs::resize_file(rec / "000003.seg", 0);
  const Result r = shapetrace("analyze " + rec.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("LOSS: the input is not what was recorded: 1 event batches missing before "
                       "others, 1 damaged or lost stretches of the recording; threads 12 (see "
                       "diagnostics)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.err.find("shapetrace analyze: warning: segment 3: lost (1 segment: its frames are "
                       "gone)"),
            std::string::npos)
      << r.err;
}

TEST_F(AnalyzeCommandTest, ADuplicatedSegmentIsReadOnceAndALossInEveryCommand) {
  const fs::path rec = segmentedRecording(dir / "rec");
  const Result clean = shapetrace("analyze " + rec.string());
  ASSERT_EQ(clean.exit_code, 0) << clean.err;
  EXPECT_EQ(clean.out.find("LOSS"), std::string::npos) << clean.out;
  // Copies of segments 2 and 3 (the first batches of both threads) as the next segments.
  size_t segments = 0;
  auto name = [](size_t n) {
    const std::string digits = std::to_string(n);
    return std::string(6 - digits.size(), '0') + digits + ".seg";
  };
  while (fs::exists(rec / name(segments)))
    ++segments;
  fs::copy_file(rec / "000002.seg", rec / name(segments));
  fs::copy_file(rec / "000003.seg", rec / name(segments + 1));
  const Result r = shapetrace("analyze " + rec.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Read once: the same events and calls as the clean recording.
  EXPECT_EQ(r.out.substr(0, r.out.find('\n')), clean.out.substr(0, clean.out.find('\n')));
  EXPECT_NE(r.out.find("LOSS: the input is not what was recorded: 2 event batches repeated (read "
                       "once); threads 11, 12 (see diagnostics)"),
            std::string::npos)
      << r.out;
  const std::string out = everyCommandsOutput(rec);
  for (const std::string& command : {"report", "summarize", "export", "diff"})
    EXPECT_NE(out.find("shapetrace " + command + ": LOSS: the input is not what was recorded: 2 "
                       "event batches repeated (read once); threads 11, 12"),
              std::string::npos)
        << command << out;
  for (const std::string& thread : {"11", "12"})
    EXPECT_NE(out.find("shapetrace dump: process 0000000000000001 thread " + thread +
                       ": 1 batches received again (a duplicated frame or segment); shown once"),
              std::string::npos)
        << out;
  // info counts each batch once and names the copies.
  const Result info = shapetrace("info " + rec.string());
  for (const std::string& thread : {"11", "12"}) {
    EXPECT_NE(info.out.find("process 0000000000000001 thread " + thread +
                            ": 1 batches received again (a duplicated frame or segment); counted "
                            "once"),
              std::string::npos)
        << info.out;
    EXPECT_NE(info.out.find("thread " + thread + ": 1280 events in 8 batches"), std::string::npos)
        << info.out;
  }
}

// dump --thread with --from finds the thread's batches through the index, copies included: each
// is shown once, and the copies are named.
TEST_F(AnalyzeCommandTest, DumpFromATimeShowsADuplicatedBatchOnce) {
  const fs::path rec = segmentedRecording(dir / "rec");
  const std::string command = "dump " + rec.string() + " --thread 11 --from 20000";
  const Result clean = shapetrace(command);
  ASSERT_EQ(clean.exit_code, 0) << clean.err;
  EXPECT_EQ(clean.err, "");
  fs::copy_file(rec / "000002.seg", rec / "000099.seg"); // thread 11's first batch
  fs::copy_file(rec / "000006.seg", rec / "000100.seg"); // its third, in the window
  const Result r = shapetrace(command);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, clean.out);
  EXPECT_NE(r.err.find("shapetrace dump: process 0000000000000001 thread 11: 1 batches received "
                       "again (a duplicated frame or segment); shown once"),
            std::string::npos)
      << r.err;
}

// A copy of a segment saved under a number far past the last (999999.seg): its batches are
// counted once, named as received again, and the numbers between are missing segments.
TEST_F(AnalyzeCommandTest, ACopySavedAsAFarSegmentNumberIsADuplicate) {
  const fs::path rec = segmentedRecording(dir / "rec");
  const Result clean = shapetrace("info " + rec.string());
  ASSERT_EQ(clean.exit_code, 0) << clean.err;
  fs::copy_file(rec / "000002.seg", rec / "999999.seg");
  const Result info = shapetrace("info " + rec.string());
  auto totals = [](const std::string& out) {
    const size_t at = out.find("processes ");
    return out.substr(at, out.find('\n', at) - at);
  };
  EXPECT_EQ(totals(info.out), totals(clean.out));
  EXPECT_NE(info.out.find("process 0000000000000001 thread 11: 1 batches received again (a "
                          "duplicated frame or segment); counted once"),
            std::string::npos)
      << info.out;
  EXPECT_NE(info.out.find("thread 11: 1280 events in 8 batches"), std::string::npos) << info.out;
  const Result r = shapetrace("analyze " + rec.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("1 event batches repeated (read once)"), std::string::npos) << r.out;
}

TEST_F(AnalyzeCommandTest, AFifoNamedLikeASegmentIsAnErrorNamingIt) {
  const fs::path rec = record(trace());
  ASSERT_EQ(::mkfifo((rec / "000001.seg").c_str(), 0600), 0);
  for (const std::string& command :
       {"analyze", "report", "summarize", "export", "dump", "info"}) {
    const Result r = shapetrace(command + " " + rec.string() +
                                (command == "export" ? " --format folded" : ""));
    EXPECT_EQ(r.exit_code, 1) << command;
    EXPECT_NE(r.err.find((rec / "000001.seg").string() + " is not a regular file"),
              std::string::npos)
        << command << r.err;
  }
}

TEST_F(AnalyzeCommandTest, OutputsArePrivateUnlessReadable) {
  const fs::path rec = record(trace());
  ::umask(022);
  for (const std::string& command :
       {"analyze " + rec.string() + " --json ", "report " + rec.string() + " -o ",
        "export " + rec.string() + " --format folded -o "}) {
    const fs::path out = dir / "out";
    fs::remove(out);
    ASSERT_EQ(shapetrace(command + out.string()).exit_code, 0) << command;
    EXPECT_EQ(fs::status(out).permissions() & fs::perms::all,
              fs::perms::owner_read | fs::perms::owner_write)
        << command;
    ASSERT_EQ(shapetrace(command + out.string() + " --readable").exit_code, 0) << command;
    EXPECT_EQ(fs::status(out).permissions() & fs::perms::all,
              fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                  fs::perms::others_read)
        << command;
  }
}

// The crafted inputs of docs/security.md: one call of function 2^24-1 on each of 64 threads, and
// 8 processes whose module table names a function with id 0xFFFFFFF0. Tables dense by id made
// them 4 GB a thread and 7 GB; the commands' peak memory (getrusage's, through /usr/bin/time)
// stays far below 200 MB, whatever the machine's speed.
TEST_F(AnalyzeCommandTest, CraftedIdsCostWhatTheirBytesDo) {
  if (!fs::exists("/usr/bin/time")) GTEST_SKIP() << "no /usr/bin/time to measure peak memory";
  const fs::path ids = dir / "function-id", modules = dir / "module-id";
  {
    recording::RecordingWriter writer(ids.string());
    for (uint32_t thread = 1; thread <= 64; ++thread)
      EXPECT_TRUE(writer.append(wire::encodeItem(
          batchItem(1, thread, 0, eventsOf({call(1, {call(kMaxFunctionId - 1)})})))));
    EXPECT_TRUE(writer.close());
  }
  {
    recording::RecordingWriter writer(modules.string());
    for (uint64_t process = 1; process <= 8; ++process) {
      wire::ModuleTable table{"m", 0, {{0xFFFFFFF0u, "_Z5servev", "serve()", "", 0}}};
      EXPECT_TRUE(writer.append(wire::encodeItem({process, table})));
      EXPECT_TRUE(writer.append(wire::encodeItem(batchItem(process, 1, 0, eventsOf({call(1)})))));
    }
    EXPECT_TRUE(writer.close());
  }
  for (const std::string& command :
       {"analyze " + ids.string(), "report " + ids.string() + " -o " + (dir / "r.html").string(),
        "analyze " + ids.string() + " --extensions all",
        "explain " + modules.string() + " --function serve --input size"}) {
    const Result r = measuredShapetrace(command);
    const size_t at = r.err.find("maxrss ");
    ASSERT_NE(at, std::string::npos) << command << r.err;
    EXPECT_LT(std::stoull(r.err.substr(at + 7)), 200u * 1024) << command << r.err;
    if (command.starts_with("explain")) {
      EXPECT_EQ(r.exit_code, 1) << command;
      EXPECT_NE(r.err.find("no finished call of 'serve' in the recording"), std::string::npos)
          << r.err;
    } else {
      EXPECT_EQ(r.exit_code, 0) << command << r.err;
    }
  }
}

// A thread-per-request service: 100,000 threads, each started, one call of serve under main (4
// events) and ended. Ended threads past the first 1,000 are folded (docs/analyzer.md), so memory
// follows the threads alive: this took 883 MB before, in time that grew with the square of the
// threads (the terminal table looked each thread's label up among all of them).
fs::path shortThreadsRecording(const fs::path& rec) {
  recording::RecordingWriter writer(rec.string());
  wire::ModuleTable table{"m", 0, {{1, "_Z4mainv", "main()", "", 0}, {2, "_Z5servev", "serve()", "", 0}}};
  EXPECT_TRUE(writer.append(wire::encodeItem({1, table})));
  for (uint32_t thread = 1; thread <= 100'000; ++thread) {
    const uint64_t start = uint64_t{thread} * 1000;
    EXPECT_TRUE(writer.append(wire::encodeItem({1, wire::ThreadStart{thread, start, "request"}})));
    EXPECT_TRUE(writer.append(
        wire::encodeItem(batchItem(1, thread, 0, eventsOf({call(1, {call(2)})}, start + 10)))));
    EXPECT_TRUE(writer.append(wire::encodeItem({1, wire::ThreadEnd{thread, start + 50, 4, 0, 1}})));
  }
  EXPECT_TRUE(writer.close());
  return rec;
}

TEST_F(AnalyzeCommandTest, AHundredThousandShortThreadsCostBoundedMemory) {
  if (!fs::exists("/usr/bin/time")) GTEST_SKIP() << "no /usr/bin/time to measure peak memory";
  const fs::path rec = shortThreadsRecording(dir / "short-threads");
  const Result r = measuredShapetrace("analyze " + rec.string() + " --json " +
                                      (dir / "model.json").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const size_t at = r.err.find("maxrss ");
  ASSERT_NE(at, std::string::npos) << r.err;
  EXPECT_LT(std::stoull(r.err.substr(at + 7)), 150u * 1024) << r.err;
  EXPECT_NE(r.out.find("400000 events, 200000 calls, 100000 threads, 2 functions, 2 shapes"),
            std::string::npos)
      << r.out.substr(0, 400);
  // 1,000 kept whole, then 256 at a time folded: 386 times.
  EXPECT_NE(r.out.find("98816 threads folded"), std::string::npos);
  std::ifstream in(dir / "model.json");
  const auto model = nlohmann::json::parse(in);
  EXPECT_EQ(model["summary"]["threads"], 100000);
  EXPECT_EQ(model["threads"].size(), 1185u);
  EXPECT_EQ(model["threads"].back()["folded_threads"], 98816);
  EXPECT_EQ(model["threads"].back()["calls"], 2 * 98816);
}

// The same service through `report`, which runs every extension (flame graph, callers, summaries):
// the extensions' state of an ended thread is folded with it. 30,000 threads took 1.10 GB before.
TEST_F(AnalyzeCommandTest, AReportOfAHundredThousandShortThreadsCostsBoundedMemory) {
  if (!fs::exists("/usr/bin/time")) GTEST_SKIP() << "no /usr/bin/time to measure peak memory";
  const fs::path rec = shortThreadsRecording(dir / "short-threads");
  const fs::path page = dir / "report.html";
  const Result r = measuredShapetrace("report " + rec.string() + " -o " + page.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const size_t at = r.err.find("maxrss ");
  ASSERT_NE(at, std::string::npos) << r.err;
  EXPECT_LT(std::stoull(r.err.substr(at + 7)), 250u * 1024) << r.err;
  EXPECT_NE(r.out.find("100000 threads, 400000 events, 2 shapes"), std::string::npos) << r.out;
  // The page's model: the callers' and the flame graph's totals count every thread's calls.
  const std::string html = slurp(page);
  EXPECT_NE(html.find(R"("folded_threads":98816)"), std::string::npos);
  EXPECT_NE(html.find(R"("calls":100000,"measured":100000)"), std::string::npos);
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
    publisher.publish(bytes);
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
