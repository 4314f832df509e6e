// More threads alive at once than the shared arena has rings (64), then SIGKILL: the threads past
// the arena record into rings of their own memory, which die with the process, so the collector
// cannot tell the recording is complete and writes no end for it.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

enum { kThreads = 70 };
static pthread_barrier_t all_started;

__attribute__((noinline)) void work(long i) { __asm__ volatile("" ::"r"(i) : "memory"); }

static void* run(void* arg) {
  work((long)arg);
  pthread_barrier_wait(&all_started);
  for (;;)
    pause();
  return 0;
}

int main(void) {
  pthread_barrier_init(&all_started, 0, kThreads + 1);
  for (long i = 0; i < kThreads; ++i) {
    pthread_t thread;
    pthread_create(&thread, 0, run, (void*)i);
  }
  pthread_barrier_wait(&all_started);
  raise(SIGKILL);
  return 0;
}
