// Jumps the runtime cannot place keep working and change nothing: two threads jumping at once (each
// thread's setjmps are its own), and a jump to a copy of a jmp_buf (an address no setjmp was
// made at): its frames stay open as before (the next exit of the frame setjmp returned to closes
// them), and the program's behaviour is the same.
// RUN: %shapetrace_cc -O1 %s -o %t -lpthread
// RUN: %shapetrace_dump -o %t.events -- %t
// RUN: FileCheck %s --input-file %t.events --match-full-lines --strict-whitespace

// The dump does not resynchronise: it marks the exits that do not match the innermost open call
// and keeps its indentation (the analyzer closes jump_to at jump_via_copy's exit).
// CHECK:exit status 0
// CHECK-NEXT:thread main
// CHECK-NEXT:  enter main
// CHECK-NEXT:    enter jump_via_copy
// CHECK-NEXT:      enter jump_to
// CHECK-NEXT:        exit jump_via_copy  [does not match the open call]
// CHECK-NEXT:        exit main  [does not match the open call]
// CHECK-NEXT:  (3 calls still open)
// Each jumping thread: 50 times the same balanced tree.
// CHECK-NEXT:thread [[NAME:.*]]
// CHECK-NEXT:  enter jumper
// CHECK-COUNT-50:    enter jump_once{{$}}
// CHECK:  exit jumper
// CHECK-NEXT:thread [[NAME]]
// CHECK-NEXT:  enter jumper
// CHECK-COUNT-50:    enter jump_once{{$}}
// CHECK:  exit jumper
// CHECK-NOT:{{.}}
// RUN: grep -c "^      abandon jump_to$" %t.events | FileCheck %s --check-prefix=ABANDONED
// ABANDONED: 100
// RUN: grep -c "does not match" %t.events | FileCheck %s --check-prefix=MISMATCHED
// MISMATCHED: 2

#include <pthread.h>
#include <setjmp.h>
#include <string.h>

static volatile int jumps;

__attribute__((noinline)) void jump_to(jmp_buf target) { longjmp(target, 1); }

__attribute__((noinline)) void jump_once(void) {
  jmp_buf env;
  if (setjmp(env) == 0)
    jump_to(env);
  __sync_fetch_and_add(&jumps, 1);
}

__attribute__((noinline)) void* jumper(void* unused) {
  (void)unused;
  for (int i = 0; i < 50; ++i)
    jump_once();
  return 0;
}

// The jump goes through a copy of the jmp_buf: the runtime does not know it, the jump works.
__attribute__((noinline)) void jump_via_copy(void) {
  jmp_buf env, copy;
  if (setjmp(env) == 0) {
    memcpy(copy, env, sizeof env);
    jump_to(copy);
  }
  __sync_fetch_and_add(&jumps, 1);
}

int main(void) {
  pthread_t first, second;
  pthread_create(&first, 0, jumper, 0);
  pthread_create(&second, 0, jumper, 0);
  pthread_join(first, 0);
  pthread_join(second, 0);
  jump_via_copy();
  return jumps == 101 ? 0 : 1;
}
