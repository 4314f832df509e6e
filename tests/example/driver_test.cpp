// The kvstore program end to end: it runs for a second and reports sane figures, writes a
// checkpoint that reads back, and rejects bad flags with a clear error and exit code 2.
#include "checkpoint.h"

#include <array>
#include <cstdio>
#include <filesystem>
#include <gtest/gtest.h>
#include <regex>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

namespace {

struct ProgramRun {
  int exit_code = -1;
  std::string output; // stdout and stderr
};

// Runs kvstore through sh; shell_prefix can set up the process first (limits, signals).
ProgramRun runKvstore(const std::string& arguments, const std::string& shell_prefix = "") {
  std::string command =
      shell_prefix + "exec " + std::string(KVSTORE_BINARY) + " " + arguments + " 2>&1";
  ProgramRun run;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe)
    return run;
  std::array<char, 4096> buffer;
  while (std::size_t n = std::fread(buffer.data(), 1, buffer.size(), pipe))
    run.output.append(buffer.data(), n);
  int status = ::pclose(pipe);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

std::uint64_t number(const std::string& text, const std::string& pattern) {
  std::smatch match;
  if (!std::regex_search(text, match, std::regex(pattern)))
    return 0;
  return std::stoull(match[1]);
}

class Driver : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("kvstore-driver-test-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(Driver, RunsForOneSecondAndReportsWhatHappened) {
  ProgramRun run = runKvstore("--seconds 1 --threads 2 --keys 20000 --seed 3 --memory-mib 2 "
                              "--flush-ms 200 --data-dir " +
                              dir_.string());
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("kvstore: 2 workers, 20000 keys, seed 3"), std::string::npos)
      << run.output;
  std::uint64_t requests = number(run.output, R"(requests: (\d+) \()");
  EXPECT_GT(requests, 1000u) << run.output;
  EXPECT_NE(run.output.find(" per second), 0 failed, get hit rate "), std::string::npos)
      << run.output;
  // Every request is accounted for in exactly one per-operation row.
  std::uint64_t rows = 0;
  for (const char* op : {"get", "put", "delete", "scan"})
    rows += number(run.output, std::string("\n  ") + op + R"( +(\d+) )");
  EXPECT_EQ(rows, requests) << run.output;
  EXPECT_EQ(number(run.output, R"(\n  all +(\d+) )"), requests);
  EXPECT_GT(number(run.output, R"(flush: (\d+) flushes)"), 0u) << run.output;
  EXPECT_GT(number(run.output, R"(splits: (\d+) leaf)"), 0u) << run.output;
  // The final checkpoint holds what the store held at the end.
  kv::CheckpointContents checkpoint = kv::readCheckpoint(dir_ / "checkpoint.log");
  EXPECT_FALSE(checkpoint.torn_tail);
  EXPECT_EQ(kv::replayPages(checkpoint.pages).size(),
            number(run.output, R"(store: (\d+) entries)"));
}

// --requests: the same amount of work whatever the machine's speed (the benchmarks' fixed work).
TEST_F(Driver, ServesExactlyTheRequestsAskedFor) {
  ProgramRun run = runKvstore("--requests 12345 --seconds 0.001 --threads 2 --keys 20000 "
                              "--memory-mib 2 --data-dir " +
                              dir_.string());
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(number(run.output, R"(requests: (\d+) \()"), 12345u) << run.output;
  EXPECT_EQ(number(run.output, R"(\n  all +(\d+) )"), 12345u) << run.output;
}

TEST_F(Driver, HelpListsTheOptions) {
  ProgramRun run = runKvstore("--help");
  EXPECT_EQ(run.exit_code, 0);
  for (const char* option : {"--seconds", "--requests", "--threads", "--keys", "--seed", "--data-dir"})
    EXPECT_NE(run.output.find(option), std::string::npos) << option;
}

TEST_F(Driver, BadFlagsGiveAClearErrorAndExitCode2) {
  struct Case {
    const char* arguments;
    const char* error;
  };
  for (const Case& c : {
           Case{"--threads 0", "--threads: Value 0 not in range 1 to 256"},
           Case{"--seconds -1", "--seconds"},
           Case{"--seconds soon", "--seconds: Value soon not in range"},
           Case{"--keys 1", "--keys: Value 1 not in range"},
           Case{"--requests -5", "--requests"},
           Case{"--zipf 1.5", "--zipf"},
           Case{"--frobnicate", "The following argument was not expected: --frobnicate"},
           Case{"--seed", "--seed: 1 required UINT missing"},
           Case{"--data-dir ''", "--data-dir: must not be empty"},
       }) {
    ProgramRun run = runKvstore(c.arguments);
    EXPECT_EQ(run.exit_code, 2) << c.arguments << "\n" << run.output;
    EXPECT_NE(run.output.find(std::string("kvstore: ") + c.error), std::string::npos)
        << c.arguments << "\n"
        << run.output;
    EXPECT_NE(run.output.find("Run 'kvstore --help'"), std::string::npos) << run.output;
  }
}

TEST_F(Driver, AnUnusableDataDirectoryIsAnError) {
  std::filesystem::create_directories(dir_);
  std::filesystem::path file = dir_ / "a-file";
  {
    std::FILE* f = std::fopen(file.c_str(), "w");
    std::fclose(f);
  }
  ProgramRun run = runKvstore("--seconds 0.1 --data-dir " + file.string());
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_NE(run.output.find("kvstore: cannot create the data directory '" + file.string() +
                            "': Not a directory"),
            std::string::npos)
      << run.output;
}

TEST_F(Driver, AnOldCheckpointThatCannotBeReplacedIsAnError) {
  std::filesystem::create_directories(dir_ / "checkpoint.log" / "not-empty");
  ProgramRun run = runKvstore("--seconds 0.1 --data-dir " + dir_.string());
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_NE(run.output.find("kvstore: cannot remove the old checkpoint '" +
                            (dir_ / "checkpoint.log").string() + "'"),
            std::string::npos)
      << run.output;
}

TEST_F(Driver, AFailedCheckpointWriteIsReportedAndTheRunStillEnds) {
  // A file size limit makes the first flush fail with EFBIG (SIGXFSZ ignored, so the write returns
  // an error instead of killing the process): the writers waiting for flushes must be released and
  // the failure reported.
  ProgramRun run = runKvstore("--seconds 0.5 --threads 2 --keys 20000 --data-dir " + dir_.string(),
                              "trap '' XFSZ; ulimit -f 64; ");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_NE(run.output.find("kvstore: the checkpoint failed: " +
                            (dir_ / "checkpoint.log").string() + ": write failed: File too large"),
            std::string::npos)
      << run.output;
}

} // namespace
