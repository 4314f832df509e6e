// Many tiny calls on two threads: with a ring of 256 slots, each thread waits for the drain.
#include <pthread.h>
#include <stdio.h>
static volatile unsigned sink;
__attribute__((noinline)) static void step(unsigned i) { sink += i; }
static void *run(void *arg) {
  (void)arg;
  for (unsigned i = 0; i < 100000; ++i) step(i);
  return NULL;
}
int main(void) {
  pthread_t other;
  pthread_create(&other, NULL, run, NULL);
  run(NULL);
  pthread_join(other, NULL);
  printf("done\n");
  return 0;
}
