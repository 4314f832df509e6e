// A process that does not end by itself (boundaries.test): `dies kill` is killed by SIGKILL, `dies
// segv` by SIGSEGV, after 30 ms of work; what it had not sent is lost, and that is reported.
#include <signal.h>
#include <string.h>
#include <time.h>

__attribute__((noinline)) void work(void) {
  struct timespec pause = {0, 3000000};
  nanosleep(&pause, 0);
}

__attribute__((noinline)) void crash(void) { *(volatile int*)0 = 1; }

int main(int argc, char** argv) {
  for (int i = 0; i < 10; ++i)
    work();
  if (argc > 1 && strcmp(argv[1], "segv") == 0)
    crash();
  raise(SIGKILL);
  return 0;
}
