// A program traced through the same ABI the shapetrace pass emits: a module table registered from a
// constructor, and __shapetrace_enter/exit calls around "instrumented" functions. The integration
// tests run it under different configurations and check exactly what the runtime streamed.
//
//   traced_program calls N            main -> N x (work -> leaf)
//   traced_program threads T N W      T threads, W alive at a time, each thread_body -> N x (work -> leaf)
//   traced_program fork N             N calls, fork, child N calls and exits 0, parent N calls
//   traced_program signal N           N calls, raise(SIGUSR1) every 10th; the handler is instrumented
//   traced_program timer N            N calls while a 100 us interval timer's handler runs instrumented
//   traced_program annotate           names the thread, annotates, calls
//   traced_program toggle             switches recording off and on inside open calls
//   traced_program flush              prints shapetrace_flush's status
//   traced_program unregistered       calls with an id of a module that was never registered
//   traced_program dlopen LIB         loads LIB (a module with its own table) and calls into it
//   traced_program _exit N            inside work: N calls, then _exit(4) with main and work open
//   traced_program exec N ARGS...     N calls, then execv(itself, ARGS) (ARGS: another command)
//   traced_program exec-thread ARGS.. a thread calls execv(itself, ARGS) while main waits for it
//   traced_program exec-clean-env ARGS... execve(itself, ARGS) with an environment without ours
//   traced_program fexec ARGS...      fexecve of its own executable, opened
//   traced_program exec-missing N     execl of a program that does not exist, then N calls
//   traced_program exec-missing-exit  execl of a program that does not exist, then _exit(127) at
//                                     once (as a fork child whose exec failed does)
//   traced_program daemon N           inside work: daemon(); the child makes N calls and exits
//   traced_program longjmp D N        N times: setjmp inside work, D nested leaves, longjmp out
//   traced_program serve FILE         a service: a thread calls work every 100 us until FILE exists;
//                                     FILE.running is created once that thread's loop runs
//   traced_program exec-missing-serve FILE  a failed exec first, then serve FILE
//   traced_program crash-children C N [LINGER_MS]  C fork children, each N calls, then enters work and dies
//                                     there: abort() (child 0, 3, 6...), raise(SIGSEGV) (1, 4,
//                                     ...), or SIGKILL from the parent right after its last call
//                                     (2, 5, ...; it flushed after its first N/2 calls);
//                                     the parent reaps them 500 ms after the last one died (or
//                                     the LINGER_MS given as a third number: 0 reaps at once)
//                                     and prints how many died by each signal
// Prints "done <args>" and exits with status 3 (so tests can see the exit code unchanged), unless
// the command ends the process otherwise.
#include "shapetrace/abi.h"
#include "shapetrace/shapetrace.h"

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cerrno>
#include <cstring>
#include <dlfcn.h>
#include <fcntl.h>
#include <setjmp.h>
#include <string>
#include <sys/time.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

enum Function : uint32_t { kMain, kWork, kLeaf, kHandler, kThreadBody, kFunctionCount };

const __shapetrace_function kFunctions[] = {
    {"main", "main", "traced_program.cpp", 1, 0},
    {"_Z4workv", "work()", "traced_program.cpp", 2, 0},
    {"_Z4leafv", "leaf()", "traced_program.cpp", 3, 0},
    {"_Z7handleri", "handler(int)", "traced_program.cpp", 4, 0},
    {"_Z11thread_bodyv", "thread_body()", "traced_program.cpp", 5, 0},
};
uint32_t g_base = SHAPETRACE_UNREGISTERED_BASE;
// This image's recording flag (abi.h, image_enabled): the hooks here are called unconditionally,
// so only the image-flags command reads it, to see the runtime keep it.
uint8_t g_image_enabled = 0;
__shapetrace_module g_module = {SHAPETRACE_ABI_VERSION, kFunctionCount, kFunctions,
                                "traced_program.cpp", &g_base, &g_image_enabled};
__attribute__((constructor)) void registerModule() { __shapetrace_register_module(&g_module); }

void enter(Function f) { __shapetrace_enter(g_base + f); }
void leave(Function f) { __shapetrace_exit(g_base + f); }

thread_local volatile int g_sink = 0; // per thread: the threads command must not race on it
std::atomic<long> g_handler_calls{0};

__attribute__((noinline)) void leaf() {
  enter(kLeaf);
  g_sink = g_sink + 1;
  leave(kLeaf);
}
__attribute__((noinline)) void work() {
  enter(kWork);
  leaf();
  leave(kWork);
}
void calls(long n) {
  for (long i = 0; i < n; ++i)
    work();
}

void handler(int) {
  enter(kHandler);
  leaf();
  leave(kHandler);
  g_handler_calls.fetch_add(1, std::memory_order_relaxed);
}

void threadBody(long n) {
  enter(kThreadBody);
  calls(n);
  leave(kThreadBody);
}

// argv for exec-ing this program again with the arguments from `from` on.
std::vector<char*> selfArguments(int argc, char** argv, int from) {
  std::vector<char*> args{argv[0]};
  for (int i = from; i < argc; ++i)
    args.push_back(argv[i]);
  args.push_back(nullptr);
  return args;
}

jmp_buf g_jump;

// `depth` leaves entered (their exits never run), then a longjmp out of all of them.
__attribute__((noinline)) void jumpFromDepth(long depth) {
  if (depth == 0)
    longjmp(g_jump, 1);
  enter(kLeaf);
  jumpFromDepth(depth - 1);
  leave(kLeaf); // never reached
}

// A child that makes `n` calls and dies inside work() as crash-children says. The child that is
// killed has sent its first half (shapetrace_flush) and not the second: under a long
// SHAPETRACE_DRAIN_INTERVAL_US that half is still in its ring when SIGKILL comes, and only the
// collector finishing the ring can record it.
[[noreturn]] void crashingChild(long index, long n, int ready) {
  const bool killed = index % 3 == 2;
  calls(killed ? n / 2 : n);
  if (killed) {
    shapetrace_flush(10000);
    calls(n - n / 2);
  }
  enter(kWork);
  switch (index % 3) {
  case 0:
    abort();
  case 1:
    raise(SIGSEGV);
    break;
  default: {
    const char byte = 1;
    if (write(ready, &byte, 1) != 1)
      _exit(1);
    for (;;)
      pause();
  }
  }
  _exit(1); // not reached: the signal ends the process
}

void crashChildren(long count, long n, long linger_ms) {
  std::fflush(stdout);
  int ready[2];
  if (pipe(ready) != 0)
    std::exit(1);
  std::vector<pid_t> children;
  for (long i = 0; i < count; ++i) {
    const pid_t child = fork();
    if (child == 0)
      crashingChild(i, n, ready[1]);
    children.push_back(child);
    if (i % 3 == 2) { // killed once it has done its calls and idles
      char byte;
      if (read(ready[0], &byte, 1) != 1)
        std::exit(1);
      kill(child, SIGKILL);
    }
  }
  // Reaped late by default, so that a collector that is not our parent can still read how they
  // died in /proc.
  std::vector<int> died(NSIG, 0);
  for (const pid_t child : children) {
    siginfo_t info{};
    waitid(P_PID, id_t(child), &info, WEXITED | WNOWAIT);
  }
  const timespec linger{linger_ms / 1000, (linger_ms % 1000) * 1000000};
  nanosleep(&linger, nullptr);
  for (const pid_t child : children) {
    int status = 0;
    waitpid(child, &status, 0);
    if (WIFSIGNALED(status))
      ++died[WTERMSIG(status)];
  }
  std::printf("abort %d segv %d kill %d\n", died[SIGABRT], died[SIGSEGV], died[SIGKILL]);
}

int run(int argc, char** argv) {
  const std::string command = argc > 1 ? argv[1] : "";
  auto arg = [&](int i) { return argc > i ? std::atol(argv[i]) : 0; };
  if (command == "calls") {
    calls(arg(2));
  } else if (command == "crash-children") {
    crashChildren(arg(2), arg(3), argc > 4 ? arg(4) : 500);
  } else if ((command == "serve" || command == "exec-missing-serve") && argc > 2) {
    if (command == "exec-missing-serve")
      execl("/nonexistent/program", "program", (char*)nullptr);
    std::atomic<bool> stop{false};
    const std::string running = std::string(argv[2]) + ".running";
    std::thread worker([&] {
      enter(kThreadBody);
      for (bool announced = false; !stop.load(); announced = true) {
        work();
        // Tests attach once the loop runs, so that the thread's start is behind them whatever
        // the machine's load.
        if (!announced)
          close(open(running.c_str(), O_CREAT | O_WRONLY, 0600));
        const timespec pause{0, 100000};
        nanosleep(&pause, nullptr);
      }
      leave(kThreadBody);
    });
    while (access(argv[2], F_OK) != 0) {
      const timespec pause{0, 10000000};
      nanosleep(&pause, nullptr);
    }
    stop.store(true);
    worker.join();
  } else if (command == "threads") {
    const long threads = arg(2), n = arg(3), wave = arg(4) > 0 ? arg(4) : 1;
    for (long started = 0; started < threads;) {
      std::vector<std::thread> live;
      for (long i = 0; i < wave && started < threads; ++i, ++started)
        live.emplace_back(threadBody, n);
      for (auto& thread : live)
        thread.join();
    }
  } else if (command == "fork") {
    calls(arg(2));
    std::fflush(stdout);
    const pid_t child = fork();
    if (child == 0) {
      calls(arg(2));
      std::exit(0); // exit, not _exit: the child's stream ends with ProcessEnd
    }
    calls(arg(2));
    int status = 0;
    waitpid(child, &status, 0);
    std::printf("child %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  } else if (command == "signal") {
    std::signal(SIGUSR1, handler);
    for (long i = 0; i < arg(2); ++i) {
      work();
      if (i % 10 == 0)
        std::raise(SIGUSR1);
    }
  } else if (command == "timer") {
    std::signal(SIGALRM, handler);
    const itimerval every{{0, 100}, {0, 100}};
    setitimer(ITIMER_REAL, &every, nullptr);
    calls(arg(2));
    const itimerval off{};
    setitimer(ITIMER_REAL, &off, nullptr);
    std::printf("handler calls %ld\n", g_handler_calls.load());
  } else if (command == "annotate") {
    std::printf("name %d\n", shapetrace_set_thread_name("main-loop"));
    for (int i = 0; i < 3; ++i) {
      std::printf("annotate %d\n", shapetrace_annotate("request.size", 100 + i));
      work();
    }
    std::printf("invalid %d %d\n", shapetrace_annotate("", 1), shapetrace_set_thread_name(nullptr));
  } else if (command == "toggle") {
    enter(kWork);         // recorded
    shapetrace_set_enabled(0);
    std::printf("enabled %d\n", shapetrace_is_enabled());
    leaf();               // entered while off inside a recorded call: skipped, exit skipped too
    leave(kWork);         // exit of a recorded call: recorded while off
    work();               // outside any recorded call: nothing
    enter(kWork);         // not recorded (off)
    shapetrace_set_enabled(1);
    leaf();               // recorded
    leave(kWork);         // its enter was not recorded: skipped
    work();               // recorded
  } else if (command == "flush") {
    calls(100);
    std::printf("flush %d\n", shapetrace_flush(2000));
  } else if (command == "unregistered") {
    __shapetrace_enter(SHAPETRACE_UNREGISTERED_BASE + 7);
    __shapetrace_exit(SHAPETRACE_UNREGISTERED_BASE + 7);
  } else if (command == "_exit") {
    enter(kWork);
    calls(arg(2));
    std::fflush(stdout);
    _exit(4);
  } else if (command == "exec" || command == "exec-clean-env" || command == "fexec") {
    calls(arg(2));
    std::fflush(stdout);
    std::vector<char*> args = selfArguments(argc, argv, 3);
    // A minimal environment: nothing of shapetrace's, only a sanitizer's options if it runs under
    // one (without them the sanitized build's new image would report what they suppress).
    std::vector<char*> minimal;
    for (char** entry = environ; *entry; ++entry)
      if (std::strncmp(*entry, "TSAN_OPTIONS=", 13) == 0 ||
          std::strncmp(*entry, "ASAN_OPTIONS=", 13) == 0)
        minimal.push_back(*entry);
    minimal.push_back(nullptr);
    if (command == "exec")
      execv(argv[0], args.data());
    else if (command == "exec-clean-env")
      execve(argv[0], args.data(), minimal.data());
    else
      fexecve(open(argv[0], O_RDONLY | O_CLOEXEC), args.data(), environ);
    std::printf("exec failed\n");
  } else if (command == "exec-thread") {
    std::fflush(stdout);
    std::thread([&] {
      enter(kThreadBody);
      execv(argv[0], selfArguments(argc, argv, 2).data());
    }).join();
  } else if (command == "exec-missing") {
    enter(kWork);
    execl("/nonexistent/program", "program", (char*)nullptr);
    std::printf("exec failed: %s\n", std::strerror(errno));
    calls(arg(2));
    leave(kWork);
  } else if (command == "exec-missing-exit") {
    enter(kWork);
    execl("/nonexistent/program", "program", (char*)nullptr);
    _exit(127);
  } else if (command == "daemon") {
    enter(kWork);
    std::fflush(stdout);
    if (daemon(1, 1) != 0) {
      std::printf("daemon failed\n");
      return 1;
    }
    calls(arg(2)); // in the daemon: its parent _exited inside work
    leave(kWork);
  } else if (command == "longjmp") {
    for (long i = 0; i < arg(3); ++i) {
      enter(kWork);
      if (setjmp(g_jump) == 0)
        jumpFromDepth(arg(2));
      leave(kWork);
    }
  } else if (command == "dlopen") {
    calls(1);
    void* library = dlopen(argv[2], RTLD_NOW);
    if (!library) {
      std::printf("dlopen failed: %s\n", dlerror());
      return 1;
    }
    auto* call = reinterpret_cast<void (*)(int)>(dlsym(library, "module_call"));
    call(5);
  } else if (command == "image-flags") {
    // The runtime keeps every registered image's flag equal to its own, and stops writing a
    // library's when dlclose unloads it (here a write after the unmap would fault).
    auto flag = [] { return int(__atomic_load_n(&g_image_enabled, __ATOMIC_RELAXED)); };
    std::printf("program %d\n", flag());
    shapetrace_set_enabled(0);
    std::printf("program %d\n", flag());
    for (int round = 0; round < 2; ++round) {
      void* library = dlopen(argv[2], RTLD_NOW);
      if (!library) {
        std::printf("dlopen failed: %s\n", dlerror());
        return 1;
      }
      auto* module_flag = reinterpret_cast<int (*)()>(dlsym(library, "module_flag"));
      std::printf("loaded: program %d module %d\n", flag(), module_flag());
      shapetrace_set_enabled(1);
      std::printf("on: program %d module %d\n", flag(), module_flag());
      dlclose(library);
      shapetrace_set_enabled(0);
      std::printf("unloaded, off: program %d\n", flag());
    }
  } else {
    std::fprintf(stderr, "traced_program: unknown command '%s'\n", command.c_str());
    return 2;
  }
  return 3;
}

} // namespace

int main(int argc, char** argv) {
  enter(kMain);
  const int status = run(argc, argv);
  std::printf("done");
  for (int i = 1; i < argc; ++i)
    std::printf(" %s", argv[i]);
  std::printf("\n");
  leave(kMain);
  return status;
}
