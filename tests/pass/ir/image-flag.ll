; How instrumented code reads the recording flag: its image's own @__shapetrace_image_enabled
; (abi.h), hidden, so PC-relative in every relocation model: `cmpb $0, flag(%rip)`, never a GOT
; load, and never a copy relocation (an -fPIE object links into a shared library, which then has a
; flag of its own). The load is `unordered` (never torn, no ordering needed), which the backend
; folds into the cmp.
; RUN: split-file %s %t
; RUN: %opt_shapetrace -passes=shapetrace-instrument -S %t/pie.ll | FileCheck %s --check-prefix=IR
; RUN: %opt_shapetrace -passes=shapetrace-instrument %t/static.ll -o - | %llc_x86 -O2 -relocation-model=static - -o - | FileCheck %s --check-prefix=ASM
; RUN: %opt_shapetrace -passes=shapetrace-instrument %t/pie.ll -o - | %llc_x86 -O2 -relocation-model=pic - -o - | FileCheck %s --check-prefix=ASM
; RUN: %opt_shapetrace -passes=shapetrace-instrument %t/pic.ll -o - | %llc_x86 -O2 -relocation-model=pic - -o - | FileCheck %s --check-prefix=ASM
; The same with one body:
; RUN: %opt_shapetrace -passes=shapetrace-instrument -shapetrace-detached=gate %t/pic.ll -o - | %llc_x86 -O2 -relocation-model=pic - -o - | FileCheck %s --check-prefix=GATE-ASM
; AArch64: `adrp` + `ldrb` of the flag itself in every relocation model, never through the GOT.
; RUN: %aarch64_of %t/static.ll | %opt_shapetrace -passes=shapetrace-instrument | %llc_a64 -O2 -relocation-model=static - -o - | FileCheck %s --check-prefix=A64 --implicit-check-not=:got:__shapetrace_image_enabled
; RUN: %aarch64_of %t/pie.ll | %opt_shapetrace -passes=shapetrace-instrument | %llc_a64 -O2 -relocation-model=pic - -o - | FileCheck %s --check-prefix=A64 --implicit-check-not=:got:__shapetrace_image_enabled
; RUN: %aarch64_of %t/pic.ll | %opt_shapetrace -passes=shapetrace-instrument | %llc_a64 -O2 -relocation-model=pic - -o - | FileCheck %s --check-prefix=A64 --implicit-check-not=:got:__shapetrace_image_enabled
; RUN: %aarch64_of %t/pic.ll | %opt_shapetrace -passes=shapetrace-instrument -shapetrace-detached=gate | %llc_a64 -O2 -relocation-model=pic - -o - | FileCheck %s --check-prefix=A64-GATE --implicit-check-not=:got:__shapetrace_image_enabled
; A module that defines the name itself is refused.
; RUN: not %opt_shapetrace -passes=shapetrace-instrument -disable-output %t/taken.ll 2>&1 | FileCheck %s --check-prefix=TAKEN

; IR: $__shapetrace_image_enabled = comdat any
; IR: @__shapetrace_image_enabled = linkonce_odr hidden global [64 x i8] zeroinitializer, comdat, align 64
; IR: load atomic i8, ptr @__shapetrace_image_enabled unordered, align 1

; ASM-LABEL: f:
; ASM: cmpb $0, __shapetrace_image_enabled(%rip)
; ASM-NEXT: jne f.traced # TAILCALL
; ASM: .hidden __shapetrace_image_enabled
; ASM-NOT: GOTPCREL(%rip), %r
; GATE-ASM-LABEL: f:
; GATE-ASM: movzbl __shapetrace_image_enabled(%rip), %e{{[a-z0-9]+}}
; A64-LABEL: f:
; A64: adrp [[FLAG:x[0-9]+]], __shapetrace_image_enabled
; A64-NEXT: ldrb w{{[0-9]+}}, [[[FLAG]], :lo12:__shapetrace_image_enabled]
; A64-NEXT: cbnz w{{[0-9]+}}, [[TRACED:.LBB[0-9_]+]]
; A64: [[TRACED]]:
; A64-NEXT: b f.traced
; A64: .hidden __shapetrace_image_enabled
; A64-GATE-LABEL: f:
; A64-GATE: adrp [[FLAG:x[0-9]+]], __shapetrace_image_enabled
; A64-GATE-NEXT: ldrb w{{[0-9]+}}, [[[FLAG]], :lo12:__shapetrace_image_enabled]

; TAKEN: error: shapetrace: '__shapetrace_image_enabled' is defined or declared in this module other than by shapetrace; the name is reserved for the shapetrace runtime

;--- pie.ll
target triple = "x86_64-pc-linux-gnu"
define void @f() nounwind {
  call void @g()
  ret void
}
declare void @g() nounwind
!llvm.module.flags = !{!0, !1}
!0 = !{i32 8, !"PIC Level", i32 2}
!1 = !{i32 7, !"PIE Level", i32 2}

;--- static.ll
target triple = "x86_64-pc-linux-gnu"
define void @f() nounwind {
  call void @g()
  ret void
}
declare void @g() nounwind

;--- pic.ll
target triple = "x86_64-pc-linux-gnu"
define void @f() nounwind {
  call void @g()
  ret void
}
declare void @g() nounwind
!llvm.module.flags = !{!0}
!0 = !{i32 8, !"PIC Level", i32 2}

;--- taken.ll
target triple = "x86_64-pc-linux-gnu"
@__shapetrace_image_enabled = global i8 1
define void @f() nounwind {
  ret void
}
