; Two bodies per function (-shapetrace-detached=clone, the default): F keeps its ordinary body
; behind one load and test of @__shapetrace_image_enabled, and when recording is on tail-calls
; (musttail) F.traced, an internal copy with the hooks called unconditionally. One table entry and
; one id per source function; the copy reports the function's id.
; RUN: %opt_shapetrace -passes=shapetrace-instrument,verify -pass-remarks-analysis=shapetrace -S %s 2>%t.remarks | FileCheck %s
; RUN: FileCheck %s --check-prefix=REMARK < %t.remarks
; RUN: %opt_shapetrace -passes=shapetrace-instrument %s -o - | %llc_x86 -O2 - -o - | FileCheck %s --check-prefix=ASM
; Debug information: the copy's frames are named as the function's by a symbolizer.
; RUN: %opt_shapetrace -passes=shapetrace-instrument %s -o - | %llc_x86 -O2 -filetype=obj - -o %t.o
; RUN: llvm-symbolizer --obj=%t.o with_dbg with_dbg.traced | FileCheck %s --check-prefix=SYM
; AArch64: the same shape; the test does not touch the argument registers, x8 (sret) included.
; RUN: %aarch64_of %s | %opt_shapetrace -passes=shapetrace-instrument,verify -pass-remarks-analysis=shapetrace -S 2>%t.a64.remarks | FileCheck %s
; RUN: FileCheck %s --check-prefix=REMARK < %t.a64.remarks
; RUN: %aarch64_of %s | %opt_shapetrace -passes=shapetrace-instrument | %llc_a64 -O2 - -o - | FileCheck %s --check-prefix=A64
; RUN: %aarch64_of %s | %opt_shapetrace -passes=shapetrace-instrument | %llc_a64 -O2 -filetype=obj - -o %t.a64.o
; RUN: llvm-symbolizer --obj=%t.a64.o with_dbg with_dbg.traced | FileCheck %s --check-prefix=SYM
; The explicit choice of one body is honoured.
; RUN: %opt_shapetrace -passes=shapetrace-instrument -shapetrace-detached=gate -S %s | FileCheck %s --check-prefix=GATE
; RUN: not %opt_shapetrace -passes=shapetrace-instrument -shapetrace-detached=sometimes -disable-output %s 2>&1 | FileCheck %s --check-prefix=BAD

source_filename = "src/clone.c"
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-pc-linux-gnu"

%struct.big = type { [8 x i64] }
$inline_fn = comdat any

; Each source function once in the table: the copies add no entry.
; CHECK: @__shapetrace_functions = private constant [12 x

; The static allocas stay in the entry block (hoisted above the test when further down), the
; test comes next, and the ordinary body follows untouched: no hook in it.
; CHECK-LABEL: define i32 @plain(i32 %x) {
; CHECK-NEXT: %slot = alloca i32
; CHECK-NEXT: %late = alloca i32
; CHECK-NEXT: %shapetrace.flag = load atomic i8, ptr @__shapetrace_image_enabled unordered, align 1
; CHECK-NEXT: %shapetrace.on = icmp ne i8 %shapetrace.flag, 0
; CHECK-NEXT: br i1 %shapetrace.on, label %shapetrace.traced, label %[[BODY:.*]], !prof [[UNLIKELY:![0-9]+]]
; CHECK: shapetrace.traced:
; CHECK-NEXT: %[[R:.*]] = musttail call i32 @plain.traced(i32 %x)
; CHECK-NEXT: ret i32 %[[R]]
; CHECK: [[BODY]]:
; CHECK-NOT: __shapetrace
; CHECK: ret i32
define i32 @plain(i32 %x) {
  %slot = alloca i32
  store i32 %x, ptr %slot
  %late = alloca i32
  store i32 %x, ptr %late
  %v = load i32, ptr %slot
  ret i32 %v
}

; Variadic arguments are forwarded by the musttail call (`...`).
; CHECK-LABEL: define i32 @variadic(ptr %fmt, ...) {
; CHECK: %[[R:.*]] = musttail call i32 (ptr, ...) @variadic.traced(ptr %fmt, ...)
; CHECK-NEXT: ret i32 %[[R]]
; CHECK-NOT: __shapetrace
; CHECK: call void @llvm.va_start
define i32 @variadic(ptr %fmt, ...) {
  %ap = alloca [24 x i8], align 16
  call void @llvm.va_start.p0(ptr %ap)
  %n = call i32 @vconsume(ptr %fmt, ptr %ap)
  call void @llvm.va_end.p0(ptr %ap)
  ret i32 %n
}

; The arguments' ABI attributes are the call's, as musttail requires (sret, zeroext).
; CHECK-LABEL: define void @returns_big(ptr sret(%struct.big) align 8 %out, i8 zeroext %c) {
; CHECK: musttail call void @returns_big.traced(ptr sret(%struct.big) align 8 %out, i8 zeroext %c)
; CHECK-NEXT: ret void
define void @returns_big(ptr sret(%struct.big) align 8 %out, i8 zeroext %c) {
  store i8 %c, ptr %out
  ret void
}

; Exceptions: the ordinary body keeps its catch-only landing pad and gets no unwind hook; the
; copy's pad is made a cleanup, its resume records the unwind exit, and its call that would throw
; straight to the caller unwinds through the copy's own cleanup pad.
; CHECK-LABEL: define void @catches() personality ptr @__gxx_personality_v0 {
; CHECK: musttail call void @catches.traced()
; CHECK-NOT: __shapetrace
; CHECK: landingpad { ptr, i32 }
; CHECK-NEXT: catch ptr @int_typeinfo
; CHECK-NOT: __shapetrace
; CHECK: resume
define void @catches() personality ptr @__gxx_personality_v0 {
  invoke void @may_throw()
          to label %done unwind label %lpad
done:
  call void @may_throw()
  ret void
lpad:
  %lp = landingpad { ptr, i32 }
          catch ptr @int_typeinfo
  resume { ptr, i32 } %lp
}

; A function without a personality keeps none; its copy gets the module's.
; CHECK-LABEL: define void @throws_through() {
; CHECK: musttail call void @throws_through.traced()
; CHECK-NOT: __shapetrace
; CHECK: call void @may_throw()
define void @throws_through() {
  call void @may_throw()
  ret void
}

; A tail call in the body: the copy records the exit before it, so the call stays a jump.
; CHECK-LABEL: define i32 @tail(i32 %x) {
; CHECK: musttail call i32 @tail.traced(i32 %x)
; CHECK-NOT: __shapetrace
; CHECK: tail call i32 @callee(i32 %x)
define i32 @tail(i32 %x) {
  %r = tail call i32 @callee(i32 %x)
  ret i32 %r
}

; An inline function: the copy is discarded with it, in its comdat.
; CHECK-LABEL: define linkonce_odr void @inline_fn() comdat {
; CHECK: musttail call void @inline_fn.traced()
define linkonce_odr void @inline_fn() comdat {
  ret void
}

; Internal functions with fastcc (GlobalOpt's choice) are cloned with their convention.
; CHECK-LABEL: define internal fastcc void @fast() {
; CHECK: musttail call fastcc void @fast.traced()
define internal fastcc void @fast() {
  ret void
}

define void @calls_fast() {
  call fastcc void @fast()
  ret void
}

; Where a musttail call cannot forward the arguments, or the copy could not stand in for the
; body, the function is gated in place (one body, each hook behind the entry's test): an argument
; passed by value on the stack, a label whose address is taken (computed goto).
; CHECK-LABEL: define void @by_value(ptr byval(%struct.big) align 8 %p) {
; CHECK: %shapetrace.on = icmp ne i8 %shapetrace.flag, 0
; CHECK-NEXT: br i1 %shapetrace.on, label %shapetrace.hook, label
; CHECK: call void @__shapetrace_enter(
; CHECK: call void @__shapetrace_exit(
; REMARK: remark: <unknown>:0:0: 'by_value' gated in place, not cloned: it takes an argument by value on the stack
define void @by_value(ptr byval(%struct.big) align 8 %p) {
  ret void
}

; CHECK-LABEL: define i32 @computed_goto(i1 %c) {
; CHECK: br i1 %shapetrace.on, label %shapetrace.hook, label
; REMARK: remark: <unknown>:0:0: 'computed_goto' gated in place, not cloned: the address of one of its labels is taken
define i32 @computed_goto(i1 %c) {
entry:
  %target = select i1 %c, ptr blockaddress(@computed_goto, %one), ptr blockaddress(@computed_goto, %two)
  indirectbr ptr %target, [label %one, label %two]
one:
  ret i32 1
two:
  ret i32 2
}

; With debug information, the call of the copy has the function's opening line.
; CHECK-LABEL: define void @with_dbg()
; CHECK-SAME: !dbg [[SP:![0-9]+]] {
; CHECK: musttail call void @with_dbg.traced(), !dbg [[CALL_LOC:![0-9]+]]
define void @with_dbg() !dbg !6 {
  call void @may_throw(), !dbg !9
  ret void, !dbg !9
}

; The copies, after the originals: internal, noinline, the hooks unconditional, the function's
; id (base + local index).
; CHECK-LABEL: define internal i32 @plain.traced(i32 %x)
; CHECK-SAME: #[[TRACED_ATTRS:[0-9]+]] {
; CHECK-NEXT: %slot = alloca i32
; CHECK-NEXT: %late = alloca i32
; CHECK-NEXT: %shapetrace.base = load i32, ptr @__shapetrace_base_id
; CHECK-NEXT: call void @__shapetrace_enter(i32 %shapetrace.base)
; CHECK-NEXT: store i32 %x, ptr %slot
; CHECK: %shapetrace.base1 = load i32, ptr @__shapetrace_base_id
; CHECK-NEXT: call void @__shapetrace_exit(i32 %shapetrace.base1)
; CHECK-NEXT: ret i32

; CHECK-LABEL: define internal i32 @variadic.traced(ptr %fmt, ...)
; CHECK-SAME: #[[TRACED_ATTRS]] personality ptr @__gxx_personality_v0 {
; CHECK: %shapetrace.id = add i32 %shapetrace.base, 1
; CHECK-NEXT: call void @__shapetrace_enter(i32 %shapetrace.id)
; CHECK: call void @llvm.va_start
; CHECK: call void @__shapetrace_exit(

; CHECK-LABEL: define internal void @returns_big.traced(ptr sret(%struct.big) align 8 %out, i8 zeroext %c)

; CHECK-LABEL: define internal void @catches.traced()
; CHECK-SAME: #[[TRACED_ATTRS]] personality ptr @__gxx_personality_v0 {
; CHECK: call void @__shapetrace_enter(
; CHECK: invoke void @may_throw()
; CHECK: landingpad { ptr, i32 }
; CHECK-NEXT: cleanup
; CHECK-NEXT: catch ptr @int_typeinfo
; CHECK: call void @__shapetrace_unwind_exit(
; CHECK-NEXT: resume

; CHECK-LABEL: define internal void @throws_through.traced()
; CHECK-SAME: #[[TRACED_ATTRS]] personality ptr @__gxx_personality_v0 {
; CHECK: invoke void @may_throw()
; CHECK-NEXT: to label %{{.*}} unwind label %shapetrace.unwind
; CHECK: call void @__shapetrace_exit(

; CHECK-LABEL: define internal i32 @tail.traced(i32 %x)
; CHECK: call void @__shapetrace_exit(
; CHECK-NEXT: %r = tail call i32 @callee(i32 %x)
; CHECK-NEXT: ret i32 %r

; CHECK-LABEL: define internal void @inline_fn.traced()
; CHECK-SAME: #[[TRACED_ATTRS]] comdat($inline_fn) {
; CHECK-LABEL: define internal fastcc void @fast.traced()
; CHECK-NOT: define internal {{.*}}@by_value.traced
; CHECK-NOT: define internal {{.*}}@computed_goto.traced

; The copy's DISubprogram is its own, with the function's name and line.
; CHECK-LABEL: define internal void @with_dbg.traced()
; CHECK-SAME: #[[TRACED_ATTRS]] personality ptr @__gxx_personality_v0 !dbg [[TRACED_SP:![0-9]+]] {
; CHECK: call void @__shapetrace_enter(i32 %{{.*}}), !dbg [[ENTRY_LOC:![0-9]+]]

; CHECK: attributes #[[TRACED_ATTRS]] = { noinline }
; CHECK-DAG: [[UNLIKELY]] = !{!"branch_weights", i32 1, i32 1048575}
; CHECK-DAG: [[SP]] = distinct !DISubprogram(name: "with_dbg", scope: !{{[0-9]+}}, file: !{{[0-9]+}}, line: 3,
; CHECK-DAG: [[TRACED_SP]] = distinct !DISubprogram(name: "with_dbg", scope: !{{[0-9]+}}, file: !{{[0-9]+}}, line: 3,
; CHECK-DAG: [[CALL_LOC]] = !DILocation(line: 3, scope: [[SP]])
; CHECK-DAG: [[ENTRY_LOC]] = !DILocation(line: 3, scope: [[TRACED_SP]])

; The ordinary body's code: the test and a conditional jump to the copy, then the body without a
; frame set up for the hooks.
; ASM-LABEL: plain:
; ASM-NEXT: .Lfunc_begin0:
; ASM-NEXT: .cfi_startproc
; ASM-NEXT: # %bb.0:
; ASM-NEXT: cmpb $0, __shapetrace_image_enabled(%rip)
; ASM-NEXT: jne plain.traced # TAILCALL
; ASM-NOT: __shapetrace
; ASM: retq
; Variadic: the test after the register save area's stores, %al (the count of vector
; registers used) kept for the jump.
; ASM-LABEL: variadic:
; ASM: testb %al, %al
; ASM: cmpb $0, __shapetrace_image_enabled(%rip)
; ASM-NOT: %al
; ASM: jmp variadic.traced # TAILCALL
; ASM-LABEL: plain.traced:
; ASM: callq *__shapetrace_enter@GOTPCREL(%rip)
; ASM: callq *__shapetrace_exit@GOTPCREL(%rip)

; AArch64: the flag read PC-relative (adrp + ldrb, the image's hidden flag), a conditional
; branch to a plain `b` into the copy: no frame set up, the argument registers untouched.
; A64-LABEL: plain:
; A64: adrp [[FLAG:x[0-9]+]], __shapetrace_image_enabled
; A64-NEXT: ldrb w{{[0-9]+}}, [[[FLAG]], :lo12:__shapetrace_image_enabled]
; A64-NEXT: cbnz w{{[0-9]+}}, [[TRACED:.LBB[0-9_]+]]
; A64-NOT: __shapetrace
; A64: ret
; A64: [[TRACED]]:
; A64-NEXT: b plain.traced
; Variadic: the jump leaves x0-x7 and q0-q7 (the variadic arguments) as they came: the register
; save area's stores only read them, and the frame is popped before the branch.
; A64-LABEL: variadic:
; A64: stp q6, q7, [sp, #96]
; A64-NEXT: ldrb w{{[0-9]+}}, [x{{[0-9]+}}, :lo12:__shapetrace_image_enabled]
; A64-NEXT: cbnz w{{[0-9]+}}, [[TRACED:.LBB[0-9_]+]]
; A64: [[TRACED]]:
; A64-NOT: {{[xwqd][0-7]([^0-9]|$)}}
; A64: add sp, sp, #{{[0-9]+}}
; A64-NEXT: b variadic.traced
; A64-LABEL: returns_big:
; A64: adrp x9, __shapetrace_image_enabled
; A64-NEXT: ldrb w9, [x9, :lo12:__shapetrace_image_enabled]
; A64-NEXT: cbnz w9, [[TRACED:.LBB[0-9_]+]]
; A64-NEXT: // %bb.1:
; A64-NEXT: strb w0, [x8]
; A64-NEXT: ret
; A64-NEXT: [[TRACED]]:
; A64-NEXT: b returns_big.traced
; The copy calls the hooks through the GOT (nonlazybind: no PLT stub), as on x86-64.
; A64-LABEL: plain.traced:
; A64: ldr [[ENTER:x[0-9]+]], [x{{[0-9]+}}, :got_lo12:__shapetrace_enter]
; A64: blr [[ENTER]]
; A64: ldr [[EXIT:x[0-9]+]], [x{{[0-9]+}}, :got_lo12:__shapetrace_exit]
; A64: blr [[EXIT]]
; A64: ret

; SYM: with_dbg
; SYM-NEXT: /src/clone.c:3:0
; SYM-EMPTY:
; SYM-NEXT: with_dbg
; SYM-NEXT: /src/clone.c:3:0

; GATE-NOT: .traced
; GATE-LABEL: define i32 @plain(i32 %x) {
; GATE: br i1 %shapetrace.on, label %shapetrace.hook, label

; BAD: for the --shapetrace-detached option: Cannot find option named 'sometimes'!

declare i32 @vconsume(ptr, ptr)
declare void @llvm.va_start.p0(ptr)
declare void @llvm.va_end.p0(ptr)
declare void @may_throw()
declare i32 @callee(i32)
declare i32 @__gxx_personality_v0(...)
@int_typeinfo = external constant ptr

!llvm.dbg.cu = !{!0}
!llvm.module.flags = !{!3, !4}

!0 = distinct !DICompileUnit(language: DW_LANG_C11, file: !1, producer: "clang", isOptimized: true, runtimeVersion: 0, emissionKind: FullDebug)
!1 = !DIFile(filename: "clone.c", directory: "/src")
!3 = !{i32 7, !"Dwarf Version", i32 5}
!4 = !{i32 2, !"Debug Info Version", i32 3}
!6 = distinct !DISubprogram(name: "with_dbg", scope: !1, file: !1, line: 3, type: !7, scopeLine: 3, spFlags: DISPFlagDefinition | DISPFlagOptimized, unit: !0)
!7 = !DISubroutineType(types: !8)
!8 = !{null}
!9 = !DILocation(line: 4, column: 3, scope: !6)
