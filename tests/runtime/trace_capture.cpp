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
#include <zmq.h>

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

Capture::Capture(const std::string& curve_secret_key, const std::string& directory) {
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
  context_ = zmq_ctx_new();
  socket_ = zmq_socket(context_, ZMQ_PULL);
  const int hwm = 0; // never push back on the runtime in tests unless a test wants it
  zmq_setsockopt(socket_, ZMQ_RCVHWM, &hwm, sizeof hwm);
  if (!curve_secret_key.empty()) {
    const int server = 1;
    zmq_setsockopt(socket_, ZMQ_CURVE_SERVER, &server, sizeof server);
    zmq_setsockopt(socket_, ZMQ_CURVE_SECRETKEY, curve_secret_key.c_str(), 41);
  }
  if (zmq_bind(socket_, endpoint_.c_str()) != 0)
    throw std::runtime_error("cannot bind " + endpoint_);
}

Capture::~Capture() {
  const int linger = 0;
  zmq_setsockopt(socket_, ZMQ_LINGER, &linger, sizeof linger);
  zmq_close(socket_);
  zmq_ctx_term(context_);
  unlink((directory_ + "/collector.sock").c_str());
  if (own_directory_)
    rmdir(directory_.c_str());
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
  for (;;) {
    zmq_pollitem_t poll_item{socket_, 0, ZMQ_POLLIN, 0};
    if (zmq_poll(&poll_item, 1, timeout_ms) <= 0)
      break;
    zmq_msg_t message;
    zmq_msg_init(&message);
    if (zmq_msg_recv(&message, socket_, 0) < 0) {
      zmq_msg_close(&message);
      break;
    }
    const auto* data = static_cast<const std::byte*>(zmq_msg_data(&message));
    items.push_back(wire::decodeItem({data, zmq_msg_size(&message)}));
    zmq_msg_close(&message);
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
