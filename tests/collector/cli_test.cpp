// The collector's commands as a user runs them: `shapetrace collect` shut down by SIGTERM and
// killed with -9, `record` with a program that starts other processes, `info`, `dump` in its three
// formats, and `import` of DINAMITE and CSV traces with their errors.
#include "process.h"
#include "recording/recording.h"
#include "wire/codec.h"
#include "wire/framing.h"

#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

namespace shapetrace {
namespace {

namespace fs = std::filesystem;
using testing::Child;
using testing::run;
using testing::TempDir;
using namespace std::chrono_literals;

const std::string kShapetrace = SHAPETRACE_BIN;
const std::string kSender = TEST_SENDER;

void writeFile(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

// Waits for `collect` to report its endpoint, so senders do not race the bind.
void waitForListening(Child& collect) {
  while (auto line = collect.readLine())
    if (line->find("listening on") != std::string::npos)
      return;
  FAIL() << "collect exited before listening";
}

nlohmann::json info(const std::string& dir) {
  auto [code, output] = run({kShapetrace, "info", "--json", dir});
  EXPECT_EQ(code, 0) << output;
  return nlohmann::json::parse(output);
}

TEST(CollectCommand, StopsCleanlyOnSigtermWithEverythingRecorded) {
  TempDir tmp;
  const std::string endpoint = "ipc://" + tmp.sub("c.sock");
  Child collect({kShapetrace, "collect", "--listen", endpoint, "--out", tmp.sub("rec")});
  waitForListening(collect);
  auto [code, output] = run({kSender, endpoint, "--threads", "3", "--batches", "40"});
  ASSERT_EQ(code, 0) << output;
  // Process start, module table, 3 thread starts, 120 batches, 3 thread ends, process end.
  EXPECT_EQ(output, "sent 129 12000\n");
  // Wait for the last item (the sender's process end) to be on disk before stopping.
  for (int i = 0; i < 500; ++i) {
    std::this_thread::sleep_for(10ms);
    recording::RecordingReader reader(tmp.sub("rec"));
    size_t items = 0;
    while (reader.next())
      ++items;
    if (items == 129)
      break;
  }
  collect.signal(SIGTERM);
  const std::string summary = collect.readAll();
  EXPECT_EQ(collect.exitCode(), 0) << summary;
  EXPECT_NE(summary.find("12000 events"), std::string::npos) << summary;
  const auto j = info(tmp.sub("rec"));
  EXPECT_EQ(j["frames"], 129);
  EXPECT_EQ(j["processes"][0]["threads"].size(), 3u);
  EXPECT_EQ(j["processes"][0]["threads"][0]["events"], 4000);
  EXPECT_TRUE(j["damage"].empty());
  EXPECT_TRUE(fs::exists(tmp.sub("rec") + "/collector.json"));
}

TEST(CollectCommand, DefaultEndpointLivesInAPrivateDirectory) {
  TempDir tmp;
  const std::vector<std::pair<std::string, std::string>> env = {{"XDG_RUNTIME_DIR", tmp.path()}};
  Child collect({kShapetrace, "collect", "--out", tmp.sub("rec")}, env);
  const auto line = collect.readLine();
  ASSERT_TRUE(line);
  EXPECT_EQ(*line, "shapetrace collect: listening on ipc://" + tmp.path() +
                       "/shapetrace/collector.sock");
  EXPECT_EQ(fs::status(tmp.sub("shapetrace")).permissions(), fs::perms::owner_all);
  auto [code, output] = run({kSender, "ipc://" + tmp.path() + "/shapetrace/collector.sock"});
  EXPECT_EQ(code, 0) << output;
  collect.signal(SIGINT);
  const std::string summary = collect.readAll();
  EXPECT_EQ(collect.exitCode(), 0) << summary;

  // A directory others can open is refused, with the fix in the message.
  fs::permissions(tmp.sub("shapetrace"), fs::perms::owner_all | fs::perms::group_read |
                                             fs::perms::group_exec);
  std::tie(code, output) = run({kShapetrace, "collect", "--out", tmp.sub("rec2")}, env);
  EXPECT_EQ(code, 1);
  EXPECT_NE(output.find("accessible to other users (mode 750); run 'chmod 700"), std::string::npos)
      << output;
}

TEST(KeygenCommand, KeysThatCollectAcceptsForANonLoopbackAddress) {
  TempDir tmp;
  auto [code, output] = run({kShapetrace, "keygen", "-o", tmp.sub("server.key")});
  ASSERT_EQ(code, 0) << output;
  EXPECT_EQ(fs::status(tmp.sub("server.key")).permissions(),
            fs::perms::owner_read | fs::perms::owner_write);
  std::string public_key;
  std::ifstream(tmp.sub("server.key.pub")) >> public_key;
  EXPECT_EQ(public_key.size(), 40u);
  EXPECT_NE(output.find("export SHAPETRACE_CURVE_SERVER_KEY=" + public_key), std::string::npos);
  std::tie(code, output) = run({kShapetrace, "keygen", "-o", tmp.sub("server.key")});
  EXPECT_EQ(code, 1);
  EXPECT_NE(output.find("not overwriting a key"), std::string::npos) << output;

  // Off loopback the forwarding collectors' keys are listed: a directory of keygen's FILE.pub.
  std::tie(code, output) = run({kShapetrace, "collect", "--listen", "tcp://0.0.0.0:0",
                                "--curve-secret-key", tmp.sub("server.key"), "-o", tmp.sub("rec")});
  EXPECT_EQ(code, 1);
  EXPECT_NE(output.find("without --curve-clients"), std::string::npos) << output;
  fs::create_directories(tmp.sub("clients"));
  std::tie(code, output) = run({kShapetrace, "keygen", "-o", tmp.sub("clients/forwarder.key")});
  ASSERT_EQ(code, 0) << output;
  fs::remove(tmp.sub("clients/forwarder.key")); // only the public half is given to the server
  Child collect({kShapetrace, "collect", "--listen", "tcp://0.0.0.0:0", "--curve-secret-key",
                 tmp.sub("server.key"), "--curve-clients", tmp.sub("clients"), "-o",
                 tmp.sub("rec")});
  std::string banner;
  while (auto line = collect.readLine()) {
    banner += *line + "\n";
    if (line->find("SHAPETRACE_CURVE_SERVER_KEY=") != std::string::npos)
      break;
  }
  EXPECT_NE(banner.find("listening on tcp://0.0.0.0:"), std::string::npos) << banner;
  EXPECT_NE(banner.find("SHAPETRACE_CURVE_SERVER_KEY=" + public_key), std::string::npos) << banner;
  collect.signal(SIGTERM);
  collect.readAll();
  EXPECT_EQ(collect.exitCode(), 0);
}

TEST(CollectCommand, RefusesBadEndpointsAndRecordingDirectoriesInUse) {
  TempDir tmp;
  auto [code, output] = run({kShapetrace, "collect", "--listen", "tcp://0.0.0.0:0", "-o",
                             tmp.sub("rec")});
  EXPECT_EQ(code, 1);
  EXPECT_NE(output.find("refusing to listen on 'tcp://0.0.0.0:0'"), std::string::npos) << output;
  std::tie(code, output) = run({kShapetrace, "collect", "--listen", "ipc://" + tmp.sub("s")});
  EXPECT_EQ(code, 1);
  EXPECT_NE(output.find("nothing to do"), std::string::npos) << output;
  writeFile(tmp.sub("busy.seg"), "x");
  std::tie(code, output) =
      run({kShapetrace, "collect", "--listen", "ipc://" + tmp.sub("s"), "-o", tmp.path()});
  EXPECT_EQ(code, 1);
  EXPECT_NE(output.find("already holds a recording"), std::string::npos) << output;
}

// kill -9 while a sender streams: every frame that reached the file is a complete batch, each
// thread's batches are a gap-free prefix, and at most the very end is torn. Then a cut inside the
// last frame (a kill in the middle of a write) is reported as a torn tail by `info`.
TEST(CollectCommand, KillDashNineLeavesEveryCompleteBatchReadable) {
  TempDir tmp;
  const std::string endpoint = "ipc://" + tmp.sub("c.sock");
  Child collect({kShapetrace, "collect", "--listen", endpoint, "--out", tmp.sub("rec"),
                 "--segment-size", "1"});
  waitForListening(collect);
  Child streaming({kSender, endpoint, "--threads", "2", "--batches", "100000", "--events", "300",
                   "--process", "42"});
  streaming.closeStdin();
  // Let it record a few segments' worth, then kill the collector mid-stream.
  while (!fs::exists(recording::segmentPath(tmp.sub("rec"), 3)))
    std::this_thread::sleep_for(10ms);
  collect.signal(SIGKILL);
  EXPECT_EQ(collect.exitCode(), 128 + SIGKILL);
  streaming.signal(SIGKILL);

  recording::RecordingReader reader(tmp.sub("rec"));
  std::map<uint32_t, uint64_t> next;
  size_t batches = 0;
  while (auto item = reader.nextItem()) {
    if (auto* batch = std::get_if<wire::EventBatch>(&item->body)) {
      ASSERT_EQ(batch->sequence, next[batch->thread]++) << "a hole in thread " << batch->thread;
      ASSERT_EQ(batch->events.size(), 300u);
      ++batches;
    }
  }
  EXPECT_GT(batches, 100u);
  EXPECT_EQ(reader.undecodable(), 0u);
  for (const recording::Damage& d : reader.damage()) {
    EXPECT_EQ(d.kind, recording::Damage::Kind::TornTail);
    EXPECT_EQ(d.segment, reader.segmentCount() - 1);
  }

  // Cut the last segment inside its last frame. The collector may have died just after it opened
  // a new segment: one without a frame yet is removed first.
  uint32_t last_number = reader.segmentCount() - 1;
  while (last_number > 0 && fs::file_size(recording::segmentPath(tmp.sub("rec"), last_number)) <=
                                wire::kFileHeaderBytes + 5) {
    fs::remove(recording::segmentPath(tmp.sub("rec"), last_number));
    fs::remove(recording::indexPath(tmp.sub("rec"), last_number));
    --last_number;
  }
  const std::string last = recording::segmentPath(tmp.sub("rec"), last_number);
  fs::resize_file(last, fs::file_size(last) - 5);
  const auto j = info(tmp.sub("rec"));
  ASSERT_EQ(j["damage"].size(), 1u);
  EXPECT_EQ(j["damage"][0]["kind"], "torn tail");
  const auto [code, text] = run({kShapetrace, "info", tmp.sub("rec")});
  EXPECT_NE(text.find("torn tails 1"), std::string::npos) << text;
}

TEST(RecordCommand, RecordsAProgramAndTheProcessesItStartsAndReturnsItsExitCode) {
  TempDir tmp;
  // The shell exits first; its background sender is re-parented to `record`, which waits for it.
  const std::string script = kSender + " $SHAPETRACE_ENDPOINT --process 1 --batches 30 & " +
                             kSender + " $SHAPETRACE_ENDPOINT --process 2 --threads 2; exit 7";
  auto [code, output] = run({kShapetrace, "record", "-o", tmp.sub("rec"), "--", "sh", "-c",
                             script});
  EXPECT_EQ(code, 7) << output;
  EXPECT_NE(output.find("sh exited with status 7"), std::string::npos) << output;
  EXPECT_NE(output.find("2 process(es)"), std::string::npos) << output;
  const auto j = info(tmp.sub("rec"));
  ASSERT_EQ(j["processes"].size(), 2u);
  // info lists processes in the order they appear; the two senders run at the same time.
  std::map<uint64_t, nlohmann::json> by_key;
  for (const auto& p : j["processes"])
    by_key[p["process"].get<uint64_t>()] = p;
  EXPECT_EQ(by_key[1]["threads"][0]["events"], 3000); // process 1: 30 batches of 100
  EXPECT_EQ(by_key[2]["threads"].size(), 2u);
  EXPECT_TRUE(by_key[1]["ended"]);
}

// A recording is complete by default: the program runs in the runtime's blocking mode, unless
// --lossy is given or the user chose SHAPETRACE_BLOCKING.
TEST(RecordCommand, RunsTheProgramLosslessUnlessAskedOtherwise) {
  TempDir tmp;
  const std::string show = "echo \"blocking=${SHAPETRACE_BLOCKING-unset}\"";
  auto [code, output] = run({kShapetrace, "record", "-o", tmp.sub("rec"), "--", "sh", "-c", show});
  EXPECT_EQ(code, 1) << output; // sh is not traced: nothing was recorded
  EXPECT_NE(output.find("blocking=1\n"), std::string::npos) << output;
  std::tie(code, output) =
      run({kShapetrace, "record", "--lossy", "-o", tmp.sub("rec2"), "--", "sh", "-c", show});
  EXPECT_NE(output.find("blocking=unset\n"), std::string::npos) << output;
  std::tie(code, output) = run({kShapetrace, "record", "-o", tmp.sub("rec3"), "--", "sh", "-c", show},
                               {{"SHAPETRACE_BLOCKING", "0"}});
  EXPECT_NE(output.find("blocking=0\n"), std::string::npos) << output;
}

TEST(RecordCommand, ReportsAProgramThatCannotRunAndUsageErrors) {
  TempDir tmp;
  auto [code, output] =
      run({kShapetrace, "record", "-o", tmp.sub("rec"), "--", tmp.sub("no-such-program")});
  EXPECT_EQ(code, 127);
  EXPECT_NE(output.find("cannot run"), std::string::npos) << output;
  std::tie(code, output) = run({kShapetrace, "record", "-o", tmp.sub("rec2")});
  EXPECT_EQ(code, 2) << output;
  // A program killed by a signal: 128 + signal, and a recording that says only how it died.
  std::tie(code, output) =
      run({kShapetrace, "record", "-o", tmp.sub("rec3"), "--", "sh", "-c", "kill -9 $$"});
  EXPECT_EQ(code, 128 + 9) << output;
  const auto j = info(tmp.sub("rec3"));
  EXPECT_EQ(j["frames"], 1);
  ASSERT_EQ(j["untraced_processes"].size(), 1u);
  EXPECT_EQ(j["untraced_processes"][0]["text"], "killed by signal 9 (SIGKILL)");
  EXPECT_EQ(j["untraced_processes"][0]["signal"], 9);
}

// A program that was not built with the plugin connects to nothing: record says so, keeps its
// exit status in the recording, and fails (with the program's code when that is not 0).
TEST(RecordCommand, AProgramNotBuiltWithThePluginIsReportedAndFails) {
  TempDir tmp;
  auto [code, output] = run({kShapetrace, "record", "-o", tmp.sub("rec"), "--", "true"});
  EXPECT_EQ(code, 1) << output;
  EXPECT_NE(output.find("shapetrace record: warning: no traced process connected, nothing was "
                        "recorded: was true built with shapetrace-cc or shapetrace-c++"),
            std::string::npos)
      << output;
  auto j = info(tmp.sub("rec"));
  EXPECT_EQ(j["processes"].size(), 0u);
  ASSERT_EQ(j["untraced_processes"].size(), 1u);
  EXPECT_EQ(j["untraced_processes"][0]["text"], "exit status 0");
  std::tie(code, output) =
      run({kShapetrace, "record", "-o", tmp.sub("rec2"), "--", "sh", "-c", "exit 3"});
  EXPECT_EQ(code, 3) << output;
  EXPECT_NE(output.find("no traced process connected"), std::string::npos) << output;
  j = info(tmp.sub("rec2"));
  EXPECT_EQ(j["untraced_processes"][0]["exit_code"], 3);
}

// record finishes its recording and exits with its program's status, never dying first.
void expectSignalForwardedToTheProgram(int signal) {
  TempDir tmp;
  Child record({kShapetrace, "record", "-o", tmp.sub("rec"), "--", "sh", "-c",
                "echo started; exec sleep 30"});
  ASSERT_EQ(record.readLine(), "started");
  record.signal(signal);
  const std::string output = record.readAll();
  EXPECT_EQ(record.exitCode(), 128 + signal) << output;
  EXPECT_NE(output.find("sh exited with signal " + std::to_string(signal)), std::string::npos)
      << output;
  EXPECT_NE(output.find("items recorded to"), std::string::npos) << output;
}

TEST(RecordCommand, ForwardsSigtermToTheProgramAndKeepsItsExitStatus) {
  expectSignalForwardedToTheProgram(SIGTERM);
}

TEST(RecordCommand, ForwardsSighupToTheProgramAndKeepsItsExitStatus) {
  expectSignalForwardedToTheProgram(SIGHUP);
}

const char* kDinamite = "# thread function direction time\n"
                        "7 main 0 100\n"
                        "7 parse 0 110\n"
                        "8 worker 0 115\n"
                        "7 parse 1 150\n"
                        "\n"
                        "8 worker 1 170\n"
                        "7 main 1 200\n";

TEST(ImportCommand, DinamiteTraceBecomesARecordingThatDumpsExactly) {
  TempDir tmp;
  writeFile(tmp.sub("trace.txt"), kDinamite);
  auto [code, output] = run({kShapetrace, "import", tmp.sub("trace.txt"), "-o", tmp.sub("rec")});
  ASSERT_EQ(code, 0) << output;
  EXPECT_NE(output.find("6 events of 2 thread(s), 3 function(s)"), std::string::npos) << output;
  std::tie(code, output) = run({kShapetrace, "dump", tmp.sub("rec"), "--thread", "7"});
  ASSERT_EQ(code, 0) << output;
  // Everything from the first line that names an event.
  const std::string events = output.substr(output.find("\n100 ") + 1);
  const std::string pid = events.substr(4, events.find('/') - 4);
  EXPECT_EQ(events, "100 " + pid + "/7 -> main\n" +
                        "110 " + pid + "/7   -> parse\n" +
                        "150 " + pid + "/7   <- parse\n" +
                        "200 " + pid + "/7 <- main\n" +
                        "# " + pid + "/7 thread_end 4 events, 0 dropped\n" +
                        "# " + pid + "/0 process_end exit status 0, 6 events, 0 dropped\n");
}

TEST(ImportCommand, CsvWithQuotedNamesAndTheChromeAndJsonDumps) {
  TempDir tmp;
  writeFile(tmp.sub("t.csv"), "tid,func,dir,time_ns\r\n"
                              "1,\"std::map<int, int>::find\",0,1000\r\n"
                              "1,\"say \"\"hi\"\"\",0,1500\n"
                              "1,\"say \"\"hi\"\"\",1,1600\n"
                              "1,\"std::map<int, int>::find\",1,2500\n");
  auto [code, output] = run({kShapetrace, "import", "--format", "csv", tmp.sub("t.csv"), "-o",
                             tmp.sub("rec")});
  ASSERT_EQ(code, 0) << output;

  std::tie(code, output) = run({kShapetrace, "dump", "-f", "chrome", tmp.sub("rec")});
  ASSERT_EQ(code, 0) << output;
  const auto chrome = nlohmann::json::parse(output);
  std::vector<std::tuple<std::string, std::string, double>> durations;
  for (const auto& e : chrome["traceEvents"])
    if (e["ph"] == "B" || e["ph"] == "E")
      durations.emplace_back(e["ph"], e.value("name", ""), e["ts"]);
  // An E closes the innermost open B, without repeating its name.
  using D = std::tuple<std::string, std::string, double>;
  EXPECT_EQ(durations, (std::vector<D>{{"B", "std::map<int, int>::find", 1.0},
                                       {"B", "say \"hi\"", 1.5},
                                       {"E", "", 1.6},
                                       {"E", "", 2.5}}));

  std::tie(code, output) =
      run({kShapetrace, "dump", "-f", "json", "--from", "1400", "--to", "1700", tmp.sub("rec")});
  ASSERT_EQ(code, 0) << output;
  std::vector<uint64_t> times;
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    const auto item = nlohmann::json::parse(line);
    if (item["kind"] == "event_batch")
      for (const auto& e : item["events"])
        times.push_back(e["t"]);
  }
  EXPECT_EQ(times, (std::vector<uint64_t>{1500, 1600}));
}

TEST(ImportCommand, BadInputGivesTheLineAndTheReason) {
  TempDir tmp;
  const std::vector<std::pair<std::string, std::string>> dinamite = {
      {"1 main 0\n", ":1: expected 4 fields (thread function direction time), got 3"},
      {"1 main 0 10\nx main 1 20\n", ":2: thread 'x' is not a non-negative integer"},
      {"1 main 0 10\n1 main 2 20\n", ":2: direction '2' must be 0 (enter) or 1 (exit)"},
      {"1 main 0 10\n1 main 1 -5\n", ":2: time '-5' is not a non-negative integer"},
      {"1 main 0 10\n\n1 main 1 5\n", ":3: time 5 of thread 1 is earlier than its previous "
                                      "record (line 1, time 10)"},
      {"# only a comment\n", "holds no records"},
      // Found by import_fuzzer: a time step of 2^61 ns or more did not survive the encoding.
      {"1 main 0 800000070005607704\n1 main 1 8000000000378038527\n",
       ":2: time 8000000000378038527 is past the latest a recording holds (2305843009213693951 "
       "ns)"},
  };
  for (const auto& [text, error] : dinamite) {
    writeFile(tmp.sub("bad.txt"), text);
    fs::remove_all(tmp.sub("rec"));
    auto [code, output] = run({kShapetrace, "import", tmp.sub("bad.txt"), "-o", tmp.sub("rec")});
    EXPECT_EQ(code, 1) << text;
    EXPECT_NE(output.find(error), std::string::npos) << text << " -> " << output;
  }
  const std::vector<std::pair<std::string, std::string>> csv = {
      {"tid,function,dir,time_ns\n", ":1: expected the header 'tid,func,dir,time_ns'"},
      {"", ":1: empty file"},
      {"tid,func,dir,time_ns\n1,main,0\n", ":2: expected 4 fields (tid,func,dir,time_ns), got 3"},
      {"tid,func,dir,time_ns\n1,\"main,0,10\n", ":2: unterminated quoted field"},
  };
  for (const auto& [text, error] : csv) {
    writeFile(tmp.sub("bad.csv"), text);
    fs::remove_all(tmp.sub("rec"));
    auto [code, output] = run({kShapetrace, "import", "-f", "csv", tmp.sub("bad.csv"), "-o",
                               tmp.sub("rec")});
    EXPECT_EQ(code, 1) << text;
    EXPECT_NE(output.find(error), std::string::npos) << text << " -> " << output;
  }
  auto [code, output] = run({kShapetrace, "import", tmp.sub("missing.txt"), "-o", tmp.sub("r")});
  EXPECT_EQ(code, 1);
  EXPECT_NE(output.find("cannot open"), std::string::npos) << output;
}

TEST(InfoAndDump, RejectADirectoryThatIsNotARecording) {
  TempDir tmp;
  for (const char* command : {"info", "dump"}) {
    auto [code, output] = run({kShapetrace, command, tmp.path()});
    EXPECT_EQ(code, 1);
    EXPECT_NE(output.find("holds no recording"), std::string::npos) << output;
  }
  auto [code, output] = run({kShapetrace, "dump", "-f", "xml", tmp.path()});
  EXPECT_EQ(code, 2) << output;
}

TEST(DumpCommand, ThreadAndTimeWindowSeekThroughTheIndex) {
  TempDir tmp;
  // Thread 3: 20000 enter/exit pairs 10 ns apart, so several batches; thread 4 interleaved.
  std::string csv = "tid,func,dir,time_ns\n";
  for (int i = 0; i < 20000; ++i) {
    csv += "3,f" + std::to_string(i % 7) + ",0," + std::to_string(i * 20) + "\n";
    csv += "3,f" + std::to_string(i % 7) + ",1," + std::to_string(i * 20 + 10) + "\n";
    csv += "4,g,0," + std::to_string(i * 20 + 5) + "\n4,g,1," + std::to_string(i * 20 + 6) + "\n";
  }
  writeFile(tmp.sub("t.csv"), csv);
  ASSERT_EQ(run({kShapetrace, "import", "-f", "csv", tmp.sub("t.csv"), "-o", tmp.sub("rec")})
                .first,
            0);
  auto [code, output] = run({kShapetrace, "dump", tmp.sub("rec"), "--thread", "3", "--from",
                             "300000", "--to", "300050"});
  ASSERT_EQ(code, 0) << output;
  std::vector<std::string> events;
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);)
    if (line[0] != '#')
      events.push_back(line.substr(0, line.find(' ')));
  EXPECT_EQ(events, (std::vector<std::string>{"300000", "300010", "300020", "300030", "300040",
                                              "300050"}));
}

} // namespace
} // namespace shapetrace

namespace shapetrace {
namespace {

// A recording of test_sender (3 threads x 40 batches of 100 events: 129 items, 12000 events).
void recordSender(const std::string& dir, std::vector<std::string> extra = {}) {
  std::vector<std::string> argv{kShapetrace, "record", "-o", dir};
  argv.insert(argv.end(), extra.begin(), extra.end());
  argv.insert(argv.end(), {"--", "sh", "-c",
                           kSender + " $SHAPETRACE_ENDPOINT --threads 3 --batches 40"});
  auto [code, output] = run(argv);
  ASSERT_EQ(code, 0) << output;
}

fs::perms permissionsOf(const std::string& path) {
  return fs::status(path).permissions() & fs::perms::mask;
}

TEST(Recording, IsPrivateByDefaultAndReadableOnRequest) {
  TempDir tmp;
  recordSender(tmp.sub("private"));
  EXPECT_EQ(permissionsOf(tmp.sub("private")), fs::perms::owner_all);
  const auto owner_rw = fs::perms::owner_read | fs::perms::owner_write;
  for (const char* file : {"000000.seg", "000000.idx", "collector.json"})
    EXPECT_EQ(permissionsOf(tmp.sub("private") + "/" + file), owner_rw) << file;

  const mode_t previous = ::umask(022);
  recordSender(tmp.sub("shared"), {"--readable"});
  ::umask(previous);
  EXPECT_EQ(permissionsOf(tmp.sub("shared")),
            fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                fs::perms::others_read | fs::perms::others_exec);
  for (const char* file : {"000000.seg", "000000.idx", "collector.json"})
    EXPECT_EQ(permissionsOf(tmp.sub("shared") + "/" + file),
              owner_rw | fs::perms::group_read | fs::perms::others_read)
        << file;
}

TEST(InfoCommand, ReportsWhatAnEmptiedOrCutSegmentLostAndNamesAnUnsupportedVersion) {
  TempDir tmp;
  const std::string dir = tmp.sub("rec");
  recordSender(dir);
  const std::string segment = recording::segmentPath(dir, 0);
  std::string full;
  {
    std::ifstream in(segment, std::ios::binary);
    full.assign(std::istreambuf_iterator<char>(in), {});
  }
  auto rewrite = [&](const std::string& bytes) {
    std::ofstream(segment, std::ios::binary | std::ios::trunc)
        .write(bytes.data(), static_cast<long>(bytes.size()));
  };
  {
    // The sender's 129 items and record's ExitStatus of the program (sh).
    const auto j = info(dir);
    EXPECT_EQ(j["frames"], 130);
    EXPECT_EQ(j["missing_items"], 0);
    EXPECT_TRUE(j["problems"].empty()) << j["problems"];
  }
  // Cut to 0 bytes: not a clean empty recording.
  rewrite("");
  {
    const auto j = info(dir);
    EXPECT_EQ(j["missing_items"], 130);
    EXPECT_EQ(j["missing_events"], 12000);
    auto [code, text] = run({kShapetrace, "info", dir});
    EXPECT_NE(text.find("segment 0 holds no data (0 bytes)"), std::string::npos) << text;
    EXPECT_NE(text.find("130 items missing"), std::string::npos) << text;
    EXPECT_NE(text.find("LOST AFTER RECORDING: 130 items, 12000 events"), std::string::npos)
        << text;
  }
  // Cut in the middle: the torn tail is one thing, the items and events after it are lost.
  rewrite(full.substr(0, full.size() / 2));
  {
    const auto j = info(dir);
    EXPECT_GT(j["missing_items"].get<uint64_t>(), 50u);
    EXPECT_GT(j["missing_events"].get<uint64_t>(), 5000u);
    auto [code, text] = run({kShapetrace, "info", dir});
    EXPECT_NE(text.find("past its end"), std::string::npos) << text;
    EXPECT_NE(text.find("events missing"), std::string::npos) << text;
  }
  // A file header of a format version this reader does not know.
  std::string newer = full;
  newer[8] = 99;
  newer[9] = newer[10] = newer[11] = 0;
  rewrite(newer);
  {
    auto [code, text] = run({kShapetrace, "info", dir});
    EXPECT_NE(text.find("unsupported version 99"), std::string::npos) << text;
    EXPECT_EQ(text.find("corrupt:"), std::string::npos) << text;
  }
}

// Whether the recording holds a ProcessEnd yet (the sender's last item). Read while the collector
// deletes segments: a segment removed between listing and opening is a retry, not an error.
bool holdsProcessEnd(const std::string& dir) {
  try {
    recording::RecordingReader reader(dir);
    while (auto item = reader.nextItem())
      if (item->kind() == wire::ItemKind::ProcessEnd)
        return true;
  } catch (const std::exception&) {
  }
  return false;
}

TEST(CollectCommand, RetentionDeletesTheOldestSegmentsAndInfoAndAnalyzeCountThem) {
  TempDir tmp;
  const std::string endpoint = "ipc://" + tmp.sub("c.sock");
  const std::string dir = tmp.sub("rec");
  Child collect({kShapetrace, "collect", "--listen", endpoint, "--out", dir, "--segment-size",
                 "1", "--retain-gib", "0.003"});
  waitForListening(collect);
  auto [code, output] =
      run({kSender, endpoint, "--threads", "3", "--batches", "1000", "--events", "1000"});
  ASSERT_EQ(code, 0) << output;
  EXPECT_EQ(output, "sent 3009 3000000\n");
  for (int i = 0; i < 1000 && !holdsProcessEnd(dir); ++i)
    std::this_thread::sleep_for(10ms);
  collect.signal(SIGTERM);
  const std::string summary = collect.readAll();
  EXPECT_EQ(collect.exitCode(), 0) << summary;
  EXPECT_NE(summary.find("retention deleted the "), std::string::npos) << summary;

  // 3 MiB of 1 MiB segments: the carry, two closed ones and the open one at most.
  uint64_t bytes = 0, segments = 0;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.path().extension() == ".seg") {
      bytes += entry.file_size();
      ++segments;
    }
  EXPECT_LE(bytes, uint64_t{3} * 1024 * 1024 + 1024 * 1024 / 8);
  EXPECT_LE(segments, 4u);

  const auto j = info(dir);
  ASSERT_FALSE(j["retention"].is_null()) << j.dump();
  const uint64_t deleted = j["retention"]["deleted_events"].get<uint64_t>();
  EXPECT_GT(deleted, 1000000u);
  uint64_t held = 0, deleted_by_thread = 0;
  for (const auto& t : j["processes"][0]["threads"]) {
    held += t["events"].get<uint64_t>();
    deleted_by_thread += t["deleted_events"].get<uint64_t>();
    EXPECT_EQ(t["dropped"], 0) << t; // retention is not the runtime's drop
    EXPECT_EQ(t["missing_batches"], 0) << t;
  }
  EXPECT_EQ(held + deleted, 3000000u);
  EXPECT_EQ(deleted_by_thread, deleted);
  // The process and its function names survive the deletion of the segment that had them.
  EXPECT_EQ(j["processes"][0]["functions"], 1000);
  EXPECT_TRUE(j["problems"].empty()) << j["problems"];
  EXPECT_EQ(j["missing_items"], 0);
  auto [info_code, text] = run({kShapetrace, "info", dir});
  EXPECT_NE(text.find("DELETED BY RETENTION: the "), std::string::npos) << text;
  EXPECT_NE(text.find("deleted by retention"), std::string::npos) << text;

  // analyze says the analysis starts after a loss, and counts it.
  auto [analyze_code, analysis] = run({kShapetrace, "analyze", dir});
  EXPECT_EQ(analyze_code, 0) << analysis;
  EXPECT_NE(analysis.find("LOSS: " + std::to_string(deleted) + " events were deleted"),
            std::string::npos)
      << analysis;
  auto [json_code, model_text] = run({kShapetrace, "analyze", dir, "--json", "-"});
  ASSERT_EQ(json_code, 0) << model_text;
  const auto model = nlohmann::json::parse(model_text.substr(model_text.find('{')));
  EXPECT_EQ(model["summary"]["events"], held);
  bool counted = false;
  for (const auto& d : model["diagnostics"])
    if (d["name"] == "retention_deleted_events") {
      EXPECT_EQ(d["count"], deleted);
      counted = true;
    }
  EXPECT_TRUE(counted) << model["diagnostics"];
}

TEST(DumpCommand, ThreadTakesANameAsExportAndSummarizeDo) {
  TempDir tmp;
  const std::string dir = tmp.sub("rec");
  recordSender(dir); // threads 1, 2, 3 named thread-1, thread-2, thread-3
  auto [by_id_code, by_id] = run({kShapetrace, "dump", dir, "--thread", "2"});
  ASSERT_EQ(by_id_code, 0) << by_id;
  auto [by_name_code, by_name] = run({kShapetrace, "dump", dir, "--thread", "thread-2"});
  ASSERT_EQ(by_name_code, 0) << by_name;
  EXPECT_EQ(by_name, by_id);
  EXPECT_NE(by_name.find("/2 thread_end 4000 events"), std::string::npos) << by_name;
  EXPECT_EQ(by_name.find("/1 "), std::string::npos);
  EXPECT_EQ(by_name.find("/3 "), std::string::npos);
  // Seeking through the index by name gives what seeking by id gives.
  auto [seek_id_code, seek_id] = run({kShapetrace, "dump", dir, "--thread", "2", "--from", "0"});
  auto [seek_name_code, seek_name] =
      run({kShapetrace, "dump", dir, "--thread", "thread-2", "--from", "0"});
  ASSERT_EQ(seek_name_code, 0) << seek_name;
  EXPECT_EQ(seek_name, seek_id);

  auto [code, output] = run({kShapetrace, "dump", dir, "--thread", "thread-9"});
  EXPECT_EQ(code, 1);
  EXPECT_NE(output.find("no thread 'thread-9' in the recording (threads: 1 (thread-1), 2 "
                        "(thread-2), 3 (thread-3))"),
            std::string::npos)
      << output;
}

TEST(CollectCommand, RetentionFlagsThatCannotWorkAreUsageErrors) {
  TempDir tmp;
  const std::string listen = "ipc://" + tmp.sub("s");
  auto [code, output] = run({kShapetrace, "collect", "--listen", listen, "-o", tmp.sub("a"),
                             "--retain-gib", "0.25"});
  EXPECT_EQ(code, 2) << output;
  EXPECT_NE(output.find("shapetrace collect: error: --retain-gib 0.250000 (256 MiB) holds fewer "
                        "than two segments of 256 MiB"),
            std::string::npos)
      << output;
  std::tie(code, output) = run({kShapetrace, "collect", "--listen", listen, "--publish",
                                "ipc://" + tmp.sub("p"), "--retain-hours", "2"});
  EXPECT_EQ(code, 2) << output;
  EXPECT_NE(output.find("give --out DIR"), std::string::npos) << output;
  for (const char* bad : {"0", "-1", "abc"}) {
    std::tie(code, output) = run({kShapetrace, "collect", "--listen", listen, "-o",
                                  tmp.sub("b"), "--retain-hours", bad});
    EXPECT_EQ(code, 2) << bad << ": " << output;
    EXPECT_NE(output.find("--retain-hours"), std::string::npos) << output;
  }
  std::tie(code, output) = run({kShapetrace, "collect", "--listen", listen, "-o", tmp.sub("c"),
                                "--retain-hours", "0.0001"});
  EXPECT_EQ(code, 2) << output;
  EXPECT_NE(output.find("is under a second"), std::string::npos) << output;
  // record checks them before it starts the program.
  std::tie(code, output) = run({kShapetrace, "record", "-o", tmp.sub("d"), "--retain-gib", "0.1",
                                "--", "sh", "-c", "touch " + tmp.sub("ran")});
  EXPECT_EQ(code, 2) << output;
  EXPECT_NE(output.find("shapetrace record: error: --retain-gib"), std::string::npos) << output;
  EXPECT_FALSE(fs::exists(tmp.sub("ran")));
}

} // namespace
} // namespace shapetrace
