// Several threads: each thread's events form their own balanced sequence, whatever the
// interleaving, and the thread names set through the public API label them.
// RUN: %shapetrace_cc -O2 -pthread %s -o %t
// RUN: %shapetrace_dump -o %t.events -- %t
// RUN: FileCheck %s --input-file %t.events --match-full-lines --strict-whitespace

// CHECK:exit status 0
// CHECK-NEXT:thread main
// CHECK-NEXT:  enter main
// CHECK-NEXT:  exit main
// CHECK-NEXT:thread worker-1
// CHECK-NEXT:  enter worker
// CHECK-NEXT:    enter work
// CHECK-NEXT:      enter leaf
// CHECK-NEXT:      exit leaf
// CHECK-NEXT:    exit work
// CHECK-NEXT:    enter work
// CHECK-NEXT:      enter leaf
// CHECK-NEXT:      exit leaf
// CHECK-NEXT:    exit work
// CHECK-NEXT:  exit worker
// CHECK-NEXT:thread worker-2
// CHECK-NEXT:  enter worker
// CHECK-NEXT:    enter work
// CHECK-NEXT:      enter leaf
// CHECK-NEXT:      exit leaf
// CHECK-NEXT:    exit work
// CHECK-NEXT:    enter work
// CHECK-NEXT:      enter leaf
// CHECK-NEXT:      exit leaf
// CHECK-NEXT:    exit work
// CHECK-NEXT:  exit worker
// CHECK-NEXT:thread worker-3
// CHECK-NEXT:  enter worker
// CHECK:  exit worker
// CHECK-NEXT:thread worker-4
// CHECK-NEXT:  enter worker
// CHECK:  exit worker
// CHECK-NOT:{{.}}

#include <pthread.h>
#include <shapetrace/shapetrace.h>
#include <stdio.h>

static volatile int sink;

__attribute__((noinline)) void leaf(int i) { sink = i; }
__attribute__((noinline)) void work(int i) {
  leaf(i);
  sink += 1;
}

__attribute__((noinline)) void *worker(void *arg) {
  char name[16];
  // Named before the first hook of the thread would be ideal; naming from inside is what users
  // do, and the name applies to the whole thread.
  snprintf(name, sizeof name, "worker-%d", (int)(long)arg);
  shapetrace_set_thread_name(name);
  for (int i = 0; i < 2; ++i)
    work(i);
  return 0;
}

int main(void) {
  pthread_t threads[4];
  for (long i = 0; i < 4; ++i)
    pthread_create(&threads[i], 0, worker, (void *)(i + 1));
  for (int i = 0; i < 4; ++i)
    pthread_join(threads[i], 0);
  return 0;
}
