// Test helpers: real child processes with their output captured, and temporary directories.
#pragma once

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>
#include <utility>
#include <vector>

namespace shapetrace::testing {

class TempDir {
public:
  TempDir() {
    char pattern[] = "/tmp/shapetrace-collector-test-XXXXXX";
    if (!::mkdtemp(pattern))
      throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string sub(const std::string& name) const { return path_ + "/" + name; }

private:
  std::string path_;
};

// A child process; stdout (and stderr, merged) is read through a pipe, stdin is a pipe we hold.
class Child {
public:
  Child(const std::vector<std::string>& argv,
        const std::vector<std::pair<std::string, std::string>>& env = {}) {
    int out[2], in[2];
    // CLOEXEC: other processes the test starts must not inherit them (a program that counts or
    // closes its descriptors would see more than it would run alone).
    if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(in, O_CLOEXEC) != 0)
      throw std::runtime_error("pipe failed");
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(out[1], 1);
      ::dup2(out[1], 2);
      ::dup2(in[0], 0);
      ::close(out[0]);
      ::close(out[1]);
      ::close(in[0]);
      ::close(in[1]);
      for (const auto& [name, value] : env)
        ::setenv(name.c_str(), value.c_str(), 1);
      std::vector<char*> args;
      for (const std::string& a : argv)
        args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      ::execvp(args[0], args.data());
      std::_Exit(127);
    }
    ::close(out[1]);
    ::close(in[0]);
    out_ = ::fdopen(out[0], "r");
    stdin_ = in[1];
  }
  ~Child() {
    if (pid_ > 0 && !status_) {
      ::kill(pid_, SIGKILL);
      wait();
    }
    if (out_)
      std::fclose(out_);
    if (stdin_ >= 0)
      ::close(stdin_);
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  // The next line of output (without the newline), or nullopt at end of output.
  std::optional<std::string> readLine() {
    char* line = nullptr;
    size_t capacity = 0;
    const ssize_t n = ::getline(&line, &capacity, out_);
    std::optional<std::string> result;
    if (n >= 0)
      result = std::string(line, static_cast<size_t>(n) - (n > 0 && line[n - 1] == '\n'));
    std::free(line);
    return result;
  }
  // All remaining output.
  std::string readAll() {
    std::string all;
    while (auto line = readLine())
      all += *line + "\n";
    return all;
  }
  void closeStdin() {
    if (stdin_ >= 0)
      ::close(stdin_);
    stdin_ = -1;
  }
  void signal(int signal) { ::kill(pid_, signal); }
  // Waits for the exit and returns the raw wait status.
  int wait() {
    if (!status_) {
      int status = 0;
      while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
      }
      status_ = status;
    }
    return *status_;
  }
  // Exit code, or 128 + signal.
  int exitCode() {
    const int status = wait();
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  // Whether the process has exited (reaps it).
  bool exited() {
    if (status_)
      return true;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_)
      status_ = status;
    return status_.has_value();
  }
  pid_t pid() const { return pid_; }

private:
  pid_t pid_ = -1;
  std::FILE* out_ = nullptr;
  int stdin_ = -1;
  std::optional<int> status_;
};

// Runs a command to completion; returns (exit code, output).
inline std::pair<int, std::string> run(const std::vector<std::string>& argv,
                                       const std::vector<std::pair<std::string, std::string>>&
                                           env = {}) {
  Child child(argv, env);
  child.closeStdin();
  std::string output = child.readAll();
  return {child.exitCode(), output};
}

} // namespace shapetrace::testing
