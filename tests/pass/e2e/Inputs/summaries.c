// A program whose call sequences are known, for the structure summaries end to end
// (summaries.test): main calls A B B B B B B B B B C D D D B C D C (Reiss & Renieris' example
// string), then locker, which calls lock and unlock 64 times (the ThreadViewer proposal's example);
// two threads, "fast" and "slow", each call work 100,000 times, and "slow" also calls flush three
// times half way. Built at -O0 so that every call stays a call.
#include <pthread.h>
#include <shapetrace/shapetrace.h>
#include <stdio.h>

static volatile int sink;

__attribute__((noinline)) void A(void) { sink += 1; }
__attribute__((noinline)) void B(void) { sink += 2; }
__attribute__((noinline)) void C(void) { sink += 3; }
__attribute__((noinline)) void D(void) { sink += 4; }
__attribute__((noinline)) void lock(void) { sink += 5; }
__attribute__((noinline)) void unlock(void) { sink -= 5; }
__attribute__((noinline)) void work(int i) { sink += i & 1; }
__attribute__((noinline)) void flush(void) { sink += 7; }

__attribute__((noinline)) void locker(void) {
  for (int i = 0; i < 64; ++i) {
    lock();
    unlock();
  }
}

static void* worker(void* arg) {
  const int slow = arg != NULL;
  shapetrace_set_thread_name(slow ? "slow" : "fast");
  for (int i = 0; i < 100000; ++i) {
    if (slow && i == 50000)
      for (int j = 0; j < 3; ++j)
        flush();
    work(i);
  }
  return NULL;
}

int main(void) {
  A();
  for (int i = 0; i < 9; ++i)
    B();
  C();
  D(), D(), D();
  B(), C(), D(), C();
  locker();
  pthread_t fast, slow;
  pthread_create(&fast, NULL, worker, NULL);
  pthread_join(fast, NULL);
  pthread_create(&slow, NULL, worker, (void*)1);
  pthread_join(slow, NULL);
  printf("done %d\n", sink != 0);
  return 0;
}
