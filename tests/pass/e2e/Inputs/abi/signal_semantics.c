/* What a program reads and gets from the signal functions for SIGTERM, SIGINT and SIGHUP, where
   the runtime stands in for the default action unseen (runtime/signal_hooks.cpp): every line must
   be what the plain build prints. */
#define _GNU_SOURCE
#pragma clang diagnostic ignored "-Wdeprecated-declarations" /* siginterrupt, sigset: what programs still call */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t got;
static void handler(int signal) { got = signal; }

static const char *name(void (*h)(int)) {
  return h == SIG_DFL ? "SIG_DFL" : h == SIG_IGN ? "SIG_IGN" : h == SIG_ERR ? "SIG_ERR"
         : h == SIG_HOLD ? "SIG_HOLD" : h == handler ? "handler" : "another";
}

static void current(const char *when, int signal) {
  struct sigaction action;
  sigaction(signal, NULL, &action);
  printf("%s: %s\n", when, name(action.sa_handler));
}

int main(void) {
  /* The same struct for the new and the old action. */
  struct sigaction same;
  memset(&same, 0, sizeof same);
  same.sa_handler = handler;
  sigaction(SIGTERM, &same, &same);
  printf("aliased: old %s\n", name(same.sa_handler));
  kill(getpid(), SIGTERM);
  printf("aliased: handler ran %d\n", got == SIGTERM);
  printf("restore: %s\n", name(signal(SIGTERM, SIG_DFL)));
  current("after restore", SIGTERM);

  /* siginterrupt() then signal(): a blocking read is interrupted, not restarted. */
  int fds[2];
  if (pipe(fds) != 0)
    return 2;
  siginterrupt(SIGINT, 1);
  printf("signal(SIGINT): old %s\n", name(signal(SIGINT, handler)));
  pid_t child = fork();
  if (child == 0) {
    usleep(100000);
    kill(getppid(), SIGINT);
    _exit(0);
  }
  char byte;
  ssize_t n = read(fds[0], &byte, 1);
  printf("read: %zd %s\n", n, n < 0 ? strerror(errno) : "");
  waitpid(child, NULL, 0);
  printf("signal(SIGINT, SIG_DFL): old %s\n", name(signal(SIGINT, SIG_DFL)));

  /* system() saves SIGINT's action and restores it behind the interposed functions. */
  if (system("true") != 0)
    return 3;
  current("after system()", SIGINT);

  /* sigset and sysv_signal, SIG_HOLD, SIG_ERR. */
  printf("sigset(SIGHUP, handler): %s\n", name(sigset(SIGHUP, handler)));
  printf("sigset(SIGHUP, SIG_HOLD): %s\n", name(sigset(SIGHUP, SIG_HOLD)));
  printf("sigset(SIGHUP, SIG_DFL): %s\n", name(sigset(SIGHUP, SIG_DFL)));
  current("SIGHUP", SIGHUP);
  printf("sysv_signal(SIGTERM, handler): %s\n", name(sysv_signal(SIGTERM, handler)));
  printf("sysv_signal(SIGTERM, SIG_DFL): %s\n", name(sysv_signal(SIGTERM, SIG_DFL)));
  errno = 0;
  void (*bad)(int) = signal(SIGTERM, SIG_ERR);
  printf("signal(SIGTERM, SIG_ERR): %s, errno %s\n", name(bad), errno == EINVAL ? "EINVAL" : "other");
  current("SIGTERM at the end", SIGTERM);
  return 0;
}
