// Implementation of the runtime integration tests' capture helpers (see trace_capture.h).
#include "trace_capture.h"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fcntl.h>
#include <poll.h>
#include <stdexcept>
#include <sys/wait.h>
#include <unistd.h>
#include <chrono>
#include <thread>

namespace shapetrace::test {
namespace {

std::string drain(int fd) {
  std::string text;
  char buffer[4096];
  ssize_t n;
  while ((n = read(fd, buffer, sizeof buffer)) > 0)
    text.append(buffer, size_t(n));
  return text;
}

} // namespace

ProgramRun runProgram(const std::string& program, const std::vector<std::string>& args,
                      const std::map<std::string, std::string>& env, int timeout_ms) {
  // Output goes to temporary files: no pipe can fill up and stall the child.
  char out_path[] = "/tmp/shapetrace-test-out-XXXXXX";
  char err_path[] = "/tmp/shapetrace-test-err-XXXXXX";
  const int out_fd = mkstemp(out_path), err_fd = mkstemp(err_path);
  unlink(out_path);
  unlink(err_path);
  const pid_t child = fork();
  if (child == 0) {
    dup2(out_fd, 1);
    dup2(err_fd, 2);
    for (const auto& [name, value] : env)
      setenv(name.c_str(), value.c_str(), 1);
    std::vector<char*> argv{const_cast<char*>(program.c_str())};
    for (const auto& arg : args)
      argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    execv(program.c_str(), argv.data());
    _exit(127);
  }
  ProgramRun run;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  int status = 0;
  for (;;) {
    const pid_t done = waitpid(child, &status, WNOHANG);
    if (done == child) {
      run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      break;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      kill(child, SIGKILL);
      waitpid(child, &status, 0);
      break;
    }
    usleep(2000);
  }
  lseek(out_fd, 0, SEEK_SET);
  lseek(err_fd, 0, SEEK_SET);
  run.out = drain(out_fd);
  run.err = drain(err_fd);
  close(out_fd);
  close(err_fd);
  return run;
}

Capture::Capture(const std::string& directory) {
  if (directory.empty()) {
    char made[] = "/tmp/shapetrace-capture-XXXXXX";
    if (!mkdtemp(made))
      throw std::runtime_error("mkdtemp failed");
    directory_ = made;
  } else {
    directory_ = directory;
    own_directory_ = false;
  }
  endpoint_ = "ipc://" + directory_ + "/collector.sock";
  channels_ = std::make_unique<collector::LocalChannels>(std::vector<std::string>{endpoint_}, 4096);
  // As a collector does, the channels are served all the time, whether or not the test is
  // waiting for items: a process connecting is answered at once.
  server_ = std::thread([this] { serve(); });
}

Capture::~Capture() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  server_.join();
  channels_.reset(); // unlinks the socket
  if (own_directory_)
    rmdir(directory_.c_str());
}

void Capture::serve() {
  for (;;) {
    {
      std::lock_guard lock(mutex_);
      if (stopping_)
        return;
    }
    std::vector<wire::StreamItem> items;
    std::vector<uint32_t> vanished;
    channels_->service(
        [&](std::span<const std::byte> message, bool oversized, uint32_t) {
          if (oversized)
            throw std::runtime_error("the runtime sent an oversized message");
          items.push_back(wire::decodeItem(message));
        },
        [&](uint32_t pid, std::optional<int>, const collector::LocalChannels::RingsFinished&) {
          vanished.push_back(pid);
        },
        100000);
    if (items.empty() && vanished.empty()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      continue;
    }
    std::lock_guard lock(mutex_);
    for (auto& item : items)
      pending_.push_back(std::move(item));
    vanished_.insert(vanished_.end(), vanished.begin(), vanished.end());
    arrived_.notify_all();
  }
}

std::vector<uint32_t> Capture::vanished() const {
  std::lock_guard lock(mutex_);
  return vanished_;
}

std::vector<wire::StreamItem> Capture::receive(int process_ends, int timeout_ms) {
  int ends = 0;
  return receiveUntil(
      [&](const std::vector<wire::StreamItem>& items) {
        ends += items.back().kind() == wire::ItemKind::ProcessEnd ? 1 : 0;
        return ends >= process_ends;
      },
      timeout_ms);
}

std::vector<wire::StreamItem>
Capture::receiveUntil(const std::function<bool(const std::vector<wire::StreamItem>&)>& done,
                      int timeout_ms) {
  std::vector<wire::StreamItem> items;
  std::unique_lock lock(mutex_);
  for (;;) {
    if (pending_.empty() &&
        !arrived_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                           [&] { return !pending_.empty(); }))
      break; // nothing for timeout_ms
    items.push_back(std::move(pending_.front()));
    pending_.pop_front();
    if (done(items))
      break;
  }
  return items;
}

std::vector<wire::StreamItem> itemsOfProcess(const std::vector<wire::StreamItem>& items,
                                             uint64_t process) {
  std::vector<wire::StreamItem> out;
  for (const auto& item : items)
    if (item.process == process)
      out.push_back(item);
  return out;
}

std::map<uint32_t, ThreadTrace> threadsOf(const std::vector<wire::StreamItem>& items) {
  std::map<uint32_t, ThreadTrace> threads;
  for (const auto& item : items) {
    if (auto* start = std::get_if<wire::ThreadStart>(&item.body)) {
      ThreadTrace& trace = threads[start->thread];
      if (trace.started)
        trace.problems.push_back("second ThreadStart");
      trace.started = true;
    } else if (auto* batch = std::get_if<wire::EventBatch>(&item.body)) {
      ThreadTrace& trace = threads[batch->thread];
      if (!trace.started || trace.ended)
        trace.problems.push_back("batch outside ThreadStart..ThreadEnd");
      if (batch->sequence != trace.batches)
        trace.problems.push_back("batch " + std::to_string(batch->sequence) + " where " +
                                 std::to_string(trace.batches) + " was due");
      ++trace.batches;
      trace.events.insert(trace.events.end(), batch->events.begin(), batch->events.end());
    } else if (auto* gap = std::get_if<wire::Gap>(&item.body)) {
      ThreadTrace& trace = threads[gap->thread];
      const uint64_t expected_after = trace.batches ? trace.batches - 1 : wire::kNoSequence;
      if (gap->after_sequence != expected_after)
        trace.problems.push_back("gap after " + std::to_string(gap->after_sequence));
      trace.dropped += gap->dropped;
    } else if (auto* end = std::get_if<wire::ThreadEnd>(&item.body)) {
      ThreadTrace& trace = threads[end->thread];
      trace.ended = true;
      trace.end = *end;
    }
  }
  return threads;
}

} // namespace shapetrace::test
