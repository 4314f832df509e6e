// A test's own directory and commands run in it, shared by the tests that run the `shapetrace`
// binary (tests/analyzer/*_command_test.cpp).
#pragma once

#include "support/files.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace shapetrace::testing {

struct CommandResult {
  int exit_code = -1;
  std::string out, err;
};

// A fixture with a fresh directory per test (named after the test), removed after it, and a way
// to run a shell command line with its output captured there.
class CommandTest : public ::testing::Test {
protected:
  explicit CommandTest(std::string prefix) : prefix_(std::move(prefix)) {}
  void SetUp() override {
    dir = std::filesystem::temp_directory_path() /
          (prefix_ + std::to_string(::getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
  }
  void TearDown() override { std::filesystem::remove_all(dir); }

  CommandResult runCommand(const std::string& command_line) const {
    const std::string command = command_line + " >" + (dir / "stdout").string() + " 2>" +
                                (dir / "stderr").string();
    const int status = std::system(command.c_str());
    return CommandResult{WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(dir / "stdout"),
                         slurp(dir / "stderr")};
  }

  std::filesystem::path dir;

private:
  std::string prefix_;
};

} // namespace shapetrace::testing
