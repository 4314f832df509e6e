; How instrumented code reads @__shapetrace_enabled: through the GOT in position-independent code
; (-fPIE, -fPIC: such objects are linked into shared libraries too); directly (`cmpb $0,
; flag(%rip)`, a copy relocation in the executable) when the module is not position-independent.
; The load is `unordered` (never torn, no ordering needed), which the backend folds into the cmp.
; RUN: split-file %s %t
; RUN: %opt_shapetrace -passes=shapetrace-instrument -S %t/pie.ll | FileCheck %s --check-prefix=GOT
; RUN: %opt_shapetrace -passes=shapetrace-instrument -S %t/static.ll | FileCheck %s --check-prefix=DIRECT
; -shapetrace-flag-access=direct: directly in position-independent code too (executables only).
; RUN: %opt_shapetrace -passes=shapetrace-instrument -shapetrace-flag-access=direct -S %t/pie.ll | FileCheck %s --check-prefix=DIRECT
; RUN: %opt_shapetrace -passes=shapetrace-instrument -shapetrace-flag-access=direct %t/pie.ll -o - | %llc_x86 -O2 -relocation-model=pic - -o - | FileCheck %s --check-prefix=DIRECT-ASM
; RUN: %opt_shapetrace -passes=shapetrace-instrument -S %t/pic.ll | FileCheck %s --check-prefix=GOT
; RUN: %opt_shapetrace -passes=shapetrace-instrument %t/static.ll -o - | %llc_x86 -O2 -relocation-model=static - -o - | FileCheck %s --check-prefix=DIRECT-ASM
; RUN: %opt_shapetrace -passes=shapetrace-instrument %t/pie.ll -o - | %llc_x86 -O2 -relocation-model=pic - -o - | FileCheck %s --check-prefix=GOT-ASM
; RUN: %opt_shapetrace -passes=shapetrace-instrument %t/pic.ll -o - | %llc_x86 -O2 -relocation-model=pic - -o - | FileCheck %s --check-prefix=GOT-ASM
; The same with one body:
; RUN: %opt_shapetrace -passes=shapetrace-instrument -shapetrace-detached=gate %t/static.ll -o - | %llc_x86 -O2 -relocation-model=static - -o - | FileCheck %s --check-prefix=GATE-ASM

; DIRECT: @__shapetrace_enabled = external dso_local global i8
; DIRECT: load atomic i8, ptr @__shapetrace_enabled unordered, align 1
; GOT: @__shapetrace_enabled = external global i8
; GOT: load atomic i8, ptr @__shapetrace_enabled unordered, align 1

; DIRECT-ASM-LABEL: f:
; DIRECT-ASM: cmpb $0, __shapetrace_enabled(%rip)
; DIRECT-ASM-NEXT: jne f.traced # TAILCALL
; GOT-ASM-LABEL: f:
; GOT-ASM: movq __shapetrace_enabled@GOTPCREL(%rip), %rax
; GOT-ASM-NEXT: cmpb $0, (%rax)
; GOT-ASM-NEXT: jne f.traced # TAILCALL
; GATE-ASM-LABEL: f:
; GATE-ASM: movzbl __shapetrace_enabled(%rip), %e{{[a-z0-9]+}}

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
