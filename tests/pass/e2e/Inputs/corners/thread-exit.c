/* A thread ended by pthread_exit deep in its stack, a thread-specific value's destructor that
   runs after the thread's function ended, and threads named through pthread_setname_np: the
   corners of uftrace's s-thread-exit, s-thread-tsd and s-thread-name. The threads run one after
   the other, so the recording is the same whatever the machine's speed. */
#define _GNU_SOURCE /* pthread_setname_np */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_key_t key;
static int destroyed, unwound;

__attribute__((noinline)) static void destroy(void *value) { destroyed += *(int *)value; }

__attribute__((noinline)) static void stop_here(int depth) {
  if (depth == 0) pthread_exit(NULL);
  stop_here(depth - 1);
  unwound++; /* not a tail call: each depth keeps its frame */
}

__attribute__((noinline)) static void *exiting(void *arg) {
  (void)arg;
  pthread_setname_np(pthread_self(), "exiting");
  stop_here(2);
  return NULL;
}

__attribute__((noinline)) static void *keeping(void *arg) {
  pthread_setname_np(pthread_self(), "keeping");
  pthread_setspecific(key, arg);
  return NULL;
}

__attribute__((noinline)) static void run(void *(*body)(void *), void *arg) {
  pthread_t thread;
  pthread_create(&thread, NULL, body, arg);
  pthread_join(thread, NULL);
}

int main(void) {
  static int value = 5;
  pthread_key_create(&key, destroy);
  run(exiting, NULL);
  run(keeping, &value);
  printf("destroyed %d, unwound %d\n", destroyed, unwound);
  return destroyed == 5 && unwound == 0 ? 0 : 1;
}
