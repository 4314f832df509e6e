// A process that does not end by itself (boundaries.test), after 30 ms of work:
//   dies kill         killed by SIGKILL: what it had not sent is lost, and that is reported;
//   dies segv         crashes (SIGSEGV): the runtime sends everything and a process end first;
//   dies term         sent SIGTERM (left at its default action): the runtime sends everything and
//                     a process end (reason signal), then SIGTERM ends it;
//   dies term-thread  the same while a second thread makes calls;
//   dies own-handler  sent SIGTERM with a handler of its own, which _exits with status 7;
//   dies ignored      sent SIGTERM while ignoring it: it goes on and returns 0;
//   dies probe        prints the actions it reads for SIGTERM, SIGINT and SIGHUP (SIG_DFL, as
//                     without the runtime), then is sent SIGTERM;
//   dies chain        its handler chains to the action it replaced when that is a function (as
//                     many libraries do), then main returns 0;
//   dies reraise      its handler cleans up, restores SIG_DFL and raises SIGTERM again;
//   dies twice        two threads are each sent SIGTERM, one right after the other (as GNU timeout
//                     signals its child, then its process group).
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
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

static struct sigaction replaced;
static volatile sig_atomic_t stop;

__attribute__((noinline)) void chainOnTerm(int signal) {
  stop = 1;
  if (replaced.sa_handler != SIG_DFL && replaced.sa_handler != SIG_IGN)
    replaced.sa_handler(signal);
}

__attribute__((noinline)) void reraiseOnTerm(int number) {
  work(); // the clean-up
  signal(SIGTERM, SIG_DFL);
  raise(number);
}

static void printAction(const char* name, int number) {
  struct sigaction action;
  sigaction(number, 0, &action);
  printf("%s %s flags %d\n", name,
         action.sa_handler == SIG_DFL ? "SIG_DFL" : action.sa_handler == SIG_IGN ? "SIG_IGN" : "handler",
         action.sa_flags);
}

static void probe(void) {
  printAction("SIGTERM", SIGTERM);
  printAction("SIGINT", SIGINT);
  printAction("SIGHUP", SIGHUP);
  void (*previous)(int) = signal(SIGTERM, onTerm);
  printf("signal returned %s\n", previous == SIG_DFL ? "SIG_DFL" : "a handler");
  previous = signal(SIGTERM, SIG_DFL);
  printf("then %s\n", previous == onTerm ? "the program's handler" : "something else");
  printAction("SIGTERM", SIGTERM);
  fflush(stdout);
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "kill";
  if (strcmp(mode, "own-handler") == 0)
    signal(SIGTERM, onTerm);
  if (strcmp(mode, "ignored") == 0)
    signal(SIGTERM, SIG_IGN);
  if (strcmp(mode, "probe") == 0)
    probe();
  if (strcmp(mode, "reraise") == 0)
    signal(SIGTERM, reraiseOnTerm);
  if (strcmp(mode, "chain") == 0) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = chainOnTerm;
    sigaction(SIGTERM, &action, &replaced);
  }
  pthread_t thread;
  if (strcmp(mode, "term-thread") == 0 || strcmp(mode, "twice") == 0)
    pthread_create(&thread, 0, loop, 0);
  for (int i = 0; i < 10; ++i)
    work();
  if (strcmp(mode, "chain") == 0) {
    kill(getpid(), SIGTERM);
    while (!stop)
      work();
    return 0;
  }
  if (strcmp(mode, "twice") == 0) {
    pthread_kill(thread, SIGTERM); // its handler begins the image's end
    pthread_kill(pthread_self(), SIGTERM);
  }
  if (strcmp(mode, "segv") == 0)
    crash();
  if (strcmp(mode, "kill") == 0)
    raise(SIGKILL);
  kill(getpid(), SIGTERM);
  work();
  return 0;
}
