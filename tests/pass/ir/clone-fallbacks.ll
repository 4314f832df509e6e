; Two bodies, where the copy would not be a faithful second body: inline assembly that defines a
; symbol (a global or fixed local label, .equiv) would define it twice and fail to assemble, and a
; noduplicate call must not get a second call site; such functions are gated in place, with a
; remark. Numeric labels, labels made unique per copy (%= is ${:uid} in IR) and asm without labels
; are cloned. Instrumentation added after the pass (-pg, XRay, patchable entries) stays F's only:
; the copy is entered only through F.
; RUN: %opt_shapetrace -passes=shapetrace-instrument,verify -pass-remarks-analysis=shapetrace -S %s 2>%t.remarks | FileCheck %s
; RUN: FileCheck %s --check-prefix=REMARK --implicit-check-not=remark: < %t.remarks
; RUN: %opt_shapetrace -passes=shapetrace-instrument %s | %llc_x86 -O2 -filetype=obj -o %t.o
; AArch64: the same choices (the x86 assembly is not assembled there: clone-fallbacks-aarch64.ll
; assembles its own).
; RUN: %aarch64_of %s | %opt_shapetrace -passes=shapetrace-instrument,verify -pass-remarks-analysis=shapetrace -S 2>%t.a64.remarks | FileCheck %s
; RUN: FileCheck %s --check-prefix=REMARK --implicit-check-not=remark: < %t.a64.remarks

; REMARK: remark: <unknown>:0:0: 'asm_global_label' gated in place, not cloned: its inline assembly defines a symbol, which a copy would define twice
; REMARK: remark: <unknown>:0:0: 'asm_fixed_local_label' gated in place, not cloned: its inline assembly defines a symbol, which a copy would define twice
; REMARK: remark: <unknown>:0:0: 'asm_equiv' gated in place, not cloned: its inline assembly defines a symbol, which a copy would define twice
; REMARK: remark: <unknown>:0:0: 'no_duplicate' gated in place, not cloned: it makes a call that must not be duplicated (noduplicate)
; REMARK: remark: <unknown>:0:0: 'asm_macro' gated in place, not cloned: its inline assembly defines a symbol, which a copy would define twice
; REMARK: remark: <unknown>:0:0: 'asm_operand_label' gated in place, not cloned: its inline assembly defines a symbol, which a copy would define twice
; REMARK: remark: <unknown>:0:0: 'asm_quoted_label' gated in place, not cloned: its inline assembly defines a symbol, which a copy would define twice

; CHECK-LABEL: define i32 @asm_global_label(
; CHECK: br i1 %shapetrace.on, label %shapetrace.hook, label
; CHECK-LABEL: define void @asm_fixed_local_label(
; CHECK: br i1 %shapetrace.on, label %shapetrace.hook, label
; CHECK-LABEL: define void @asm_equiv(
; CHECK: br i1 %shapetrace.on, label %shapetrace.hook, label
; CHECK-LABEL: define void @asm_numeric_label(
; CHECK: musttail call void @asm_numeric_label.traced()
; CHECK-LABEL: define void @asm_unique_label(
; CHECK: musttail call void @asm_unique_label.traced()
; CHECK-LABEL: define void @asm_operands(
; CHECK: musttail call void @asm_operands.traced(ptr %p)
; CHECK-LABEL: define void @no_duplicate(
; CHECK: br i1 %shapetrace.on, label %shapetrace.hook, label
; CHECK-LABEL: define void @asm_macro(
; CHECK: br i1 %shapetrace.on, label %shapetrace.hook, label
; CHECK-LABEL: define void @asm_operand_label(
; CHECK: br i1 %shapetrace.on, label %shapetrace.hook, label
; CHECK-LABEL: define void @asm_quoted_label(
; CHECK: br i1 %shapetrace.on, label %shapetrace.hook, label
; A segment override is not a label.
; CHECK-LABEL: define i64 @asm_segment(
; CHECK: musttail call i64 @asm_segment.traced()
; CHECK: define void @profiled() [[PROFILED:#[0-9]+]] {
; CHECK: musttail call void @profiled.traced()
; CHECK: define internal void @profiled.traced() [[COPY:#[0-9]+]] {
; CHECK: attributes [[PROFILED]] = { nounwind "function-instrument"="xray-always" "instrument-function-entry-inlined"="mcount" "patchable-function-entry"="5" }
; CHECK: attributes [[COPY]] = { noinline nounwind }

target triple = "x86_64-pc-linux-gnu"

declare void @barrier() noduplicate nounwind

define i32 @asm_global_label(i32 %x) nounwind {
  call void asm sideeffect ".globl probe_here\0Aprobe_here:\0A\09nop", ""()
  ret i32 %x
}

define void @asm_fixed_local_label() nounwind {
  call void asm sideeffect ".Lmark: nop", ""()
  ret void
}

define void @asm_equiv() nounwind {
  call void asm sideeffect ".equiv answer, 42", ""()
  ret void
}

define void @asm_numeric_label() nounwind {
  call void asm sideeffect "1: nop; jmp 1f; 1:", ""()
  ret void
}

define void @asm_unique_label() nounwind {
  call void asm sideeffect "here${:uid}: nop", ""()
  ret void
}

define void @asm_operands(ptr %p) nounwind {
  call void asm sideeffect "movl $$1, $0", "=*m"(ptr elementtype(i32) %p)
  ret void
}

define void @no_duplicate() nounwind {
  call void @barrier() noduplicate
  ret void
}

define void @asm_macro() nounwind {
  call void asm sideeffect ".macro deflbl name\0A\5Cname:\0A.endm\0Adeflbl macro_lbl\0A.purgem deflbl", ""()
  ret void
}

define void @asm_operand_label() nounwind {
  call void asm sideeffect ".Lop_${0:c}:\0A\09nop", "i"(i32 7)
  ret void
}

define void @asm_quoted_label() nounwind {
  call void asm sideeffect "\22quoted.sym\22:\0A\09nop", ""()
  ret void
}

define i64 @asm_segment() nounwind {
  %v = call i64 asm "movq %fs:0, $0", "=r"()
  ret i64 %v
}

define void @profiled() #0 {
  ret void
}

attributes #0 = { nounwind "instrument-function-entry-inlined"="mcount" "function-instrument"="xray-always" "patchable-function-entry"="5" }
