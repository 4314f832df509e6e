// siglongjmp out of a signal handler: the handler's frame and the frames it interrupted end at the
// jump, as abandoned exits, and the program goes on at the sigsetjmp with the right depth.
// First a signal raised by the program (the handler runs inside raise), then a timer's signal
// delivered on an alternate signal stack while the program spins (the jump crosses from that
// stack back to the thread's own).
// RUN: %shapetrace_cc -O1 %s -o %t
// RUN: %shapetrace_dump -o %t.events -- %t
// RUN: FileCheck %s --input-file %t.events --match-full-lines --strict-whitespace

// CHECK:exit status 0
// CHECK-NEXT:thread main
// CHECK-NEXT:  enter main
// CHECK-NEXT:    enter raised_signal
// CHECK-NEXT:      enter raise_it
// CHECK-NEXT:        enter on_signal
// CHECK-NEXT:          enter handler_work
// CHECK-NEXT:          exit handler_work
// CHECK-NEXT:        abandon on_signal
// CHECK-NEXT:      abandon raise_it
// CHECK-NEXT:      enter after_jump
// CHECK-NEXT:      exit after_jump
// CHECK-NEXT:    exit raised_signal
// CHECK-NEXT:    enter timer_signal
// CHECK-NEXT:      enter wait_for_timer
// CHECK-NEXT:        enter spin
// CHECK-NEXT:          enter on_signal
// CHECK-NEXT:            enter handler_work
// CHECK-NEXT:            exit handler_work
// CHECK-NEXT:          abandon on_signal
// CHECK-NEXT:        abandon spin
// CHECK-NEXT:      abandon wait_for_timer
// CHECK-NEXT:      enter after_jump
// CHECK-NEXT:      exit after_jump
// CHECK-NEXT:    exit timer_signal
// CHECK-NEXT:  exit main
// CHECK-NOT:{{.}}

#include <setjmp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

static sigjmp_buf env;
static volatile sig_atomic_t jumps;

__attribute__((noinline)) void handler_work(void) { ++jumps; }

__attribute__((noinline)) void on_signal(int signal) {
  (void)signal;
  handler_work();
  siglongjmp(env, 1);
}

__attribute__((noinline)) void after_jump(void) { jumps += 10; }

// Not a tail call, which would end raise_it before the handler runs.
__attribute__((noinline)) void raise_it(void) {
  raise(SIGUSR1);
  jumps = -1000; // never reached
}

__attribute__((noinline)) int raised_signal(void) {
  if (sigsetjmp(env, 1) == 0) {
    raise_it();
    return 1;
  }
  after_jump();
  return 0;
}

// No call in the loop: the timer's signal lands here, never inside a hook.
__attribute__((noinline)) void spin(void) {
  for (;;)
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void wait_for_timer(void) {
  const struct itimerval in_10ms = {{0, 0}, {0, 10000}};
  setitimer(ITIMER_REAL, &in_10ms, NULL);
  spin();
}

__attribute__((noinline)) int timer_signal(void) {
  if (sigsetjmp(env, 1) == 0) {
    wait_for_timer();
    return 1;
  }
  after_jump();
  return 0;
}

int main(void) {
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = on_signal;
  sigaction(SIGUSR1, &action, NULL);
  // The timer's signal runs on an alternate stack.
  stack_t alternate = {.ss_sp = malloc(1 << 16), .ss_size = 1 << 16, .ss_flags = 0};
  sigaltstack(&alternate, NULL);
  action.sa_flags = SA_ONSTACK;
  sigaction(SIGALRM, &action, NULL);
  return raised_signal() + timer_signal() + (jumps != 22);
}
