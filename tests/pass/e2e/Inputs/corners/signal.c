/* Signal handlers are traced calls nested in whatever the thread was doing, and a signal raised
   inside a handler nests again (the corners of uftrace's s-signal and s-signal2). */
#include <signal.h>
#include <stdio.h>

static volatile sig_atomic_t handled;

__attribute__((noinline)) static void inner_handler(int sig) { handled += sig == SIGUSR2; }

__attribute__((noinline)) static void note(void) { handled += 10; }

/* The handlers run inside raise, so raise is not a tail call: the frames that called it stay
   open (a tail call closes its caller's frame before the jump; see docs/pass.md). */
__attribute__((noinline)) static void outer_handler(int sig) {
  (void)sig;
  note();
  raise(SIGUSR2);
  handled += 100;
}

__attribute__((noinline)) static void work(void) {
  raise(SIGUSR1);
  handled += 1000;
}

int main(void) {
  struct sigaction action = {0};
  action.sa_handler = outer_handler;
  sigaction(SIGUSR1, &action, NULL);
  action.sa_handler = inner_handler;
  sigaction(SIGUSR2, &action, NULL);
  work();
  work();
  printf("handled %d\n", (int)handled);
  return handled == 2222 ? 0 : 1;
}
