// A program whose call graph is known, for the callers extension end to end (callers.test):
// main calls parse 3 times and handle 5 times; each handle calls parse twice and work once; a
// second thread's worker calls parse 4 times. Built at -O0 so that every call stays a call.
#include <pthread.h>
#include <stdio.h>

static volatile int sink;

__attribute__((noinline)) static void work(int n) {
  for (int i = 0; i < 1000 * n; ++i)
    sink += i;
}

__attribute__((noinline)) static int parse(int n) { return n * 3 + sink % 7; }

__attribute__((noinline)) static void handle(int n) {
  parse(n);
  parse(n + 1);
  work(n);
}

static void* worker(void* arg) {
  (void)arg;
  for (int i = 0; i < 4; ++i)
    parse(i);
  return NULL;
}

int main(void) {
  pthread_t thread;
  pthread_create(&thread, NULL, worker, NULL);
  for (int i = 0; i < 3; ++i)
    parse(i);
  for (int i = 0; i < 5; ++i)
    handle(i);
  pthread_join(thread, NULL);
  printf("done %d\n", sink > 0);
  return 0;
}
