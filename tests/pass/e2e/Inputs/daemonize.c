// daemon() (boundaries.test): the parent _exits inside daemon(), the daemon does some work.
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static volatile int work_done;

__attribute__((noinline)) void daemon_work(void) { ++work_done; }

__attribute__((noinline)) int start_daemon(void) {
  int rc = daemon(1, 1);
  work_done = 0; // not a tail call
  return rc;
}

int main(void) {
  if (start_daemon() != 0)
    return 1;
  daemon_work();
  daemon_work();
  return 0;
}
