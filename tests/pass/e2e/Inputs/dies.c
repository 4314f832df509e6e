// A process that does not end by itself (boundaries.test), after 30 ms of work:
//   dies kill         killed by SIGKILL: what it had not sent is lost, and that is reported;
//   dies segv         killed by SIGSEGV, the same;
//   dies term         sent SIGTERM (left at its default action): the runtime sends everything and
//                     a process end (reason signal), then SIGTERM ends it;
//   dies term-thread  the same while a second thread makes calls;
//   dies own-handler  sent SIGTERM with a handler of its own, which _exits with status 7;
//   dies ignored      sent SIGTERM while ignoring it: it goes on and returns 0.
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

__attribute__((noinline)) void work(void) {
  struct timespec pause = {0, 3000000};
  nanosleep(&pause, 0);
}

__attribute__((noinline)) void crash(void) { *(volatile int*)0 = 1; }

__attribute__((noinline)) void step(void) { __asm__ volatile("" ::: "memory"); }

__attribute__((noinline)) void* loop(void* unused) {
  for (;;)
    step();
  return unused;
}

__attribute__((noinline)) void onTerm(int signal) { _exit(signal == SIGTERM ? 7 : 1); }

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "kill";
  if (strcmp(mode, "own-handler") == 0)
    signal(SIGTERM, onTerm);
  if (strcmp(mode, "ignored") == 0)
    signal(SIGTERM, SIG_IGN);
  pthread_t thread;
  if (strcmp(mode, "term-thread") == 0)
    pthread_create(&thread, 0, loop, 0);
  for (int i = 0; i < 10; ++i)
    work();
  if (strcmp(mode, "segv") == 0)
    crash();
  if (strcmp(mode, "kill") == 0)
    raise(SIGKILL);
  kill(getpid(), SIGTERM);
  work();
  return 0;
}
