// longjmp leaves three frames without running their epilogues, so they record no exit (as with
// -finstrument-functions and XRay). The stream shows the enters, then the frame setjmp returned
// to carrying on: its next exit closes the abandoned calls, which is where the analyzer
// resynchronises (and counts it). The dump, which does not resynchronise, marks the exits that do
// not match the innermost open call and leaves its indentation as it was.
// RUN: %shapetrace_cc -O1 %s -o %t
// RUN: %shapetrace_dump -o %t.events -- %t
// RUN: FileCheck %s --input-file %t.events --match-full-lines --strict-whitespace

// CHECK:exit status 0
// CHECK-NEXT:thread main
// CHECK-NEXT:  enter main
// CHECK-NEXT:    enter try_jump
// CHECK-NEXT:      enter level1
// CHECK-NEXT:        enter level2
// CHECK-NEXT:          enter level3
// CHECK-NEXT:            enter after_jump
// CHECK-NEXT:            exit after_jump
// CHECK-NEXT:            exit try_jump  [does not match the open call]
// CHECK-NEXT:            exit main  [does not match the open call]
// CHECK-NEXT:  (5 calls still open)
// CHECK-NOT:{{.}}

#include <setjmp.h>

static jmp_buf env;
static volatile int result;

__attribute__((noinline)) void level3(void) { longjmp(env, 1); }
__attribute__((noinline)) void level2(void) { level3(); result = 2; }
__attribute__((noinline)) void level1(void) { level2(); result = 1; }
__attribute__((noinline)) void after_jump(void) { result = 42; }

__attribute__((noinline)) int try_jump(void) {
  if (setjmp(env) == 0) {
    level1();
    return 1;
  }
  after_jump();
  return 0;
}

int main(void) { return try_jump() + (result != 42); }
