// A program built with the plugin that no collector looks at (attach on demand, the collector's
// ipc socket absent) has the runtime's drain thread and nothing else of it: no ZeroMQ thread, no
// descriptor (its first open gets 3), no handler it can see; and running out of descriptors for a
// while (as servers and libuv's EMFILE tests do) does not make ZeroMQ abort it. Then a collector
// that appears is still found: the same program under `shapetrace record` is recorded.
// RUN: %shapetrace_cc -O1 %s -o %t
// RUN: env SHAPETRACE_ENDPOINT=ipc://%t.absent.sock %t | FileCheck %s
// CHECK: first descriptor 3
// CHECK-NEXT: threads 2
// CHECK-NEXT: no handler
// CHECK-NEXT: descriptors used up and given back
// CHECK-NEXT: threads 2
// RUN: rm -rf %t.rec
// RUN: %shapetrace record -o %t.rec -- %t > %t.out 2>&1
// RUN: %shapetrace info %t.rec | FileCheck %s --check-prefix=RECORDED
// RECORDED: processes 1, threads 1, events {{[1-9][0-9]*}}, dropped 0
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

__attribute__((noinline)) static void pause_ms(long ms) {
  struct timespec pause = {ms / 1000, (ms % 1000) * 1000000};
  nanosleep(&pause, 0);
}

__attribute__((noinline)) static int threads(void) {
  DIR *tasks = opendir("/proc/self/task");
  int count = 0;
  for (struct dirent *entry; (entry = readdir(tasks));)
    count += entry->d_name[0] != '.';
  closedir(tasks);
  return count;
}

__attribute__((noinline)) static int handlers(void) {
  int count = 0;
  for (int signal = 1; signal < 32; ++signal) {
    struct sigaction action;
    if (sigaction(signal, 0, &action) == 0 && action.sa_handler != SIG_DFL &&
        action.sa_handler != SIG_IGN)
      ++count;
  }
  return count;
}

// All descriptors but 3 taken for 300 ms, then given back.
__attribute__((noinline)) static int use_up_descriptors(void) {
  struct rlimit limit = {64, 64};
  if (setrlimit(RLIMIT_NOFILE, &limit) != 0)
    return 0;
  int first = dup(0);
  while (dup(0) != -1 || errno == EINTR) {
  }
  if (errno != EMFILE)
    return 0;
  for (int fd = 61; fd < 64; ++fd)
    close(fd);
  pause_ms(300);
  for (int fd = first; fd < 64; ++fd)
    close(fd);
  return 1;
}

int main(void) {
  pause_ms(200); // the runtime has looked for a collector by now
  int fd = open("/dev/null", O_RDONLY);
  printf("first descriptor %d\n", fd);
  close(fd);
  printf("threads %d\n", threads());
  printf(handlers() ? "a handler\n" : "no handler\n");
  printf(use_up_descriptors() ? "descriptors used up and given back\n" : "could not use them up\n");
  printf("threads %d\n", threads());
  return 0;
}
