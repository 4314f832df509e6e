// `shapetrace record -o DIR -- PROGRAM ARGS...`: the one-command use. Runs an embedded collector on
// a private ipc socket, starts PROGRAM with SHAPETRACE_ENDPOINT pointing at it, records until the
// program and every process it started have exited, prints a summary and exits with the
// program's exit code (128 + N when signal N killed it).
//
// It is the parent (or, for grandchildren, the subreaper) of every process it records, so it
// knows how each one ended: the recording gets an ExitStatus item per traced process (and for
// the program itself), and a process whose runtime never announced its end (killed, crashed) is
// reported with how it died. When no traced process connected at all, it says so and fails: the
// program was most likely not built with shapetrace-cc/c++.
//
// A recording made this way is meant to be complete, so the program runs in the runtime's blocking
// mode (SHAPETRACE_BLOCKING=1): when its rings fill faster than the pipeline drains them (fib at
// ~28 M events/s on one thread outruns drain + channel + collector on the one other core of a 2-core
// machine), a thread waits for room instead of dropping; it never waits longer than
// SHAPETRACE_EXIT_TIMEOUT_MS without progress. `--lossy`, or SHAPETRACE_BLOCKING set by the user,
// keeps the runtime's own default (drop and count, never wait), as for `collect` and `live`.
#include "cli/command.h"
#include "cli/signals.h"
#include "cli/summary.h"
#include "collector.h"
#include "retention_options.h"

#include <cerrno>
#include <cstdio>
#include <ctime>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace shapetrace::cli {
namespace {

struct RecordOptions {
  std::string out;
  std::string publish;
  size_t publish_queue_mb = fanout::kDefaultMaxQueuedBytes >> 20;
  bool lossy = false;
  bool readable = false;
  bool redact_args = false;
  RetentionFlags retention;
  std::vector<std::string> program;
};

// Starts the program; exits 127 in the child when it cannot be executed.
pid_t startProgram(const std::vector<std::string>& program, const std::string& endpoint,
                   bool lossy, bool redact_args) {
  std::vector<char*> argv;
  for (const std::string& arg : program)
    argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0)
    throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::setenv("SHAPETRACE_ENDPOINT", endpoint.c_str(), 1);
    // Recorded from the first call, not only once the connection is seen (attach on demand):
    ::setenv("SHAPETRACE_ENABLED", "1", /*overwrite=*/0); // the user's own setting wins
    if (!lossy)
      ::setenv("SHAPETRACE_BLOCKING", "1", /*overwrite=*/0); // the user's own setting wins
    if (redact_args) ::setenv("SHAPETRACE_REDACT_ARGS", "1", 1);
    restoreInheritedStopActions();
    ::execvp(argv[0], argv.data());
    std::fprintf(stderr, "shapetrace record: error: cannot run '%s': %s\n", argv[0],
                 std::strerror(errno));
    std::_Exit(127);
  }
  return pid;
}

int exitCodeOf(int status) {
  if (WIFEXITED(status))
    return WEXITSTATUS(status);
  if (WIFSIGNALED(status))
    return 128 + WTERMSIG(status);
  return 1;
}

// True when every process that announced itself has also announced its end.
bool allSendersEnded(const collector::CollectorStats& stats) {
  for (const auto& [process, c] : stats.senders)
    if (!c.ended)
      return false;
  return true;
}

uint64_t monotonicNowNs() {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return uint64_t(now.tv_sec) * 1000000000u + uint64_t(now.tv_nsec);
}

struct Reaped {
  pid_t pid;
  int status;
  uint64_t at_ns;
};

// The warnings that make a recording's gaps impossible to miss.
void warnAboutEnds(const collector::CollectorStats& stats, const std::string& program) {
  if (stats.senders.empty()) {
    std::fprintf(stderr,
                 "shapetrace record: warning: no traced process connected, nothing was recorded: "
                 "was %s built with shapetrace-cc or shapetrace-c++ (or is SHAPETRACE_ENABLED=0 "
                 "set)?\n",
                 program.c_str());
    return;
  }
  for (const auto& [process, c] : stats.senders)
    if (!c.ended)
      std::fprintf(stderr,
                   "shapetrace record: warning: process %016llx (pid %u) ended without a process "
                   "end%s%s: the events it had not sent yet are lost, how many is unknown\n",
                   (unsigned long long)process, c.pid, c.exit_status.empty() ? "" : ", ",
                   c.exit_status.c_str());
}

int runRecord(const RecordOptions& o) {
  if (o.program.empty())
    throw std::runtime_error("no program given: shapetrace record -o DIR -- PROGRAM ARGS...");
  char socket_dir[] = "/tmp/shapetrace-record-XXXXXX"; // mkdtemp makes it 0700
  if (!::mkdtemp(socket_dir))
    throw std::runtime_error(std::string("cannot create a socket directory: ") +
                             std::strerror(errno));
  struct RemoveDir {
    std::string path;
    ~RemoveDir() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  } remove_socket_dir{socket_dir};

  collector::CollectorOptions options;
  options.listen = {std::string("ipc://") + socket_dir + "/collector.sock"};
  options.out_dir = o.out;
  options.publish = o.publish;
  options.publish_max_queued_bytes = o.publish_queue_mb << 20;
  options.recording.readable_by_others = o.readable;
  applyRetention(o.retention, options.recording); // checked before the program started
  zmq::context_t context(1);
  collector::Collector collector(options, context);

  // Grandchildren whose parent exits are re-parented to us, so we can wait for all of them.
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  installStopHandlers();
  const pid_t program = startProgram(o.program, options.listen.front(), o.lossy, o.redact_args);
  int program_status = 0;
  bool forwarded = false;
  std::vector<Reaped> reaped_processes;
  for (;;) {
    collector.poll(std::chrono::milliseconds(20));
    if (const int signal = stop_signal.load(); signal != 0 && !forwarded) {
      // The program decides how to stop; we keep recording. A Ctrl-C from the terminal reached
      // it already.
      if (stop_signal_from_process.load())
        ::kill(program, signal);
      forwarded = true;
    }
    int status = 0;
    pid_t reaped;
    while ((reaped = ::waitpid(-1, &status, WNOHANG)) > 0) {
      if (reaped == program)
        program_status = status;
      reaped_processes.push_back({reaped, status, monotonicNowNs()});
    }
    if (reaped < 0 && errno == ECHILD)
      break;
  }
  // Every process is gone; what they sent is already queued on our socket. Wait until each one's
  // ProcessEnd arrived, or until nothing arrived for a while (a process killed by a signal sends
  // no ProcessEnd).
  auto quiet_since = std::chrono::steady_clock::now();
  while (!allSendersEnded(collector.stats()) &&
         std::chrono::steady_clock::now() - quiet_since < std::chrono::milliseconds(500)) {
    if (collector.poll(std::chrono::milliseconds(20)) > 0)
      quiet_since = std::chrono::steady_clock::now();
  }
  // How each traced process (and the program, traced or not) ended, as waitpid said.
  for (const Reaped& r : reaped_processes)
    if (r.pid == program || collector.latestImage(uint32_t(r.pid)) != 0)
      collector.recordExitStatus(uint32_t(r.pid), r.status, r.at_ns);
  const bool ok = collector.finish();
  const collector::CollectorStats stats = collector.stats();
  std::fprintf(stderr, "shapetrace record: %s exited with %s %d\n", o.program.front().c_str(),
               WIFSIGNALED(program_status) ? "signal" : "status",
               WIFSIGNALED(program_status) ? WTERMSIG(program_status)
                                           : WEXITSTATUS(program_status));
  printCollectorSummary(stderr, stats, o.out);
  warnAboutEnds(stats, o.program.front());
  if (!ok)
    std::fprintf(stderr, "shapetrace record: the recording is incomplete (see above)\n");
  const int code = exitCodeOf(program_status);
  // Nothing recorded is a failure, even when the program succeeded.
  return stats.senders.empty() && code == 0 ? 1 : code;
}

Runner setupRecord(CLI::App& command) {
  auto o = std::make_shared<RecordOptions>();
  command.add_option("--out,-o", o->out, "recording directory (new or empty)")->required();
  command.add_option("--publish,-p", o->publish,
                     "also fan out live on this ZeroMQ PUB endpoint");
  command.add_option("--publish-queue-mb", o->publish_queue_mb,
                     "MiB of items the live subscribers' queues may hold, together; past it items "
                     "are not published (counted, and as missed by the subscribers)")
      ->capture_default_str()
      ->check(CLI::Range(size_t{1}, size_t{1} << 20));
  command.add_flag("--readable", o->readable,
                   "let other local users read the recording (directory 0755, files 0644; "
                   "default: 0700 and 0600)");
  command.add_flag("--lossy", o->lossy,
                   "let the program drop events (counted) instead of waiting when the pipeline "
                   "falls behind; by default it waits, so the recording is complete");
  command.add_flag("--redact-args", o->redact_args,
                   "keep the program's arguments out of the recording (SHAPETRACE_REDACT_ARGS=1 "
                   "for it and its children): only argv[0] is recorded");
  command.add_option("program", o->program, "the program and its arguments (after --)")
      ->required()
      ->expected(-1);
  command.footer("Example: shapetrace record -o trace.rec -- ./server --port 8080\n"
                 "The program runs with SHAPETRACE_ENDPOINT set to a private socket,\n"
                 "SHAPETRACE_ENABLED=1 unless given (recorded from its first call) and, unless\n"
                 "--lossy or SHAPETRACE_BLOCKING is given, SHAPETRACE_BLOCKING=1; its exit code "
                 "is shapetrace's.");
  addRetentionOptions(command, o->retention);
  return [o] {
    recording::RecordingOptions checked;
    // Only a bad flag is a usage error: the exit code is otherwise the program's.
    const int usage = usageErrorsExit2("record", [&] {
      applyRetention(o->retention, checked);
      return 0;
    })();
    return usage != 0 ? usage : runRecord(*o);
  };
}

const Registration record{"record", "Run a program and record its trace (embedded collector)",
                          setupRecord};

} // namespace
} // namespace shapetrace::cli
