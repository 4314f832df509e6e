// The kvstore program end to end: it runs for a second and reports sane figures, writes a
// checkpoint that reads back, and rejects bad flags with a clear error and exit code 2.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <regex>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

#include "checkpoint.h"

namespace {

struct ProgramRun {
  int exit_code = -1;
  std::string output; // stdout and stderr
};

ProgramRun runKvstore(const std::string& arguments) {
  std::string command = std::string(KVSTORE_BINARY) + " " + arguments + " 2>&1";
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
                       "--flush-ms 200 --data-dir " + dir_.string());
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("kvstore: 2 workers, 20000 keys, seed 3"), std::string::npos)
      << run.output;
  std::uint64_t requests = number(run.output, R"(requests: (\d+) \()");
  EXPECT_GT(requests, 1000u) << run.output;
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

TEST_F(Driver, HelpListsTheOptions) {
  ProgramRun run = runKvstore("--help");
  EXPECT_EQ(run.exit_code, 0);
  for (const char* option : {"--seconds", "--threads", "--keys", "--seed", "--data-dir"})
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
           Case{"--zipf 1.5", "--zipf"},
           Case{"--frobnicate", "The following argument was not expected: --frobnicate"},
           Case{"--seed", "--seed: 1 required UINT missing"},
       }) {
    ProgramRun run = runKvstore(c.arguments);
    EXPECT_EQ(run.exit_code, 2) << c.arguments << "\n" << run.output;
    EXPECT_NE(run.output.find(std::string("kvstore: ") + c.error), std::string::npos)
        << c.arguments << "\n" << run.output;
    EXPECT_NE(run.output.find("Run 'kvstore --help'"), std::string::npos) << run.output;
  }
}

TEST_F(Driver, AnUnusableDataDirectoryIsAnError) {
  std::filesystem::create_directories(dir_);
  std::filesystem::path file = dir_ / "a-file";
  { std::FILE* f = std::fopen(file.c_str(), "w"); std::fclose(f); }
  ProgramRun run = runKvstore("--seconds 0.1 --data-dir " + file.string());
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_NE(run.output.find("kvstore: cannot create the data directory '" + file.string() +
                            "': Not a directory"),
            std::string::npos)
      << run.output;
}

} // namespace
