; A module without any personality (C compiled with -fexceptions) gets the platform's C
; personality for the cleanup pads the pass adds.
; RUN: %opt_shapetrace -passes=shapetrace-instrument -shapetrace-detached=gate -S %s | FileCheck %s
; AArch64: the same IR.
; RUN: %aarch64_of %s | %opt_shapetrace -passes=shapetrace-instrument -shapetrace-detached=gate -S | FileCheck %s

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-pc-linux-gnu"

declare void @may_throw()

; CHECK-LABEL: define void @c_function() personality ptr @__gcc_personality_v0
; CHECK:         invoke void @may_throw()
; CHECK-NEXT:            to label %{{.*}} unwind label %shapetrace.unwind
define void @c_function() {
  call void @may_throw()
  ret void
}
; CHECK: declare i32 @__gcc_personality_v0(...)
