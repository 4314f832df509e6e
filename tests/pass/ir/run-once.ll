; The pass instruments a module once, however often it runs (an explicit -passes plus the default
; pipeline's extension point, or instrumented IR compiled again), and opt's default pipelines
; add it at the extension point -shapetrace-mode selects.
; RUN: %opt_shapetrace -passes=shapetrace-instrument,shapetrace-instrument -S %s | FileCheck %s
; RUN: %opt_shapetrace -passes=shapetrace-instrument -S %s | %opt_shapetrace -passes=shapetrace-instrument -S | FileCheck %s
; RUN: %opt_shapetrace -passes='default<O2>' -S %s | FileCheck %s
; RUN: %opt_shapetrace -passes='default<O0>' -S %s | FileCheck %s
; RUN: %opt_shapetrace -shapetrace-mode=before-inlining -passes='default<O2>' -S %s | FileCheck %s
; RUN: %opt_shapetrace -shapetrace-mode=before-inlining -passes='default<O0>' -S %s | FileCheck %s
; AArch64: the same.
; RUN: %aarch64_of %s | %opt_shapetrace -passes='default<O2>' -S | FileCheck %s

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-pc-linux-gnu"

declare void @work() nounwind

; One table, one constructor.
; CHECK: @__shapetrace_functions = private constant [1 x
; CHECK-NOT: @__shapetrace_functions.{{[0-9]+}} =
; CHECK: @llvm.global_ctors = appending global [1 x

; CHECK-LABEL: define void @f()
; CHECK:         call void @__shapetrace_enter(
; CHECK-NOT:     call void @__shapetrace_enter(
; CHECK:         call void @work()
; CHECK:         call void @__shapetrace_exit(
; CHECK-NOT:     call void @__shapetrace_exit(
; CHECK:         ret void
define void @f() nounwind {
  call void @work()
  call void @work()
  ret void
}

