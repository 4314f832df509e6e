; Two bodies on AArch64 with AArch64 inline assembly: the copy must assemble. Relocation
; operators (`:lo12:sym`), numeric labels and labels unique per copy are cloned; a fixed label is
; gated in place, as on x86-64 (clone-fallbacks.ll), and its assembly is made convergent: the gate
; tests the flag before and after it, and AArch64's tail duplication would otherwise copy the
; block between the tests into both paths (".Lmark is already defined"; the OBJ run assembles it).
; RUN: %opt_shapetrace -passes=shapetrace-instrument,verify -pass-remarks-analysis=shapetrace -S %s 2>%t.remarks | FileCheck %s
; RUN: FileCheck %s --check-prefix=REMARK --implicit-check-not=remark: < %t.remarks
; RUN: %opt_shapetrace -passes=shapetrace-instrument %s | %llc_a64 -O2 -filetype=obj -o %t.o
; RUN: llvm-objdump -d %t.o | FileCheck %s --check-prefix=OBJ

; REMARK: remark: <unknown>:0:0: 'asm_fixed_label' gated in place, not cloned: its inline assembly defines a symbol, which a copy would define twice

; CHECK-LABEL: define i64 @asm_lo12(
; CHECK: musttail call i64 @asm_lo12.traced()
; CHECK-LABEL: define void @asm_numeric_label(
; CHECK: musttail call void @asm_numeric_label.traced()
; CHECK-LABEL: define void @asm_unique_label(
; CHECK: musttail call void @asm_unique_label.traced()
; CHECK-LABEL: define void @asm_fixed_label(
; CHECK: br i1 %shapetrace.on, label %shapetrace.hook, label
; CHECK: call void asm sideeffect ".Lmark: nop", ""() #[[CONVERGENT:[0-9]+]]
; CHECK-LABEL: define i64 @read_counter(
; CHECK: musttail call i64 @read_counter.traced()

; CHECK: attributes #[[CONVERGENT]] = { convergent }

; Both bodies hold the assembly; the fixed label is defined once.
; OBJ-LABEL: <asm_lo12>:
; OBJ: adrp x0, 0x0
; OBJ-LABEL: <asm_fixed_label>:
; OBJ: nop
; OBJ-NOT: nop
; OBJ: ret
; OBJ-LABEL: <read_counter>:
; OBJ: mrs x{{[0-9]+}}, CNTVCT_EL0
; OBJ-LABEL: <asm_lo12.traced>:
; OBJ: adrp x0, 0x0
; OBJ-LABEL: <read_counter.traced>:
; OBJ: mrs x{{[0-9]+}}, CNTVCT_EL0

target triple = "aarch64-unknown-linux-gnu"

@table = global i64 0

define i64 @asm_lo12() nounwind {
  %v = call i64 asm "adrp x0, table\0A\09add x0, x0, :lo12:table", "={x0}"()
  ret i64 %v
}

define void @asm_numeric_label() nounwind {
  call void asm sideeffect "1: nop\0A\09b 1f\0A1:", ""()
  ret void
}

define void @asm_unique_label() nounwind {
  call void asm sideeffect "here${:uid}: nop", ""()
  ret void
}

define void @asm_fixed_label() nounwind {
  call void asm sideeffect ".Lmark: nop", ""()
  ret void
}

define i64 @read_counter() nounwind {
  %v = call i64 asm sideeffect "isb\0A\09mrs $0, cntvct_el0", "=r"()
  ret i64 %v
}
