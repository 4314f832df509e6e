; Calls that do not return: a frame left by exit(), abort() or longjmp() gets no exit event
; (nothing runs after the call; the analyzer resynchronises on the next exit it sees), while a
; noreturn call that throws (__cxa_throw) is routed through the unwind-exit cleanup.
; RUN: %opt_shapetrace -passes=shapetrace-instrument -shapetrace-detached=gate -S %s | FileCheck %s
; AArch64: the same IR.
; RUN: %aarch64_of %s | %opt_shapetrace -passes=shapetrace-instrument -shapetrace-detached=gate -S | FileCheck %s

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-pc-linux-gnu"

declare void @exit(i32) noreturn nounwind
declare void @longjmp(ptr, i32) noreturn nounwind
declare void @__cxa_throw(ptr, ptr, ptr) noreturn
declare ptr @__cxa_allocate_exception(i64) nounwind
declare i32 @__gxx_personality_v0(...)
@_ZTIi = external constant ptr

; CHECK-LABEL: define void @exits(i32 %code)
; CHECK:         call void @__shapetrace_enter(
; CHECK-NEXT:    br label %[[CONT:.*]]
; CHECK:       [[CONT]]:
; CHECK-NEXT:    call void @exit(i32 %code)
; CHECK-NEXT:    unreachable
define void @exits(i32 %code) nounwind {
  call void @exit(i32 %code)
  unreachable
}

; Only the path that returns carries an exit.
; CHECK-LABEL: define void @jumps_or_returns(ptr %env, i1 %do_jump)
; CHECK:       jump:
; CHECK-NEXT:    call void @longjmp(ptr %env, i32 1)
; CHECK-NEXT:    unreachable
; CHECK:       return:
; CHECK:         call void @__shapetrace_exit(
; CHECK-NEXT:    br label %[[CONT:.*]]
; CHECK:       [[CONT]]:
; CHECK-NEXT:    ret void
define void @jumps_or_returns(ptr %env, i1 %do_jump) nounwind {
entry:
  br i1 %do_jump, label %jump, label %return
jump:
  call void @longjmp(ptr %env, i32 1)
  unreachable
return:
  ret void
}

; CHECK-LABEL: define void @throws() personality ptr @__gxx_personality_v0
; CHECK:         invoke void @__cxa_throw(ptr %e, ptr @_ZTIi, ptr null)
; CHECK-NEXT:            to label %[[NORMAL:.*]] unwind label %shapetrace.unwind
; CHECK:       [[NORMAL]]:
; CHECK-NEXT:    unreachable
; CHECK:       shapetrace.unwind:
; CHECK:         call void @__shapetrace_unwind_exit(
; CHECK-NEXT:    br label %[[CONT:.*]]
; CHECK:       [[CONT]]:
; CHECK-NEXT:    resume
; CHECK-NOT:     call void @__shapetrace_exit(
define void @throws() {
  %e = call ptr @__cxa_allocate_exception(i64 4)
  store i32 7, ptr %e
  call void @__cxa_throw(ptr %e, ptr @_ZTIi, ptr null)
  unreachable
}
