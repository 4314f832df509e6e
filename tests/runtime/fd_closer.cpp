// A program that does to its own descriptors what daemons and fork/exec children do, built twice by
// the runtime's tests: with shapetrace-c++ (the plugin and libshapetrace-rt.so) and untraced. Both
// builds must print the same and exit the same.
//
//   fd_closer MODE CALLS
//
// Calls leaf() CALLS times, sleeps 50 ms (the runtime has connected by then), does to its
// descriptors what MODE says, sleeps 300 ms (the runtime reconnects), calls leaf() CALLS times
// more, prints "leaf calls N" and what MODE observed, and exits 7.
//   main        close(fd) for every fd from 3 to 1023, on the main thread
//   thread      the same on another thread while the main thread keeps calling leaf()
//   fork-exec   fork; the child closes 3..1023 and execs `sh -c 'echo child exec; exit 5'`
//   fork-calls-exec  fork; the child calls leaf() CALLS times and execs `sh -c 'exit 5'`
//   forks-exec-at-once  50 times, one after another: fork; the child execs `sh -c 'exit 5'` at
//                  once
//   forks-sweep-exec  50 times, one after another: fork; the child closes every fd from 3 to
//                  1023, again and again for 20 ms (while its runtime connects), and execs
//                  `sh -c 'exit 5'`
//   close_range close_range(3, ~0U, 0)
//   closefrom   closefrom(3)
//   dup2        dup2(/dev/null, fd) over every socket descriptor from 3 to 1023, then close it
//   raw-close_range  syscall(SYS_close_range, 3, ~0U, 0): no interposer sees it
//   raw-close   syscall(SYS_close, fd) for every fd from 3 to 1023
//   fclose-fdopen  fclose(fdopen(fd, "r")) for every fd from 3 to 1023 (glibc closes inside)
//   nofile-churn   lowers RLIMIT_NOFILE to 64, then 200 times opens /dev/null until EMFILE and
//                  closes all it opened, calling leaf() between rounds
//   census      prints how many threads and descriptors the process has
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <string>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

std::atomic<long> g_leaf_calls{0};
volatile long g_sink = 0;

__attribute__((noinline)) void leaf(long i) {
  g_sink = g_sink + i;
  g_leaf_calls.fetch_add(1, std::memory_order_relaxed);
}

__attribute__((noinline)) void calls(long n) {
  for (long i = 0; i < n; ++i)
    leaf(i);
}

// Whether every close of an fd the untraced program does not have failed with EBADF is what
// matters to a program; it counts the closes that succeeded among 3..1023 above `keep`.
__attribute__((noinline)) int closeAll(int keep) {
  int closed = 0;
  for (int fd = 3; fd < 1024; ++fd)
    if (fd != keep && close(fd) == 0)
      ++closed;
  return closed;
}

// Forks kChildren children one after another, each doing `before_exec` and then exec'ing
// `sh -c 'exit 5'`; says how many exited with 5.
constexpr int kChildren = 50;
template <class BeforeExec> std::string forkChildren(BeforeExec before_exec) {
  int exited_5 = 0;
  for (int i = 0; i < kChildren; ++i) {
    std::fflush(stdout);
    const pid_t child = fork();
    if (child == 0) {
      before_exec();
      execl("/bin/sh", "sh", "-c", "exit 5", (char*)nullptr);
      _exit(127);
    }
    int status = 0;
    waitpid(child, &status, 0);
    exited_5 += WIFEXITED(status) && WEXITSTATUS(status) == 5;
  }
  return "children exited 5: " + std::to_string(exited_5);
}

// Closes every fd from 3 to 1023 again and again for `ms` milliseconds.
__attribute__((noinline)) void sweep(int ms) {
  timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  do {
    closeAll(-1);
    clock_gettime(CLOCK_MONOTONIC, &now);
  } while ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000 < ms);
}

int entries(const char* path) {
  DIR* dir = opendir(path);
  int count = 0;
  while (dirent* entry = dir ? readdir(dir) : nullptr)
    count += entry->d_name[0] != '.';
  if (dir)
    closedir(dir);
  return count;
}

void pause(int ms) { usleep(useconds_t(ms) * 1000); }

} // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  const long n = argc > 2 ? std::atol(argv[2]) : 1000;
  calls(n);
  pause(50);
  std::string observed;
  if (mode == "main") {
    observed = "closed " + std::to_string(closeAll(-1));
  } else if (mode == "thread") {
    std::atomic<bool> done{false};
    int closed = 0;
    std::thread closer([&] {
      closed = closeAll(-1);
      done = true;
    });
    while (!done)
      calls(100);
    closer.join();
    g_leaf_calls = n; // the main thread's calls while waiting vary from run to run
    observed = "closed " + std::to_string(closed);
  } else if (mode == "fork-exec") {
    std::fflush(stdout);
    const pid_t child = fork();
    if (child == 0) {
      closeAll(-1);
      execl("/bin/sh", "sh", "-c", "echo child exec; exit 5", (char*)nullptr);
      _exit(127);
    }
    int status = 0;
    waitpid(child, &status, 0);
    observed = "child status " + std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  } else if (mode == "fork-calls-exec") {
    std::fflush(stdout);
    const pid_t child = fork();
    if (child == 0) {
      calls(n); // recorded in the child's stream, sent before the exec replaces it
      execl("/bin/sh", "sh", "-c", "exit 5", (char*)nullptr);
      _exit(127);
    }
    int status = 0;
    waitpid(child, &status, 0);
    observed = "child status " + std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  } else if (mode == "forks-exec-at-once") {
    observed = forkChildren([] {});
  } else if (mode == "forks-sweep-exec") {
    observed = forkChildren([] { sweep(20); });
  } else if (mode == "close_range") {
    observed = "close_range " + std::to_string(close_range(3, ~0U, 0));
  } else if (mode == "closefrom") {
    closefrom(3);
    observed = "closefrom";
  } else if (mode == "dup2") {
    const int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    int replaced = 0;
    for (int fd = 3; fd < 1024; ++fd) {
      struct stat info;
      if (fd != null_fd && fstat(fd, &info) == 0 && S_ISSOCK(info.st_mode) &&
          dup2(null_fd, fd) == fd) {
        close(fd);
        ++replaced;
      }
    }
    close(null_fd);
    observed = "dup2 done"; // how many sockets existed differs between the builds by design
    (void)replaced;
  } else if (mode == "raw-close_range") {
    observed = "close_range " + std::to_string(syscall(SYS_close_range, 3, ~0U, 0));
  } else if (mode == "raw-close") {
    int closed = 0;
    for (int fd = 3; fd < 1024; ++fd)
      closed += syscall(SYS_close, fd) == 0;
    observed = "raw-close done"; // the runtime's own descriptors are among them when traced
    (void)closed;
  } else if (mode == "fclose-fdopen") {
    for (int fd = 3; fd < 1024; ++fd)
      if (FILE* file = fdopen(fd, "r"))
        fclose(file);
    observed = "fclose-fdopen done";
  } else if (mode == "nofile-churn") {
    const rlimit low{64, 64};
    setrlimit(RLIMIT_NOFILE, &low);
    long full = 0;
    for (int round = 0; round < 200; ++round) {
      std::vector<int> opened;
      for (int fd; (fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0;)
        opened.push_back(fd);
      full += errno == EMFILE;
      for (const int fd : opened)
        close(fd);
      calls(10);
    }
    g_leaf_calls = n; // how many rounds
    observed = "full " + std::to_string(full);
  } else if (mode == "census") {
    observed = "threads " + std::to_string(entries("/proc/self/task")) + " fds " +
               std::to_string(entries("/proc/self/fd") - 1); // minus the directory's own
  } else {
    std::fprintf(stderr, "usage: fd_closer MODE CALLS (see the source for the modes)\n");
    return 2;
  }
  pause(300);
  calls(n);
  std::printf("leaf calls %ld\n%s\n", g_leaf_calls.load(), observed.c_str());
  return 7;
}
