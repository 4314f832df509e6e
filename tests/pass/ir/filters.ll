; Functions left out: the opt-out attribute (and annotation), disable_sanitizer_instrumentation, the runtime's
; own names, naked functions, available_externally bodies, small loop-free leaves under
; -shapetrace-min-instructions, and the include/exclude rule file. Left-out functions get no
; hooks; each gets a remark saying why. Those the user's filters left out (the rule file, the
; minimum size) are listed in the table after every instrumented function, flagged
; SHAPETRACE_FUNCTION_EXCLUDED_BY_RULE (1) or _BY_SIZE (2), so the analysis knows what the
; recording cannot show; those the program marks or the pass cannot instrument are not.
; RUN: %opt_shapetrace -passes=shapetrace-instrument -shapetrace-detached=gate -pass-remarks-missed=shapetrace -S %s 2>%t.remarks | FileCheck %s --check-prefixes=CHECK,ALL
; RUN: FileCheck %s --check-prefix=REMARK < %t.remarks
; RUN: %opt_shapetrace -passes=shapetrace-instrument -shapetrace-detached=gate -shapetrace-min-instructions=4 -S %s | FileCheck %s --check-prefixes=CHECK,MIN
; RUN: %opt_shapetrace -passes=shapetrace-instrument -shapetrace-detached=gate -shapetrace-filter-file=%S/Inputs/rules.txt -pass-remarks-missed=shapetrace -S %s 2>%t.rules | FileCheck %s --check-prefixes=CHECK,RULES
; RUN: FileCheck %s --check-prefix=RULES-REMARK < %t.rules
; AArch64: the same choices.
; RUN: %aarch64_of %s | %opt_shapetrace -passes=shapetrace-instrument -shapetrace-detached=gate -S | FileCheck %s --check-prefixes=CHECK,ALL

; The table's flags in order: for the minimum size, nine instrumented functions then small_leaf;
; for the rule file, app::main() and helper_in_src then the eight functions its rules leave out
; (the opted-out, naked and runtime functions are not among them).
; RUN: %opt_shapetrace -passes=shapetrace-instrument -shapetrace-detached=gate -shapetrace-min-instructions=4 -S %s | grep '@__shapetrace_functions =' | grep -o 'i32 [0-9] }' | tr '\n' ' ' | FileCheck %s --check-prefix=MIN-FLAGS
; MIN-FLAGS: {{^}}i32 0 } i32 0 } i32 0 } i32 0 } i32 0 } i32 0 } i32 0 } i32 0 } i32 0 } i32 2 } {{$}}
; RUN: %opt_shapetrace -passes=shapetrace-instrument -shapetrace-detached=gate -shapetrace-filter-file=%S/Inputs/rules.txt -S %s | grep '@__shapetrace_functions =' | grep -o 'i32 [0-9] }' | tr '\n' ' ' | FileCheck %s --check-prefix=RULES-FLAGS
; RULES-FLAGS: {{^}}i32 0 } i32 0 } i32 1 } i32 1 } i32 1 } i32 1 } i32 1 } i32 1 } i32 1 } i32 1 } {{$}}

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-pc-linux-gnu"

@.str = private unnamed_addr constant [25 x i8] c"shapetrace_no_instrument\00", section "llvm.metadata"
@.other = private unnamed_addr constant [6 x i8] c"other\00", section "llvm.metadata"
@.file = private unnamed_addr constant [4 x i8] c"a.c\00", section "llvm.metadata"
@llvm.global.annotations = appending global [2 x { ptr, ptr, ptr, i32, ptr }] [
  { ptr, ptr, ptr, i32, ptr } { ptr @opted_out, ptr @.str, ptr @.file, i32 1, ptr null },
  { ptr, ptr, ptr, i32, ptr } { ptr @other_annotation, ptr @.other, ptr @.file, i32 2, ptr null }
], section "llvm.metadata"

; CHECK-LABEL: define void @opted_out()
; CHECK-NOT:     __shapetrace
; CHECK:         ret void
define void @opted_out() {
  call void @work()
  ret void
}
; REMARK: remark: {{.*}}'opted_out' not instrumented: marked SHAPETRACE_NO_INSTRUMENT (annotate)

; Another annotation does not opt out.
; ALL-LABEL: define void @other_annotation()
; ALL:         call void @__shapetrace_enter(
define void @other_annotation() {
  call void @work()
  ret void
}

; SHAPETRACE_NO_INSTRUMENT as <shapetrace/shapetrace.h> defines it: xray_never_instrument.
; CHECK-LABEL: define void @xray_never()
; CHECK-NOT:     __shapetrace
; CHECK:         ret void
define void @xray_never() "function-instrument"="xray-never" {
  call void @work()
  ret void
}
; REMARK: remark: {{.*}}'xray_never' not instrumented: marked SHAPETRACE_NO_INSTRUMENT (xray_never_instrument)

; CHECK-LABEL: define void @no_sanitize_instr()
; CHECK-NOT:     __shapetrace
; CHECK:         ret void
define void @no_sanitize_instr() disable_sanitizer_instrumentation {
  call void @work()
  ret void
}
; REMARK: remark: {{.*}}'no_sanitize_instr' not instrumented: marked disable_sanitizer_instrumentation

; CHECK-LABEL: define void @__shapetrace_helper()
; CHECK-NOT:     __shapetrace_enter
; CHECK:         ret void
define void @__shapetrace_helper() {
  call void @work()
  ret void
}
; REMARK: remark: {{.*}}'__shapetrace_helper' not instrumented: part of the shapetrace runtime

; CHECK-LABEL: define void @naked()
; CHECK-NOT:     __shapetrace
; CHECK:         unreachable
define void @naked() naked {
  call void asm sideeffect "ret", ""()
  unreachable
}
; REMARK: remark: {{.*}}'naked' not instrumented: naked

; CHECK-LABEL: define available_externally void @inline_elsewhere()
; CHECK-NOT:     __shapetrace
; CHECK:         ret void
define available_externally void @inline_elsewhere() {
  call void @work()
  ret void
}
; REMARK: remark: {{.*}}'inline_elsewhere' not instrumented: available_externally

; Three instructions, no call, no loop: left out at -shapetrace-min-instructions=4.
; ALL-LABEL: define i32 @small_leaf(i32 %x)
; ALL:         call void @__shapetrace_enter(
; MIN-LABEL: define i32 @small_leaf(i32 %x)
; MIN-NOT:     __shapetrace
; MIN:         ret i32
define i32 @small_leaf(i32 %x) {
  %a = add i32 %x, 1
  %b = mul i32 %a, %a
  ret i32 %b
}

; As small, but it calls: kept.
; MIN-LABEL: define void @small_caller()
; MIN:         call void @__shapetrace_enter(
define void @small_caller() {
  call void @work()
  ret void
}

; As small, but it loops: kept.
; MIN-LABEL: define void @small_loop(i32 %n)
; MIN:         call void @__shapetrace_enter(
define void @small_loop(i32 %n) {
entry:
  br label %loop
loop:
  %i = phi i32 [ 0, %entry ], [ %j, %loop ]
  %j = add i32 %i, 1
  %c = icmp ult i32 %j, %n
  br i1 %c, label %loop, label %out
out:
  ret void
}

; Four instructions: the threshold is "fewer than", so it is kept.
; MIN-LABEL: define i32 @leaf_at_threshold(i32 %x)
; MIN:         call void @__shapetrace_enter(
define i32 @leaf_at_threshold(i32 %x) {
  %a = add i32 %x, 1
  %b = mul i32 %a, %a
  %c = sub i32 %b, %x
  ret i32 %c
}

; Rules: app::* is included, app::noisy(...) excluded by a later rule, the rest by default
; (the file has include rules), a function defined under third_party excluded by file even
; though its name is included, and one under src/ included by file.
; RULES-LABEL: define void @_ZN3app4mainEv()
; RULES:         call void @__shapetrace_enter(
define void @_ZN3app4mainEv() {
  call void @work()
  ret void
}
; RULES-LABEL: define void @_ZN3app5noisyEi(i32 %x)
; RULES-NOT:     __shapetrace
; RULES:         ret void
define void @_ZN3app5noisyEi(i32 %x) {
  call void @work()
  ret void
}
; RULES-LABEL: define void @_ZN5other4workEv()
; RULES-NOT:     __shapetrace
; RULES:         ret void
define void @_ZN5other4workEv() {
  call void @work()
  ret void
}
; RULES-LABEL: define void @_ZN3app6vendorEv()
; RULES-NOT:     __shapetrace
; RULES:         ret void
define void @_ZN3app6vendorEv() !dbg !10 {
  call void @work()
  ret void
}
; RULES-LABEL: define void @helper_in_src()
; RULES:         call void @__shapetrace_enter(
define void @helper_in_src() !dbg !20 {
  call void @work()
  ret void
}
; RULES-REMARK-DAG: remark: {{.*}}'app::noisy(int)' not instrumented: {{.*}}rules.txt:4: excluded by 'app::noisy(*'
; RULES-REMARK-DAG: remark: {{.*}}'other::work()' not instrumented: matches no include rule of {{.*}}rules.txt
; RULES-REMARK-DAG: remark: {{.*}}'app::vendor()' not instrumented: {{.*}}rules.txt:6: excluded by '*/third_party/*'

declare void @work()

!llvm.dbg.cu = !{!0}
!llvm.module.flags = !{!2}
!0 = distinct !DICompileUnit(language: DW_LANG_C_plus_plus_14, file: !1, emissionKind: FullDebug)
!1 = !DIFile(filename: "main.cpp", directory: "/work/src")
!2 = !{i32 2, !"Debug Info Version", i32 3}
!10 = distinct !DISubprogram(name: "vendor", linkageName: "_ZN3app6vendorEv", scope: !11, file: !11, line: 5, type: !12, unit: !0, spFlags: DISPFlagDefinition)
!11 = !DIFile(filename: "third_party/vendor.cpp", directory: "/work")
!12 = !DISubroutineType(types: !{null})
!20 = distinct !DISubprogram(name: "helper_in_src", scope: !21, file: !21, line: 9, type: !12, unit: !0, spFlags: DISPFlagDefinition)
!21 = !DIFile(filename: "helper.c", directory: "/work/src")
