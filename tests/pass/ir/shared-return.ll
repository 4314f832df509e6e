; -O2 often merges returns into one block with a phi: `return n == 0 ? 1 : f(n - 1);`. The
; backend would give each tail call its own `ret` (CodeGenPrepare), but not once the exit hook
; sits in the shared block, so the pass does it first: the tail call keeps its jump.
; RUN: %opt_shapetrace -passes=shapetrace-instrument -shapetrace-detached=gate -S %s | FileCheck %s
; RUN: %opt_shapetrace -passes=shapetrace-instrument -shapetrace-detached=gate %s -o - | %llc_x86 -O2 - -o - | FileCheck %s --check-prefix=ASM
; AArch64: the same IR, and the tail call stays a branch.
; RUN: %aarch64_of %s | %opt_shapetrace -passes=shapetrace-instrument -shapetrace-detached=gate -S | FileCheck %s
; RUN: %aarch64_of %s | %opt_shapetrace -passes=shapetrace-instrument -shapetrace-detached=gate | %llc_a64 -O2 - -o - | FileCheck %s --check-prefix=A64

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-pc-linux-gnu"

declare i32 @odd(i32)

; CHECK-LABEL: define i32 @even(i32 %n)
; CHECK:       recurse:
; CHECK-NEXT:    %m = add i32 %n, -1
; CHECK-NEXT:    br i1 %shapetrace.on, label %[[HOOK:.*]], label
; CHECK:       [[HOOK]]:
; CHECK-NEXT:    [[B:%.*]] = load i32, ptr @__shapetrace_base_id
; CHECK-NEXT:    call void @__shapetrace_exit(i32 [[B]])
; CHECK-NEXT:    br label %[[CONT:.*]]
; CHECK:       [[CONT]]:
; CHECK-NEXT:    [[R:%.*]] = tail call i32 @odd(i32 %m)
; CHECK-NEXT:    ret i32 [[R]]
; CHECK:       return:
; CHECK-NEXT:    %result = phi i32 [ 1, %{{.*}} ]
; CHECK-NEXT:    br i1 %shapetrace.on, label %[[HOOK:.*]], label
; CHECK:       [[HOOK]]:
; CHECK-NEXT:    [[B2:%.*]] = load i32, ptr @__shapetrace_base_id
; CHECK-NEXT:    call void @__shapetrace_exit(i32 [[B2]])
; CHECK-NEXT:    br label %[[CONT:.*]]
; CHECK:       [[CONT]]:
; CHECK-NEXT:    ret i32 %result
; ASM-LABEL: even:
; ASM:         jmp odd
; A64-LABEL: even:
; A64:         :got_lo12:__shapetrace_exit]
; A64-NEXT:    blr
; A64-NOT:     bl {{[a-z_]}}
; A64:         b odd
define i32 @even(i32 %n) {
entry:
  %zero = icmp eq i32 %n, 0
  br i1 %zero, label %return, label %recurse
recurse:
  %m = add i32 %n, -1
  %r = tail call i32 @odd(i32 %m)
  br label %return
return:
  %result = phi i32 [ 1, %entry ], [ %r, %recurse ]
  ret i32 %result
}

; A void function: the same for `tail call void` + branch to a lone `ret void`.
; CHECK-LABEL: define void @void_tail(i1 %c)
; CHECK:       call_it:
; CHECK:         call void @__shapetrace_exit(
; CHECK-NEXT:    br label %[[CONT:.*]]
; CHECK:       [[CONT]]:
; CHECK-NEXT:    tail call void @sink()
; CHECK-NEXT:    ret void
declare void @sink()
define void @void_tail(i1 %c) {
entry:
  br i1 %c, label %call_it, label %done
call_it:
  tail call void @sink()
  br label %done
done:
  ret void
}

; The return block also does other work: left alone, the call is not a tail call (so it may
; also unwind through this frame and becomes an invoke).
; CHECK-LABEL: define i32 @busy_return(i32 %n)
; CHECK:       recurse:
; CHECK-NEXT:    %r{{[0-9]*}} = invoke i32 @odd(i32 %n)
; CHECK:       return:
; CHECK-NEXT:    %result = phi i32
; CHECK-NEXT:    %twice = add i32 %result, %result
; CHECK-NEXT:    br i1 %shapetrace.on, label %[[HOOK:.*]], label
; CHECK:       [[HOOK]]:
; CHECK-NEXT:    load i32, ptr @__shapetrace_base_id
; CHECK-NEXT:    add i32
; CHECK-NEXT:    call void @__shapetrace_exit(
define i32 @busy_return(i32 %n) {
entry:
  %zero = icmp eq i32 %n, 0
  br i1 %zero, label %return, label %recurse
recurse:
  %r = tail call i32 @odd(i32 %n)
  br label %return
return:
  %result = phi i32 [ 1, %entry ], [ %r, %recurse ]
  %twice = add i32 %result, %result
  ret i32 %twice
}
