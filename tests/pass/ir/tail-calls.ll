; Tail calls: the caller's exit goes before a `tail`/`musttail` call whose result it returns, so
; the call stays in tail position; any other call gets the exit after it, before the `ret`.
; RUN: %opt_shapetrace -passes=shapetrace-instrument -shapetrace-detached=gate -S %s | FileCheck %s
; The backend still turns the instrumented tail call into a jump:
; RUN: %opt_shapetrace -passes=shapetrace-instrument -shapetrace-detached=gate %s -o - | %llc_x86 -O2 - -o - | FileCheck %s --check-prefix=ASM
; AArch64: the same IR, and the same jump (`b`) after the exit hook.
; RUN: %aarch64_of %s | %opt_shapetrace -passes=shapetrace-instrument -shapetrace-detached=gate -S | FileCheck %s
; RUN: %aarch64_of %s | %opt_shapetrace -passes=shapetrace-instrument -shapetrace-detached=gate | %llc_a64 -O2 - -o - | FileCheck %s --check-prefix=A64

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-pc-linux-gnu"

declare i32 @callee(i32) nounwind
declare void @sink(i32) nounwind
declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)

; CHECK-LABEL: define i32 @tail_returns_call(i32 %x)
; CHECK:         call void @__shapetrace_enter(
; CHECK-NEXT:    br label %[[CONT:.*]]
; CHECK:       [[CONT]]:
; CHECK-NEXT:    br i1 %shapetrace.on, label %[[HOOK:.*]], label
; CHECK:       [[HOOK]]:
; CHECK-NEXT:    [[B:%.*]] = load i32, ptr @__shapetrace_base_id
; CHECK-NEXT:    call void @__shapetrace_exit(i32 [[B]])
; CHECK-NEXT:    br label %[[CONT:.*]]
; CHECK:       [[CONT]]:
; CHECK-NEXT:    [[R:%.*]] = tail call i32 @callee(i32 %x)
; CHECK-NEXT:    ret i32 [[R]]
; ASM-LABEL: tail_returns_call:
; ASM:         callq *__shapetrace_enter@GOTPCREL(%rip)
; ASM:         callq *__shapetrace_exit@GOTPCREL(%rip)
; ASM:         jmp callee
; A64-LABEL: tail_returns_call:
; A64:         adrp [[FLAG:x[0-9]+]], __shapetrace_image_enabled
; A64-NEXT:    ldrb w{{[0-9]+}}, [[[FLAG]], :lo12:__shapetrace_image_enabled]
; A64:         ldr [[ENTER:x[0-9]+]], [x{{[0-9]+}}, :got_lo12:__shapetrace_enter]
; A64:         blr [[ENTER]]
; A64:         ldr [[EXIT:x[0-9]+]], [x{{[0-9]+}}, :got_lo12:__shapetrace_exit]
; A64:         blr [[EXIT]]
; A64-NOT:     bl {{[a-z_]}}
; A64:         b callee
define i32 @tail_returns_call(i32 %x) {
  %r = tail call i32 @callee(i32 %x)
  ret i32 %r
}

; A void function returning after a tail call: still a tail call.
; CHECK-LABEL: define void @tail_void(i32 %x)
; CHECK:         call void @__shapetrace_exit(
; CHECK-NEXT:    br label %[[CONT:.*]]
; CHECK:       [[CONT]]:
; CHECK-NEXT:    tail call void @sink(i32 %x)
; CHECK-NEXT:    ret void
define void @tail_void(i32 %x) {
  tail call void @sink(i32 %x)
  ret void
}

; musttail: the exit must precede the call, nothing may come between the call and the ret.
; CHECK-LABEL: define i32 @must_tail(i32 %x)
; CHECK:         call void @__shapetrace_exit(
; CHECK-NEXT:    br label %[[CONT:.*]]
; CHECK:       [[CONT]]:
; CHECK-NEXT:    [[R:%.*]] = musttail call i32 @callee(i32 %x)
; CHECK-NEXT:    ret i32 [[R]]
; ASM-LABEL: must_tail:
; ASM:         jmp callee
; A64-LABEL: must_tail:
; A64:         :got_lo12:__shapetrace_exit]
; A64-NEXT:    add
; A64-NEXT:    blr
; A64-NOT:     bl {{[a-z_]}}
; A64:         b callee
define i32 @must_tail(i32 %x) {
  %r = musttail call i32 @callee(i32 %x)
  ret i32 %r
}

; Self-recursion through a tail call, the shape -O2 leaves when it cannot make a loop.
; CHECK-LABEL: define i32 @tail_recursive(i32 %n)
; CHECK:       recurse:
; CHECK:         call void @__shapetrace_exit(
; CHECK-NEXT:    br label %[[CONT:.*]]
; CHECK:       [[CONT]]:
; CHECK-NEXT:    [[R:%.*]] = tail call i32 @tail_recursive(i32 %m)
; CHECK-NEXT:    ret i32 [[R]]
; CHECK:       done:
; CHECK:         call void @__shapetrace_exit(
; CHECK-NEXT:    br label %[[CONT:.*]]
; CHECK:       [[CONT]]:
; CHECK-NEXT:    ret i32 0
define i32 @tail_recursive(i32 %n) {
entry:
  %zero = icmp eq i32 %n, 0
  br i1 %zero, label %done, label %recurse
recurse:
  %m = sub i32 %n, 1
  %r = tail call i32 @tail_recursive(i32 %m)
  ret i32 %r
done:
  ret i32 0
}

; A `tail` call whose result is not what is returned is not a tail call.
; CHECK-LABEL: define i32 @tail_marker_not_returned(i32 %x)
; CHECK:         [[R:%.*]] = tail call i32 @callee(i32 %x)
; CHECK-NEXT:    [[S:%.*]] = add i32 [[R]], 1
; CHECK-NEXT:    br i1 %shapetrace.on, label %[[HOOK:.*]], label
; CHECK:       [[HOOK]]:
; CHECK-NEXT:    [[B:%.*]] = load i32, ptr @__shapetrace_base_id
; CHECK-NEXT:    [[ID:%.*]] = add i32 [[B]], 4
; CHECK-NEXT:    call void @__shapetrace_exit(i32 [[ID]])
; CHECK-NEXT:    br label %[[CONT:.*]]
; CHECK:       [[CONT]]:
; CHECK-NEXT:    ret i32 [[S]]
define i32 @tail_marker_not_returned(i32 %x) {
  %r = tail call i32 @callee(i32 %x)
  %s = add i32 %r, 1
  ret i32 %s
}

; A call in return position without the tail marker (it may see the caller's allocas): the
; callee runs inside the caller, the exit follows it.
; CHECK-LABEL: define i32 @not_marked_tail(i32 %x)
; CHECK:         [[R:%.*]] = call i32 @callee(i32 %x)
; CHECK-NEXT:    br i1 %shapetrace.on, label %[[HOOK:.*]], label
; CHECK:       [[HOOK]]:
; CHECK-NEXT:    [[B:%.*]] = load i32, ptr @__shapetrace_base_id
; CHECK-NEXT:    [[ID:%.*]] = add i32 [[B]], 5
; CHECK-NEXT:    call void @__shapetrace_exit(i32 [[ID]])
; CHECK-NEXT:    br label %[[CONT:.*]]
; CHECK:       [[CONT]]:
; CHECK-NEXT:    ret i32 [[R]]
define i32 @not_marked_tail(i32 %x) {
  %r = call i32 @callee(i32 %x)
  ret i32 %r
}

; Intrinsics are not calls the caller leaves through.
; CHECK-LABEL: define void @intrinsic_before_ret(ptr %p)
; CHECK:         tail call void @llvm.memset.p0.i64(
; CHECK-NEXT:    br i1 %shapetrace.on, label %[[HOOK:.*]], label
; CHECK:       [[HOOK]]:
; CHECK-NEXT:    [[B:%.*]] = load i32, ptr @__shapetrace_base_id
; CHECK-NEXT:    [[ID:%.*]] = add i32 [[B]], 6
; CHECK-NEXT:    call void @__shapetrace_exit(i32 [[ID]])
; CHECK-NEXT:    br label %[[CONT:.*]]
; CHECK:       [[CONT]]:
; CHECK-NEXT:    ret void
define void @intrinsic_before_ret(ptr %p) {
  tail call void @llvm.memset.p0.i64(ptr %p, i8 0, i64 64, i1 false)
  ret void
}
