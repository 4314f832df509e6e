// shapetrace-test-dump: runs a program built with shapetrace-cc/c++, receives what its runtime
// sends, and prints each thread's events in the form the end-to-end tests check with FileCheck.
//
// It listens as the collector does (its real side of the local channel) on a private ipc://
// endpoint, starts the program with
// SHAPETRACE_ENDPOINT pointing there (and SHAPETRACE_BLOCKING=1, so that no event is dropped),
// decodes every message with wire::decodeItem, and resolves function ids through the module tables
// the program registered. Output, one block per thread, the main thread first, then by name:
//
//   exit status 0
//   thread main
//     enter main
//       enter fib(int)
//       exit fib(int)
//     exit main
//   thread worker-1
//   ...
//   balanced: yes
//
// Indentation follows the call depth the events imply. --balance prints only the per-thread
// balance summary (every enter matched by an exit or unwind exit) and fails if a thread is not
// balanced; both modes fail when events were dropped, a batch is missing or out of order, or the
// process end never arrived.
#include "local_channels.h"
#include "wire/codec.h"
#include "wire/items.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>
#include <thread>

namespace {

using namespace shapetrace;
using Clock = std::chrono::steady_clock;

constexpr uint32_t kUnregisteredBase = 0x80000000u;

struct ThreadTrace {
  uint32_t tid = 0;
  std::string name;
  std::vector<Event> events;
  uint64_t gaps = 0;
  uint64_t next_sequence = 0;
  std::vector<std::string> problems; // batches out of order or missing
};

struct Trace {
  std::optional<wire::ProcessStart> start;
  std::optional<wire::ProcessEnd> end;
  std::map<uint32_t, std::string> names; // global function id -> demangled name
  std::map<uint32_t, ThreadTrace> threads;
  uint64_t messages = 0;
};

void record(Trace& trace, wire::StreamItem item) {
  ++trace.messages;
  std::visit(
      [&](auto& body) {
        using T = std::decay_t<decltype(body)>;
        if constexpr (std::is_same_v<T, wire::ProcessStart>) {
          trace.start = body;
        } else if constexpr (std::is_same_v<T, wire::ProcessEnd>) {
          trace.end = body;
        } else if constexpr (std::is_same_v<T, wire::ModuleTable>) {
          for (const wire::FunctionInfo& function : body.functions)
            trace.names[function.id] = function.demangled_name;
        } else if constexpr (std::is_same_v<T, wire::ThreadStart> ||
                             std::is_same_v<T, wire::ThreadName>) {
          ThreadTrace& thread = trace.threads[body.thread];
          thread.tid = body.thread;
          if (!body.name.empty())
            thread.name = body.name;
        } else if constexpr (std::is_same_v<T, wire::EventBatch>) {
          ThreadTrace& thread = trace.threads[body.thread];
          thread.tid = body.thread;
          if (body.sequence != thread.next_sequence)
            thread.problems.push_back("batch " + std::to_string(body.sequence) + " where " +
                                      std::to_string(thread.next_sequence) + " was due");
          thread.next_sequence = body.sequence + 1;
          thread.events.insert(thread.events.end(), body.events.begin(), body.events.end());
        } else if constexpr (std::is_same_v<T, wire::Gap>) {
          trace.threads[body.thread].gaps += body.dropped;
        }
      },
      item.body);
}

std::string functionName(const Trace& trace, uint32_t id) {
  if (auto it = trace.names.find(id); it != trace.names.end())
    return it->second;
  if (id >= kUnregisteredBase)
    return "<unregistered module, local id " + std::to_string(id - kUnregisteredBase) + ">";
  return "<unknown id " + std::to_string(id) + ">";
}

// Runs the command with the runtime pointed at `endpoint`; returns its pid.
pid_t launch(const std::vector<std::string>& command, const std::string& endpoint) {
  const pid_t pid = fork();
  if (pid != 0)
    return pid;
  setenv("SHAPETRACE_ENDPOINT", endpoint.c_str(), 1);
  setenv("SHAPETRACE_BLOCKING", "1", 0);
  std::vector<char*> argv;
  for (const std::string& arg : command)
    argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  execvp(argv[0], argv.data());
  std::fprintf(stderr, "shapetrace-test-dump: cannot run %s: %s\n", argv[0], std::strerror(errno));
  _exit(127);
}

// Receives until the process has exited and its ProcessEnd arrived, or until nothing arrived for
// `idle` after the exit (a runtime that could not send its end).
int receive(collector::LocalChannels& channels, pid_t pid, Trace& trace,
            std::chrono::milliseconds idle) {
  int status = -1;
  bool exited = false;
  auto last_message = Clock::now();
  while (true) {
    const size_t read = channels.service(
        [&](std::span<const std::byte> message, bool oversized, uint32_t) {
          try {
            if (oversized)
              throw std::runtime_error("a message longer than the format allows");
            record(trace, wire::decodeItem(message));
          } catch (const std::exception& error) {
            std::fprintf(stderr, "shapetrace-test-dump: undecodable message: %s\n", error.what());
            std::exit(3);
          }
        },
        [](uint32_t, std::optional<int>, const collector::LocalChannels::RingsFinished&) {}, 100000);
    if (read > 0) {
      last_message = Clock::now();
      continue;
    }
    if (!exited && waitpid(pid, &status, WNOHANG) == pid) {
      exited = true;
      last_message = Clock::now();
    }
    if (exited && (trace.end || Clock::now() - last_message > idle))
      return status;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

std::string describeStatus(int status) {
  if (WIFEXITED(status))
    return "exit status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return "killed by signal " + std::to_string(WTERMSIG(status));
  return "status " + std::to_string(status);
}

std::vector<const ThreadTrace*> orderedThreads(const Trace& trace) {
  const uint32_t main_tid = trace.start ? trace.start->pid : 0;
  std::vector<const ThreadTrace*> threads;
  for (const auto& [tid, thread] : trace.threads)
    if (!thread.events.empty())
      threads.push_back(&thread);
  std::sort(threads.begin(), threads.end(), [&](const ThreadTrace* a, const ThreadTrace* b) {
    return std::tuple(a->tid != main_tid, a->name, a->tid) <
           std::tuple(b->tid != main_tid, b->name, b->tid);
  });
  return threads;
}

// Replays a thread's events on a stack; returns the functions still open at the end and counts
// exits that matched no open call.
struct Balance {
  uint64_t enters = 0, exits = 0, unwind_exits = 0, abandoned_exits = 0, mismatched = 0;
  std::vector<uint32_t> open;
};

Balance replay(const Trace& trace, const ThreadTrace& thread, std::ostream* out) {
  Balance balance;
  for (const Event& event : thread.events) {
    const std::string name = functionName(trace, event.function_id);
    if (event.kind == EventKind::Enter) {
      ++balance.enters;
      if (out)
        *out << std::string(2 * (balance.open.size() + 1), ' ') << "enter " << name << '\n';
      balance.open.push_back(event.function_id);
      continue;
    }
    const char* verb = "exit ";
    if (event.kind == EventKind::UnwindExit) {
      ++balance.unwind_exits;
      verb = "unwind ";
    } else if (event.kind == EventKind::AbandonedExit) {
      ++balance.abandoned_exits;
      verb = "abandon ";
    } else {
      ++balance.exits;
    }
    const bool matches = !balance.open.empty() && balance.open.back() == event.function_id;
    if (matches)
      balance.open.pop_back();
    else
      ++balance.mismatched;
    if (out)
      *out << std::string(2 * (balance.open.size() + 1), ' ') << verb << name
           << (matches ? "" : "  [does not match the open call]") << '\n';
  }
  return balance;
}

std::string threadLabel(const Trace& trace, const ThreadTrace& thread) {
  if (trace.start && thread.tid == trace.start->pid)
    return "main";
  return thread.name.empty() ? "tid " + std::to_string(thread.tid) : thread.name;
}

// The stream's name of a clock source (schema/stream.capnp).
const char* clockSourceName(wire::ClockSource source) {
  switch (source) {
  case wire::ClockSource::Tsc: return "tsc";
  case wire::ClockSource::GenericTimer: return "genericTimer";
  case wire::ClockSource::Monotonic: break;
  }
  return "monotonic";
}

} // namespace

int main(int argc, char** argv) {
  CLI::App app{"Runs a program built with shapetrace-cc/c++ and prints its threads' events"};
  std::string output_path;
  std::string clock_path;
  bool balance_only = false;
  unsigned idle_ms = 5000;
  std::vector<std::string> command;
  app.add_option("-o,--output", output_path, "Write the events here instead of stdout");
  app.add_option("--clock-to", clock_path,
                 "Write the clock source the process's start names (tsc, genericTimer, monotonic) "
                 "to this file");
  app.add_flag("--balance", balance_only,
               "Print only each thread's balance; fail if any thread is unbalanced");
  app.add_option("--idle-ms", idle_ms,
                 "After the program exits, wait this long for its last messages")
      ->capture_default_str();
  app.add_option("command", command, "The program and its arguments (after --)")->required();
  CLI11_PARSE(app, argc, argv);

  char dir_template[] = "/tmp/shapetrace-dump-XXXXXX";
  if (!mkdtemp(dir_template)) {
    std::perror("shapetrace-test-dump: mkdtemp");
    return 2;
  }
  const std::string socket_path = std::string(dir_template) + "/sock";
  Trace trace;
  int status;
  {
    collector::LocalChannels channels({"ipc://" + socket_path}, 4096);
    status = receive(channels, launch(command, "ipc://" + socket_path), trace,
                     std::chrono::milliseconds(idle_ms));
  } // the socket file goes with the channels
  rmdir(dir_template);

  std::ofstream file;
  if (!output_path.empty()) {
    file.open(output_path);
    if (!file) {
      std::fprintf(stderr, "shapetrace-test-dump: cannot write %s\n", output_path.c_str());
      return 2;
    }
  }
  if (!clock_path.empty()) {
    std::ofstream clock_file(clock_path);
    clock_file << (trace.start ? clockSourceName(trace.start->clock.source) : "no process start")
               << '\n';
    if (!clock_file) {
      std::fprintf(stderr, "shapetrace-test-dump: cannot write %s\n", clock_path.c_str());
      return 2;
    }
  }
  std::ostream& out = output_path.empty() ? std::cout : file;
  out << describeStatus(status) << '\n';
  bool ok = true;
  for (const ThreadTrace* thread : orderedThreads(trace)) {
    const std::string label = threadLabel(trace, *thread);
    if (!balance_only)
      out << "thread " << label << '\n';
    const Balance balance = replay(trace, *thread, balance_only ? nullptr : &out);
    const bool balanced = balance.open.empty() && balance.mismatched == 0;
    if (balance_only) {
      out << "thread " << label << ": " << balance.enters << " enters, " << balance.exits
          << " exits, " << balance.unwind_exits << " unwind exits, " << balance.abandoned_exits
          << " abandoned exits"
          << (balanced ? ", balanced" : ", NOT balanced") << '\n';
      ok = ok && balanced;
    } else if (!balance.open.empty()) {
      out << "  (" << balance.open.size() << " calls still open)\n";
    }
    for (const std::string& problem : thread->problems) {
      out << "thread " << label << ": " << problem << '\n';
      ok = false;
    }
    if (thread->gaps) {
      out << "thread " << label << ": " << thread->gaps << " events lost\n";
      ok = false;
    }
  }
  if (!trace.end) {
    out << "no process end received\n";
    ok = false;
  } else if (trace.end->events_dropped) {
    out << "process end: " << trace.end->events_dropped << " events dropped\n";
    ok = false;
  }
  return ok ? 0 : 1;
}
