// Test support for the runtime's integration tests: runs a traced program as a child process with
// a chosen environment, while the collector's real side of the local channel
// (collector/local_channels.h) receives and decodes everything the runtime sends.
#pragma once

#include "local_channels.h"
#include "wire/codec.h"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <memory>

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace shapetrace::test {

struct ProgramRun {
  int exit_code = -1;     // -1 when the program did not finish in time (a hang)
  std::string out;        // stdout
  std::string err;        // stderr
};

// Runs `program` with `args` and the current environment plus `env`; gives up (kills it) after
// `timeout_ms`, so a hang is reported as a failure, never as a stuck test.
ProgramRun runProgram(const std::string& program, const std::vector<std::string>& args,
                      const std::map<std::string, std::string>& env, int timeout_ms = 60000);

// The collector's control socket at a fresh ipc:// endpoint in a private temporary directory (or
// in `directory`, which must exist, as DIR/collector.sock), and the channels of the processes
// that connect to it.
class Capture {
public:
  explicit Capture(const std::string& directory = "");
  ~Capture();
  Capture(const Capture&) = delete;
  Capture& operator=(const Capture&) = delete;

  const std::string& endpoint() const { return endpoint_; }
  // Receives until `process_ends` ProcessEnd items arrived (or `timeout_ms` passed without any
  // message). Every message must decode; returns the items in arrival order.
  std::vector<wire::StreamItem> receive(int process_ends, int timeout_ms = 10000);
  // Receives until `done` (asked after each item, with every item so far) says so, or
  // `timeout_ms` passed without any message.
  std::vector<wire::StreamItem>
  receiveUntil(const std::function<bool(const std::vector<wire::StreamItem>&)>& done,
               int timeout_ms = 10000);

  // Pids of processes whose channel hung up without their end (died, or crashed).
  std::vector<uint32_t> vanished() const;

private:
  void serve();

  std::unique_ptr<collector::LocalChannels> channels_;
  std::thread server_;
  mutable std::mutex mutex_;
  std::condition_variable arrived_;
  bool stopping_ = false;
  std::deque<wire::StreamItem> pending_; // received, not yet taken by receive()
  std::vector<uint32_t> vanished_;
  std::string directory_;
  bool own_directory_ = true;
  std::string endpoint_;
};

// The program's process key: the one process in `items`, or the one whose ProcessStart has the pid.
std::vector<wire::StreamItem> itemsOfProcess(const std::vector<wire::StreamItem>& items,
                                             uint64_t process);

// Per-thread view of a process's stream: its events in order, checked for batch sequence order.
struct ThreadTrace {
  std::vector<Event> events;
  uint64_t dropped = 0;             // sum of Gap.dropped
  uint64_t batches = 0;
  bool started = false, ended = false;
  wire::ThreadEnd end;
  std::vector<std::string> problems; // sequence errors, items after ThreadEnd, ...
};
std::map<uint32_t, ThreadTrace> threadsOf(const std::vector<wire::StreamItem>& items);

template <class T>
std::vector<T> itemsOfType(const std::vector<wire::StreamItem>& items) {
  std::vector<T> out;
  for (const auto& item : items)
    if (auto* value = std::get_if<T>(&item.body))
      out.push_back(*value);
  return out;
}

} // namespace shapetrace::test
