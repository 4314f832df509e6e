// longjmp leaves the frames it jumps over without running their epilogues, so their exit hooks
// never run. The runtime ends them itself at the jump: one abandoned exit per frame, innermost
// first, so the stream stays balanced and the frame setjmp returned to goes on at the right depth
// (uftrace shows the same tree: the jumped-over calls end where the jump happens).
// Out of one frame (longjmp), out of three (_longjmp), to an outer setjmp past an inner one
// (both live), to the older of two setjmps of one frame and then to the newer (still live: its
// frame has not returned), and through __longjmp_chk (_FORTIFY_SOURCE turns longjmp into it).
// RUN: %shapetrace_cc -O1 %s -o %t
// RUN: %shapetrace_dump -o %t.events -- %t
// RUN: FileCheck %s --input-file %t.events --match-full-lines --strict-whitespace
// RUN: %shapetrace_cc -O1 -D_FORTIFY_SOURCE=2 %s -o %t.fortified
// RUN: nm %t.fortified | FileCheck %s --check-prefix=FORTIFIED
// RUN: %shapetrace_dump -o %t.fortified.events -- %t.fortified
// RUN: diff %t.events %t.fortified.events
// analyzer.test runs the analyzer on this program's recording.

// FORTIFIED: U __longjmp_chk

// CHECK:exit status 0
// CHECK-NEXT:thread main
// CHECK-NEXT:  enter main
// CHECK-NEXT:    enter jump_one
// CHECK-NEXT:      enter leaf_jump
// CHECK-NEXT:      abandon leaf_jump
// CHECK-NEXT:      enter after_jump
// CHECK-NEXT:      exit after_jump
// CHECK-NEXT:    exit jump_one
// CHECK-NEXT:    enter jump_three
// CHECK-NEXT:      enter level1
// CHECK-NEXT:        enter level2
// CHECK-NEXT:          enter level3
// CHECK-NEXT:          abandon level3
// CHECK-NEXT:        abandon level2
// CHECK-NEXT:      abandon level1
// CHECK-NEXT:      enter after_jump
// CHECK-NEXT:      exit after_jump
// CHECK-NEXT:    exit jump_three
// CHECK-NEXT:    enter jump_past_inner
// CHECK-NEXT:      enter inner_setjmp
// CHECK-NEXT:        enter leaf_jump
// CHECK-NEXT:        abandon leaf_jump
// CHECK-NEXT:      abandon inner_setjmp
// CHECK-NEXT:      enter after_jump
// CHECK-NEXT:      exit after_jump
// CHECK-NEXT:    exit jump_past_inner
// CHECK-NEXT:    enter jump_between_siblings
// CHECK-NEXT:      enter leaf_jump
// CHECK-NEXT:      abandon leaf_jump
// CHECK-NEXT:      enter leaf_jump
// CHECK-NEXT:      abandon leaf_jump
// CHECK-NEXT:      enter after_jump
// CHECK-NEXT:      exit after_jump
// CHECK-NEXT:    exit jump_between_siblings
// CHECK-NEXT:  exit main
// CHECK-NOT:{{.}}

#include <setjmp.h>

static jmp_buf env, inner_env;
static volatile int result;

__attribute__((noinline)) void leaf_jump(jmp_buf target) { longjmp(target, 1); }
__attribute__((noinline)) void level3(void) { _longjmp(env, 1); }
__attribute__((noinline)) void level2(void) { level3(); result = 2; }
__attribute__((noinline)) void level1(void) { level2(); result = 1; }
__attribute__((noinline)) void after_jump(void) { result += 42; }

__attribute__((noinline)) int jump_one(void) {
  if (setjmp(env) == 0) {
    leaf_jump(env);
    return 1;
  }
  after_jump();
  return 0;
}

__attribute__((noinline)) int jump_three(void) {
  if (_setjmp(env) == 0) {
    level1();
    return 1;
  }
  after_jump();
  return 0;
}

// An inner setjmp that is still live when the jump goes to the outer one.
__attribute__((noinline)) void inner_setjmp(void) {
  if (setjmp(inner_env) == 0)
    leaf_jump(env);
  result = -1;
}

__attribute__((noinline)) int jump_past_inner(void) {
  if (setjmp(env) == 0) {
    inner_setjmp();
    return 1;
  }
  after_jump();
  return 0;
}

// Two setjmps in one frame: a jump to the older one leaves the newer one live.
static jmp_buf older_env, newer_env;
__attribute__((noinline)) int jump_between_siblings(void) {
  if (setjmp(older_env) != 0)
    leaf_jump(newer_env); // back from the first jump: now to the newer setjmp
  if (setjmp(newer_env) == 0)
    leaf_jump(older_env);
  after_jump();
  return 0;
}

int main(void) {
  return jump_one() + jump_three() + jump_past_inner() + jump_between_siblings() + (result != 168);
}
