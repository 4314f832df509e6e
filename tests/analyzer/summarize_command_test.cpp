// `shapetrace summarize` end to end on recordings written by the collector's RecordingWriter: the
// papers' examples as recorded calls (002's ABBBBBBBBBCDDDBCDC under run-length encoding with and
// without a cutoff and under Sequitur with its post-processing, 001's 64 lock calls as one rule,
// 002's ABBBC automaton), every scope (thread, function, shape, cluster, instance, window, depth),
// the JSON and DOT files, and every bad input with its exit code.
#include "fanout/fanout.h"
#include "recording/recording.h"
#include "support/command.h"
#include "trace_builder.h"
#include "wire/codec.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <thread>

namespace shapetrace::analyzer {
namespace {

namespace fs = std::filesystem;
using shapetrace::testing::slurp;
using testing::batchItem;
using testing::call;
using testing::Call;
using testing::eventsOf;

using Result = shapetrace::testing::CommandResult;

enum Fn : uint32_t { kMain = 1, kA, kB, kC, kD, kLock };

std::vector<Call> calls(const std::string& letters) {
  std::vector<Call> out;
  for (char c : letters)
    out.push_back(call(kA + static_cast<uint32_t>(c - 'A')));
  return out;
}

class SummarizeCommandTest : public shapetrace::testing::CommandTest {
protected:
  SummarizeCommandTest() : CommandTest("shapetrace-summarize-") {}

  Result shapetrace(const std::string& args) {
    return runCommand(std::string(SHAPETRACE_BINARY) + " " + args);
  }

  // worker (11): main { A B B B B B B B B B C D D D B C D C }, starting at 1000 ns;
  // locker (12): main { lock x 64, A }; abc (13): main { A B B B C }; server (14): 40 calls of
  // C { D } (20 to 24 ns), then a slow C { D D D lock } (an outlier that did more work).
  fs::path record(const std::string& name = "rec", const char* prefix = "") {
    wire::ModuleTable table{"m", 0, {}};
    const std::string names[] = {"", std::string(prefix) + "main", std::string(prefix) + "A",
                                 std::string(prefix) + "B", std::string(prefix) + "C",
                                 std::string(prefix) + "D", std::string(prefix) + "lock"};
    for (uint32_t f = kMain; f <= kLock; ++f)
      table.functions.push_back({f, names[f], names[f], "main.c", f});
    std::vector<Call> locks(64, call(kLock));
    locks.push_back(call(kA));
    std::vector<wire::StreamItem> items{{1, table},
                                        {1, wire::ThreadStart{11, 0, "worker"}},
                                        {1, wire::ThreadStart{12, 0, "locker"}},
                                        {1, wire::ThreadStart{13, 0, "abc"}},
                                        {1, wire::ThreadStart{14, 0, "server"}}};
    items.push_back(batchItem(1, 11, 0, eventsOf({call(kMain, calls("ABBBBBBBBBCDDDBCDC"))})));
    items.push_back(batchItem(1, 12, 0, eventsOf({call(kMain, locks)}, 5000)));
    items.push_back(batchItem(1, 13, 0, eventsOf({call(kMain, calls("ABBBC"))}, 9000)));
    std::vector<Call> requests;
    for (uint64_t i = 0; i < 40; ++i)
      requests.push_back(call(kC, {call(kD)}, 10 + i % 3 * 2));
    requests.push_back(call(kC, {call(kD), call(kD), call(kD), call(kLock, {}, 5000)}));
    items.push_back(batchItem(1, 14, 0, eventsOf(requests, 20000)));
    const fs::path rec = dir / name;
    recording::RecordingWriter writer(rec.string());
    for (const auto& item : items)
      EXPECT_TRUE(writer.append(wire::encodeItem(item)));
    EXPECT_TRUE(writer.close());
    return rec;
  }

  // The lines of `text` that are not comments.
  static std::vector<std::string> body(const std::string& text) {
    std::vector<std::string> out;
    size_t at = 0;
    while (at < text.size()) {
      const size_t end = text.find('\n', at);
      const std::string line = text.substr(at, end - at);
      if (!line.empty() && line[0] != '#') out.push_back(line);
      at = end == std::string::npos ? text.size() : end + 1;
    }
    return out;
  }
};

TEST_F(SummarizeCommandTest, RunLengthEncodingOfThePapersString) {
  const fs::path rec = record();
  // 002: ABBBBBBBBBCDDDBCDC is "A 9:B C 3:D BCDC"; with k = 3 "A *:B C 3:D BCDC". The calls of
  // main one level deep are main's own call followed by its callees.
  Result r = shapetrace("summarize " + rec.string() +
                        " --thread worker --function main --depth 1 -e rle --form calls");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(body(r.out), (std::vector<std::string>{"main A 9:B C 3:D BCDC"}));
  EXPECT_NE(r.out.find("# thread worker (11), calls of main, 1 levels deep: 1 sequence, 19 calls"),
            std::string::npos)
      << r.out;
  r = shapetrace("summarize " + rec.string() +
                 " --thread worker --function main --depth 1 -e rle --form calls --k 3");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(body(r.out), (std::vector<std::string>{"main A *:B C 3:D BCDC"}));
}

// Text is for a person: functions by their short names (the full ones a flag away), and a long
// sequence bounded, saying how much it left out; the JSON keeps everything.
TEST_F(SummarizeCommandTest, TextNamesAreShortAndLongSequencesBounded) {
  const fs::path rec = record("rec", "ns::Outer<std::basic_string<char>>::");
  const std::string scope = " --thread locker --function 'ns::Outer<std::basic_string<char>>::main' "
                            "--depth 1 -e rle --form calls";
  Result r = shapetrace("summarize " + rec.string() + scope);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(body(r.out), (std::vector<std::string>{
                             "ns::Outer<...>::main 64:ns::Outer<...>::lock ns::Outer<...>::A"}));
  r = shapetrace("summarize " + rec.string() + scope + " --max-runs 2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(body(r.out), (std::vector<std::string>{"ns::Outer<...>::main 64:ns::Outer<...>::lock"}));
  EXPECT_NE(r.out.find("\n# 1 more runs left out (--max-runs 0 writes them all; --json FILE has "
                       "everything)\n"),
            std::string::npos)
      << r.out;
  r = shapetrace("summarize " + rec.string() + scope + " --full-names");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(body(r.out),
            (std::vector<std::string>{"ns::Outer<std::basic_string<char>>::main "
                                      "64:ns::Outer<std::basic_string<char>>::lock "
                                      "ns::Outer<std::basic_string<char>>::A"}));
  // Lines are wrapped between runs: 40 calls of C { D } in enter-exit form.
  r = shapetrace("summarize " + rec.string() + " --thread server -e rle --form enter-exit");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto lines = body(r.out);
  ASSERT_GT(lines.size(), 1u) << r.out;
  for (const std::string& line : lines)
    EXPECT_LT(line.size(), 200u) << line;
}

TEST_F(SummarizeCommandTest, SequiturWithRunLengthPostProcessing) {
  const fs::path rec = record();
  // 002: "R3 ::= BCD" and "S ::= A 8:B R3 2:D R3 C" (here after main's own call).
  Result r = shapetrace("summarize " + rec.string() +
                        " --thread worker --function main --depth 1 -e sequitur --form calls");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(body(r.out), (std::vector<std::string>{"R3 ::= BCD", "S ::= main A 8:B R3 2:D R3 C"}));
  r = shapetrace("summarize " + rec.string() +
                 " --thread worker --function main --depth 1 -e sequitur --form calls --k 3");
  EXPECT_EQ(body(r.out), (std::vector<std::string>{"R3 ::= BCD", "S ::= main A *:B R3 2:D R3 C"}));
  // The string form has the return marks; balanced rules are well nested: B's call and return,
  // and BCD as three of them.
  r = shapetrace("summarize " + rec.string() + " --thread worker -e sequitur --balanced");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(body(r.out),
            (std::vector<std::string>{"R1 ::= B ∨", "R4 ::= C ∨", "R5 ::= D ∨", "R6 ::= R1 R4 R5",
                                      "S ::= main A ∨ 8:R1 R6 2:R5 R6 R4 ∨"}));
}

TEST_F(SummarizeCommandTest, SixtyFourLockCallsAreOnePhase) {
  const fs::path rec = record();
  // 001: N repetitions of a body are one rule.
  Result r = shapetrace("summarize " + rec.string() + " --thread locker");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(body(r.out), (std::vector<std::string>{"0 -> +main,1,+A,-A,-main",
                                                   "1 -> 64 x (+lock,-lock)"}));
  r = shapetrace("summarize " + rec.string() + " --thread locker --json " +
                 (dir / "s.json").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto json = nlohmann::json::parse(slurp(dir / "s.json"));
  EXPECT_EQ(json["format"], "shapetrace-summary");
  EXPECT_EQ(json["encoding"], "summary");
  EXPECT_EQ(json["form"], "enter-exit");
  const auto& phases = json["sequences"][0]["phases"];
  ASSERT_EQ(phases.size(), 5u);
  EXPECT_EQ(phases[1]["repeat"], 64);
  EXPECT_EQ(phases[1]["events"], 128);
  const uint32_t lock = phases[1]["label"][0];
  bool named = false;
  for (const auto& f : json["functions"])
    named |= f["id"] == lock && f["name"] == "lock";
  EXPECT_TRUE(named) << json["functions"].dump();
  EXPECT_EQ(json["scope"]["calls"], 66);
}

TEST_F(SummarizeCommandTest, AutomatonOfABBBC) {
  const fs::path rec = record();
  const fs::path dot = dir / "fsa.dot", json = dir / "fsa.json";
  Result r = shapetrace("summarize " + rec.string() +
                        " --thread abc --function main --depth 1 --form calls -e fsa --dot " +
                        dot.string() + " --json " + json.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // 002: the loop on B, entered by the first B.
  EXPECT_EQ(body(r.out), (std::vector<std::string>{"0 -main-> 1", "1 -A-> 2", "2 -B-> 3",
                                                   "3 -B-> 3", "3 -C-> 4", "4 -$-> 5"}));
  const std::string graph = slurp(dot);
  EXPECT_NE(graph.find("s3 -> s3 [label=\"B\"];"), std::string::npos) << graph;
  EXPECT_NE(graph.find("s5 [label=\"5\", shape=doublecircle];"), std::string::npos) << graph;
  const auto j = nlohmann::json::parse(slurp(json));
  EXPECT_EQ(j["automaton"]["k"], 3);
  EXPECT_EQ(j["automaton"]["states"], 6);
  EXPECT_EQ(j["automaton"]["transitions"].size(), 6u);
}

TEST_F(SummarizeCommandTest, NLevelAndIntervals) {
  const fs::path rec = record();
  Result r = shapetrace("summarize " + rec.string() + " --thread worker -e nlevel --levels 2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Ten calls of B, each 10 ns, as B alone and as main > B.
  EXPECT_NE(r.out.find("          10        10 ns         0 ns         100 ns  main > B\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("          10        10 ns         0 ns         100 ns  B\n"),
            std::string::npos)
      << r.out;
  r = shapetrace("summarize " + rec.string() + " --thread worker -e intervals --intervals 4 --json -");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  uint64_t main_inclusive = 0, exclusive = 0, calls = 0;
  for (const auto& interval : j["intervals"]["intervals"])
    for (const auto& f : interval["functions"]) {
      if (f["function"] == j["functions"][0]["id"]) main_inclusive += f["inclusive_ns"].get<uint64_t>();
      exclusive += f["exclusive_ns"].get<uint64_t>();
      calls += f["calls"].get<uint64_t>();
    }
  EXPECT_LE(j["intervals"]["intervals"].size(), 4u);
  // main runs 190 ns (its 10 and its 18 callees' 10 each); every ns is someone's exclusive time.
  EXPECT_EQ(main_inclusive, 190u);
  EXPECT_EQ(exclusive, 190u);
  EXPECT_EQ(calls, 19u);
}

TEST_F(SummarizeCommandTest, Scopes) {
  const fs::path rec = record();
  // One instance: the call starting at 1015 ns on worker is the first B (A ends then).
  Result r = shapetrace("summarize " + rec.string() + " --instance worker@1015 -e rle");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(body(r.out), (std::vector<std::string>{"B∨"}));
  // A window: the calls starting in [1015, 1055) ns.
  r = shapetrace("summarize " + rec.string() + " --thread worker --from 1015 --to 1055 -e rle --form calls");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(body(r.out), (std::vector<std::string>{"4:B"}));
  // Relative times count from the run's first event (1000 ns).
  r = shapetrace("summarize " + rec.string() + " --thread worker --from 15ns --to 55ns -e rle --form calls");
  EXPECT_EQ(body(r.out), (std::vector<std::string>{"4:B"}));
  // Every call of B, on every thread: 10 + 3 sequences, all alike.
  r = shapetrace("summarize " + rec.string() + " --function B -e rle");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(body(r.out), (std::vector<std::string>{"B∨"}));
  EXPECT_NE(r.out.find("# S1: 13 sequences like it"), std::string::npos) << r.out;
  // Shapes and clusters by their ids in the analysis: main's shape on worker.
  const auto model = nlohmann::json::parse(shapetrace("analyze " + rec.string() + " --json -").out);
  uint32_t main_shape = 0;
  for (const auto& s : model["shapes"])
    if (model["functions"][s["function"].get<size_t>()]["name"] == "main" && s["children"].size() == 4)
      main_shape = s["id"];
  ASSERT_NE(main_shape, 0u);
  r = shapetrace("summarize " + rec.string() + " --shape " + std::to_string(main_shape) +
                 " --depth 1 -e rle --form calls");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(body(r.out), (std::vector<std::string>{"main A 9:B C 3:D BCDC"}));
  const auto cluster = model["shapes"][main_shape - 1]["cluster"].get<uint32_t>();
  r = shapetrace("summarize " + rec.string() + " --cluster " + std::to_string(cluster) +
                 " --depth 0 -e rle --form calls");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(body(r.out)[0], "main");
}

TEST_F(SummarizeCommandTest, BadInput) {
  const fs::path rec = record();
  const std::string base = "summarize " + rec.string();
  auto expect = [&](const std::string& args, int code, const std::string& message) {
    const Result r = shapetrace(args);
    EXPECT_EQ(r.exit_code, code) << args << "\n" << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << args << "\n" << r.err;
  };
  expect(base + " --thread nosuch", 1,
         "shapetrace summarize: error: no thread 'nosuch' in the recording (threads: 11 (worker), "
         "12 (locker), 13 (abc), 14 (server))");
  expect(base + " --function mian", 1, "error: no function 'mian' in the recording");
  expect(base + " --function ai", 1, "no function 'ai' in the recording (did you mean: main?)");
  expect(base + " --instance worker@1016", 1, "error: no call starts at 1016 ns on worker (11)");
  expect(base + " --instance outlier:99", 1, "error: no outlier 99 (the analysis kept ");
  expect(base + " --instance 1016", 2, "is not an instance (THREAD@TIME or outlier:N)");
  expect(base + " --shape 999", 1, "error: no shape 999 (the analysis has shapes 1..");
  expect(base + " --cluster x", 2, "'x' is not a cluster id");
  expect(base + " -e fsa --k 0", 2, "--k");
  expect(base + " -e rle --k 0", 2, "--k");
  expect(base + " -e fsa --k 9", 2, "the tail length is at most 8");
  expect(base + " --from soon", 2, "is not a time");
  expect(base + " --from 2000 --to 1000", 2, "the window is empty");
  expect(base + " --function main --shape 1", 2, "give at most one of");
  expect(base + " -e rle --dot x.dot", 2, "--dot writes the fsa encoding's automaton");
  expect(base + " -e sequitur --form calls --balanced", 2, "balanced rules need returns");
  expect(base + " -e nlevel --k 2", 2, "--k applies to rle, sequitur");
  expect(base + " -e zip", 2, "zip");
  expect("summarize " + (dir / "missing").string(), 1, "is not a recording directory");
  expect("summarize", 2, "give either a recording directory or --live ENDPOINT");
  expect(base + " --thread worker --from 10s", 1, "error: no calls in the scope");
}

TEST_F(SummarizeCommandTest, LiveStreamIsRecordedThenSummarised) {
  zmq::context_t context;
  fanout::Publisher publisher(context, "tcp://127.0.0.1:*", 10000, "");
  const fs::path tmp = dir / "tmp";
  fs::create_directories(tmp);
  Result result;
  std::thread summarize([&] {
    result = runCommand("TMPDIR=" + tmp.string() + " " + SHAPETRACE_BINARY + " summarize --live " +
                        publisher.endpoint() + " --duration 20 --function main -e rle --form calls");
  });
  auto publish = [&](const wire::StreamItem& item) {
    const std::vector<std::byte> bytes = wire::encodeItem(item);
    publisher.publish(bytes);
  };
  // A subscriber only receives what is published after it joined: a thread per round, each with
  // the module table, for a second.
  wire::ModuleTable table{"m", 0, {}};
  table.functions.push_back({kMain, "main", "main", "main.c", 1});
  table.functions.push_back({kA, "A", "A", "main.c", 2});
  for (uint32_t thread = 100; thread < 120; ++thread) {
    publish({1, table});
    publish(batchItem(1, thread, 0, eventsOf({call(kMain, {call(kA), call(kA)})})));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  publisher.end(); // it stops at the end marker, long before --duration
  summarize.join();
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(body(result.out), (std::vector<std::string>{"main 2:A"}));
  // The stream was recorded in a temporary directory, removed afterwards.
  EXPECT_TRUE(fs::is_empty(tmp));
}

// ---- compare

int64_t needlemanWunsch(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::vector<std::vector<int64_t>> t(a.size() + 1, std::vector<int64_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i)
    t[i][0] = -static_cast<int64_t>(i);
  for (size_t j = 0; j <= b.size(); ++j)
    t[0][j] = -static_cast<int64_t>(j);
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j)
      t[i][j] = std::max({t[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 1 : -1), t[i - 1][j] - 1,
                          t[i][j - 1] - 1});
  return t[a.size()][b.size()];
}

TEST_F(SummarizeCommandTest, CompareTwoThreads) {
  const fs::path rec = record();
  const Result r = shapetrace("compare " + rec.string() + " worker locker --json -");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["format"], "shapetrace-compare");
  // The calls of each thread, expanded: the score is the textbook recurrence's.
  std::vector<std::string> a{"main", "A"}, b{"main"};
  for (char c : std::string("BBBBBBBBBCDDDBCDC"))
    a.push_back(std::string(1, c));
  b.insert(b.end(), 64, "lock");
  b.push_back("A");
  EXPECT_EQ(j["score"], needlemanWunsch(a, b));
  EXPECT_EQ(j["a"]["symbols"], 19);
  EXPECT_EQ(j["b"]["symbols"], 66);
  EXPECT_EQ(j["matches"].get<uint64_t>() + j["mismatches"].get<uint64_t>() +
                j["only_a"].get<uint64_t>(),
            19u);
  EXPECT_EQ(j["matches"].get<uint64_t>() + j["mismatches"].get<uint64_t>() +
                j["only_b"].get<uint64_t>(),
            66u);
  EXPECT_EQ(j["algorithm"], "runs");
  // Scoring is configurable.
  const auto k = nlohmann::json::parse(
      shapetrace("compare " + rec.string() + " worker abc --match 2 --gap -3 --json -").out);
  EXPECT_EQ(k["scoring"]["match"], 2);
  EXPECT_EQ(k["scoring"]["gap"], -3);
}

TEST_F(SummarizeCommandTest, WhyWasThisCallSlow) {
  const fs::path rec = record();
  // The slow C is an outlier; without B it is aligned with a typical C { D }.
  const auto model = nlohmann::json::parse(shapetrace("analyze " + rec.string() + " --json -").out);
  int outlier = -1;
  for (size_t i = 0; i < model["outliers"].size(); ++i)
    if (model["functions"][model["outliers"][i]["function"].get<size_t>()]["name"] == "C")
      outlier = static_cast<int>(i);
  ASSERT_GE(outlier, 0) << model["outliers"].dump();
  Result r = shapetrace("compare " + rec.string() + " outlier:" + std::to_string(outlier));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("# B: a typical call of C (shape"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("score -1 (match 1, mismatch -1, gap -1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("- at column 2: only A has 2 x D, lock\n"), std::string::npos) << r.out;
  const std::vector<std::string> rows = body(r.out.substr(r.out.find("\n\n")));
  ASSERT_EQ(rows.size(), 4u) << r.out;
  EXPECT_EQ(rows[0].substr(0, 3), "= C");
  EXPECT_EQ(rows[1].substr(0, 5), "=   D");
  EXPECT_EQ(rows[2].substr(0, 9), "<   2 x D");
  EXPECT_EQ(rows[3].substr(0, 8), "<   lock");
  // The same from the JSON.
  const auto j = nlohmann::json::parse(
      shapetrace("compare " + rec.string() + " outlier:" + std::to_string(outlier) + " --json -").out);
  EXPECT_EQ(j["only_a"], 3);
  EXPECT_EQ(j["matches"], 2);
  EXPECT_EQ(j["b"]["duration_ns"], 20);
  EXPECT_EQ(j["divergences"][0], "at column 2: only A has 2 x D, lock");
  // Every algorithm gives the same score.
  for (const char* algorithm : {"full", "runs", "hirschberg"}) {
    const auto k = nlohmann::json::parse(shapetrace("compare " + rec.string() + " outlier:" +
                                                    std::to_string(outlier) + " --algorithm " +
                                                    algorithm + " --json -")
                                             .out);
    EXPECT_EQ(k["score"], j["score"]) << algorithm;
    EXPECT_EQ(k["algorithm"], algorithm);
  }
}

TEST_F(SummarizeCommandTest, CompareAcrossRecordings) {
  const fs::path rec = record();
  const fs::path again = record("again");
  Result r = shapetrace("compare " + rec.string() + " worker worker --with " + again.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("conservation 100.0%"), std::string::npos) << r.out;
  const fs::path other = record("other", "other_");
  r = shapetrace("compare " + rec.string() + " worker worker --with " + other.string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("have no function in common: they are runs of different programs"),
            std::string::npos)
      << r.err;
}

TEST_F(SummarizeCommandTest, CompareBadInput) {
  const fs::path rec = record();
  const std::string base = "compare " + rec.string();
  auto expect = [&](const std::string& args, int code, const std::string& message) {
    const Result r = shapetrace(args);
    EXPECT_EQ(r.exit_code, code) << args << "\n" << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << args << "\n" << r.err;
  };
  expect(base + " nosuch worker", 1, "shapetrace compare: error: no thread 'nosuch'");
  expect(base + " worker@1016", 1, "no call starts at 1016 ns on worker (11)");
  expect(base + " outlier:99", 1, "no outlier 99");
  expect(base + " worker", 2, "give B: a typical call is found for a call");
  expect(base + " typical worker", 2, "A names a call; typical is for B");
  expect(base + " worker@x..y abc", 2, "is not a time");
  expect(base + " worker abc --algorithm magic", 2, "magic");
  expect(base, 2, "a is required");
  expect(base + " worker abc --with " + (dir / "none").string(), 1, "is not a recording directory");
}

} // namespace
} // namespace shapetrace::analyzer
