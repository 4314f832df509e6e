// End to end with real instrumented programs: 8 processes of 4 threads each, compiled with the
// shapetrace plugin and runtime, recorded at once by `shapetrace record`. Every event arrives
// exactly once and in order per thread, checked against the counts the targets kept (the runtime's
// ThreadEnd counts and the program's own count of leaf() calls).
#include "pidfd_exit.h"
#include "process.h"
#include "recording/recording.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <csignal>
#include <map>
#include <optional>
#include <sys/wait.h>
#include <thread>

namespace shapetrace {
namespace {

using testing::run;
using testing::TempDir;

TEST(EndToEnd, EightInstrumentedProcessesWithFourThreadsEachRecordExactly) {
  TempDir tmp;
  constexpr long kCalls = 20000;
  std::string script;
  for (int p = 0; p < 8; ++p)
    script += std::string(INSTRUMENTED_WORKERS) + " 4 " + std::to_string(kCalls) + " & ";
  script += "wait";
  // Lossless mode, and time enough at exit on a loaded machine: this test checks the collector,
  // not the runtime's drop policy.
  auto [code, output] = run({SHAPETRACE_BIN, "record", "-o", tmp.sub("rec"), "--", "sh", "-c",
                             script},
                            {{"SHAPETRACE_BLOCKING", "1"}, {"SHAPETRACE_EXIT_TIMEOUT_MS", "60000"}});
  ASSERT_EQ(code, 0) << output;
  size_t printed = 0;
  for (size_t at = output.find("leaf calls "); at != std::string::npos;
       at = output.find("leaf calls ", at + 1)) {
    EXPECT_EQ(std::stol(output.substr(at + 11)), 4 * 2 * kCalls);
    ++printed;
  }
  EXPECT_EQ(printed, 8u) << output;

  struct Thread {
    uint64_t next_sequence = 0, events = 0, leaf_enters = 0, depth_errors = 0;
    int64_t depth = 0;
    bool ended = false;
    uint64_t recorded_by_runtime = 0, dropped_by_runtime = 0;
  };
  std::map<std::pair<uint64_t, uint32_t>, Thread> threads;
  std::map<uint64_t, std::map<uint32_t, std::string>> names;
  recording::RecordingReader reader(tmp.sub("rec"));
  while (auto item = reader.nextItem()) {
    if (auto* table = std::get_if<wire::ModuleTable>(&item->body)) {
      for (const auto& f : table->functions)
        names[item->process][f.id] = f.demangled_name;
    } else if (auto* batch = std::get_if<wire::EventBatch>(&item->body)) {
      Thread& t = threads[{item->process, batch->thread}];
      ASSERT_EQ(batch->sequence, t.next_sequence++) << "batch lost, repeated or reordered";
      for (const Event& e : batch->events) {
        ++t.events;
        if (e.kind == EventKind::Enter) {
          ++t.depth;
          if (names[item->process][e.function_id].find("leaf") != std::string::npos)
            ++t.leaf_enters;
        } else if (--t.depth < 0) {
          ++t.depth_errors;
        }
      }
    } else if (auto* end = std::get_if<wire::ThreadEnd>(&item->body)) {
      Thread& t = threads[{item->process, end->thread}];
      t.ended = true;
      t.recorded_by_runtime = end->events_recorded;
      t.dropped_by_runtime = end->events_dropped;
    }
  }
  EXPECT_TRUE(reader.damage().empty());
  EXPECT_EQ(names.size(), 8u);
  uint64_t leaf_enters = 0, worker_threads = 0;
  for (const auto& [key, t] : threads) {
    EXPECT_TRUE(t.ended) << "thread " << key.second;
    EXPECT_EQ(t.events, t.recorded_by_runtime) << "thread " << key.second;
    EXPECT_EQ(t.dropped_by_runtime, 0u) << "thread " << key.second;
    EXPECT_EQ(t.depth_errors, 0u);
    leaf_enters += t.leaf_enters;
    worker_threads += t.leaf_enters == 2 * kCalls;
  }
  EXPECT_EQ(worker_threads, 32u);
  EXPECT_EQ(leaf_enters, 8u * 4 * 2 * kCalls);
}

// `record --redact-args`: the program's arguments appear nowhere in the recording's files (the
// process start, collector.json), while without it they do.
TEST(EndToEnd, RedactedArgumentsAreNowhereInTheRecording) {
  TempDir tmp;
  auto bytesOf = [](const std::string& dir) {
    std::string all;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      std::ifstream in(entry.path(), std::ios::binary);
      all.append(std::istreambuf_iterator<char>(in), {});
    }
    return all;
  };
  // 31337 calls: an argument that cannot appear in the recording by chance as text.
  auto [code, output] = run({SHAPETRACE_BIN, "record", "-o", tmp.sub("plain"), "--",
                             INSTRUMENTED_WORKERS, "1", "31337"});
  ASSERT_EQ(code, 0) << output;
  EXPECT_NE(bytesOf(tmp.sub("plain")).find("31337"), std::string::npos);
  std::tie(code, output) = run({SHAPETRACE_BIN, "record", "--redact-args", "-o",
                                tmp.sub("redacted"), "--", INSTRUMENTED_WORKERS, "1", "31337"});
  ASSERT_EQ(code, 0) << output;
  const std::string recorded = bytesOf(tmp.sub("redacted"));
  EXPECT_EQ(recorded.find("31337"), std::string::npos);
  EXPECT_NE(recorded.find("instrumented_workers"), std::string::npos) << "argv[0] is kept";
}

// What a recording says of one process: its start, its events, and how it ended.
struct RecordedProcess {
  bool forked = false;
  uint32_t pid = 0;
  uint64_t events = 0;
  uint64_t thread_end_events = 0; // what its threads' ends say they sent
  std::optional<wire::ProcessEnd> end;
  std::optional<wire::ExitStatus> reaped;
};

std::map<uint64_t, RecordedProcess> recordedProcesses(const std::string& dir) {
  std::map<uint64_t, RecordedProcess> processes;
  recording::RecordingReader reader(dir);
  while (auto item = reader.nextItem()) {
    RecordedProcess& p = processes[item->process];
    if (auto* start = std::get_if<wire::ProcessStart>(&item->body)) {
      p.forked = start->origin == wire::ProcessOrigin::Forked;
      p.pid = start->pid;
    } else if (auto* batch = std::get_if<wire::EventBatch>(&item->body)) {
      p.events += batch->events.size();
    } else if (auto* thread_end = std::get_if<wire::ThreadEnd>(&item->body)) {
      p.thread_end_events += thread_end->events_recorded;
    } else if (auto* end = std::get_if<wire::ProcessEnd>(&item->body)) {
      p.end = *end;
    } else if (auto* status = std::get_if<wire::ExitStatus>(&item->body)) {
      p.reaped = *status;
    }
  }
  EXPECT_TRUE(reader.damage().empty());
  return processes;
}

// 200 fork children of a traced program die inside a call: abort(), SIGSEGV, or SIGKILL right
// after their last call (traced_program crash-children). Each one is in the recording with every
// call it made (10 calls: 40 events, and the enter of the call it died in) and how it died,
// whether `record` runs it (and reaps it) or a `collect` of its own does (not its parent: it
// reads the status the kernel keeps until the parent reaps). The killed ones' drains wake once a
// second: the calls after their flush are still in their rings when they die, and only the
// collector finishing the rings can record them.
void expectCrashedChildren(const std::string& dir) {
  const auto processes = recordedProcesses(dir);
  std::map<int, int> deaths; // by signal
  size_t children = 0;
  for (const auto& [key, p] : processes) {
    if (!p.forked)
      continue;
    ++children;
    EXPECT_EQ(p.events, 41u) << "pid " << p.pid;
    EXPECT_EQ(p.thread_end_events, 41u) << "pid " << p.pid; // its thread ended, with all of them
    int signal = 0;
    if (p.end && p.end->reason == wire::EndReason::Signal)
      signal = p.end->exit_status;
    else if (p.reaped)
      signal = p.reaped->signal;
    ++deaths[signal];
  }
  EXPECT_EQ(children, 200u);
  EXPECT_EQ(deaths, (std::map<int, int>{{SIGABRT, 67}, {SIGKILL, 66}, {SIGSEGV, 67}}));
}

TEST(EndToEnd, CrashingChildrenUnderRecordAreEachRecordedWithTheirSignal) {
  TempDir tmp;
  auto [code, output] = run({SHAPETRACE_BIN, "record", "-o", tmp.sub("rec"), "--", TRACED_PROGRAM,
                             "crash-children", "200", "10"},
                            {{"SHAPETRACE_DRAIN_INTERVAL_US", "1000000"}});
  ASSERT_EQ(code, 3) << output;
  EXPECT_NE(output.find("abort 67 segv 67 kill 66"), std::string::npos) << output;
  expectCrashedChildren(tmp.sub("rec"));
}

TEST(EndToEnd, CrashingChildrenUnderASeparateCollectorAreEachRecordedWithTheirSignal) {
  TempDir tmp;
  const std::string endpoint = "ipc://" + tmp.sub("c.sock");
  testing::Child collect({SHAPETRACE_BIN, "collect", "--listen", endpoint, "-o", tmp.sub("rec")});
  ASSERT_TRUE(collect.readLine().has_value()); // listening
  auto [code, output] = run({TRACED_PROGRAM, "crash-children", "200", "10"},
                            {{"SHAPETRACE_ENDPOINT", endpoint},
                             {"SHAPETRACE_ENABLED", "1"},
                             {"SHAPETRACE_DRAIN_INTERVAL_US", "1000000"}});
  ASSERT_EQ(code, 3) << output;
  std::this_thread::sleep_for(std::chrono::milliseconds(500)); // the last channels are read
  collect.signal(SIGINT);
  ASSERT_EQ(collect.wait(), 0) << collect.readAll();
  expectCrashedChildren(tmp.sub("rec"));
}

// Whether this kernel keeps a reaped process's wait status for a pidfd (Linux 6.15): a child of
// ours, reaped, read back through the pidfd opened before.
bool pidfdKeepsExitStatus() {
  const pid_t child = fork();
  if (child == 0)
    _exit(7);
  const int pidfd = collector::openPidfd(uint32_t(child));
  int status = 0;
  waitpid(child, &status, 0);
  const std::optional<int> read = collector::reapedExitStatus(pidfd);
  if (pidfd >= 0)
    close(pidfd);
  return read == status;
}

// The same children, reaped by their parent as soon as they died: /proc has forgotten them by the
// time the collector looks, and the pidfd it opened when each one connected tells how each died.
TEST(EndToEnd, CrashingChildrenReapedAtOnceByTheirParentAreStillRecordedWithTheirSignal) {
  if (!pidfdKeepsExitStatus())
    GTEST_SKIP() << "this kernel keeps no wait status for a pidfd (PIDFD_INFO_EXIT: Linux 6.15)";
  TempDir tmp;
  const std::string endpoint = "ipc://" + tmp.sub("c.sock");
  testing::Child collect({SHAPETRACE_BIN, "collect", "--listen", endpoint, "-o", tmp.sub("rec")});
  ASSERT_TRUE(collect.readLine().has_value()); // listening
  auto [code, output] = run({TRACED_PROGRAM, "crash-children", "200", "10", "0"},
                            {{"SHAPETRACE_ENDPOINT", endpoint},
                             {"SHAPETRACE_ENABLED", "1"},
                             {"SHAPETRACE_DRAIN_INTERVAL_US", "1000000"}});
  ASSERT_EQ(code, 3) << output;
  EXPECT_NE(output.find("abort 67 segv 67 kill 66"), std::string::npos) << output;
  std::this_thread::sleep_for(std::chrono::milliseconds(500)); // the last channels are read
  collect.signal(SIGINT);
  ASSERT_EQ(collect.wait(), 0) << collect.readAll();
  expectCrashedChildren(tmp.sub("rec"));
}

// A program is recorded on another machine by the collector of its own host forwarding there:
// over ZeroMQ with CURVE (the receiving collector's key; the forwarder's own key listed in the
// receiver's --curve-clients), everything arrives exactly.
TEST(EndToEnd, ACollectorForwardsToAnotherOverCurveAndBothHoldTheSameStream) {
  TempDir tmp;
  auto [code, output] = run({SHAPETRACE_BIN, "keygen", "-o", tmp.sub("server.key")});
  ASSERT_EQ(code, 0) << output;
  std::filesystem::create_directories(tmp.sub("forwarders"));
  std::tie(code, output) = run({SHAPETRACE_BIN, "keygen", "-o", tmp.sub("forwarder.key")});
  ASSERT_EQ(code, 0) << output;
  std::filesystem::copy(tmp.sub("forwarder.key.pub"), tmp.sub("forwarders/host-a.pub"));
  std::ifstream public_file(tmp.sub("server.key.pub"));
  std::string public_key;
  std::getline(public_file, public_key);

  testing::Child remote({SHAPETRACE_BIN, "collect", "--listen", "tcp://127.0.0.1:*",
                         "--curve-secret-key", tmp.sub("server.key"), "--curve-clients",
                         tmp.sub("forwarders"), "-o", tmp.sub("remote")});
  std::string endpoint;
  while (auto line = remote.readLine())
    if (const auto at = line->find("listening on "); at != std::string::npos) {
      endpoint = line->substr(at + 13);
      break;
    }
  ASSERT_EQ(endpoint.rfind("tcp://127.0.0.1:", 0), 0u) << endpoint;
  const std::string local_socket = "ipc://" + tmp.sub("local.sock");
  testing::Child local({SHAPETRACE_BIN, "collect", "--listen", local_socket, "-o", tmp.sub("local"),
                        "--forward", endpoint, "--forward-server-key", public_key,
                        "--forward-secret-key", tmp.sub("forwarder.key")});
  ASSERT_TRUE(local.readLine().has_value());
  std::tie(code, output) = run({TRACED_PROGRAM, "calls", "5000"},
                               {{"SHAPETRACE_ENDPOINT", local_socket}, {"SHAPETRACE_ENABLED", "1"}});
  ASSERT_EQ(code, 3) << output;
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  local.signal(SIGINT);
  const std::string local_summary = local.readAll();
  ASSERT_EQ(local.wait(), 0) << local_summary;
  EXPECT_NE(local_summary.find("messages forwarded, 0 NOT forwarded"), std::string::npos)
      << local_summary;
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  remote.signal(SIGINT);
  ASSERT_EQ(remote.wait(), 0) << remote.readAll();

  const auto here = recordedProcesses(tmp.sub("local"));
  const auto there = recordedProcesses(tmp.sub("remote"));
  ASSERT_EQ(here.size(), 1u);
  ASSERT_EQ(there.size(), 1u);
  EXPECT_EQ(here.begin()->first, there.begin()->first);
  EXPECT_EQ(there.begin()->second.events, 20002u); // main, 5000 x (work, leaf)
  ASSERT_TRUE(there.begin()->second.end);
  EXPECT_EQ(there.begin()->second.end->exit_status, 3);
}

} // namespace
} // namespace shapetrace
