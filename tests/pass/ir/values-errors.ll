; Values that cannot be recorded, and choices that cannot be read: each stops the compilation with
; a message naming the function, the value and why. The IR signature decides (a struct passed in
; memory is `byval`, one passed in registers an aggregate or array type); with debug information the
; source's parameter types also catch a struct the ABI packed into one integer register, a
; struct split over several (the positions would shift), and show an unsigned integer unsigned.
; RUN: split-file %s %t
; RUN: not %opt_shapetrace -passes=shapetrace-instrument -shapetrace-args='memory@arg1' -disable-output %t/sig.ll 2>&1 | FileCheck %s --check-prefix=MEMORY
; MEMORY: error: shapetrace: arg1 of 'memory' is passed in memory (a struct or class by value): only integers up to 64 bits, pointers, float and double can be recorded
; RUN: not %opt_shapetrace -passes=shapetrace-instrument -shapetrace-args='registers@arg2' -disable-output %t/sig.ll 2>&1 | FileCheck %s --check-prefix=REGISTERS
; REGISTERS: error: shapetrace: arg2 of 'registers' has IR type [2 x i64] (a struct or array the ABI passes in registers): only integers up to 64 bits, pointers, float and double can be recorded
; RUN: not %opt_shapetrace -passes=shapetrace-instrument -shapetrace-args='pair@retval' -disable-output %t/sig.ll 2>&1 | FileCheck %s --check-prefix=PAIR
; PAIR: error: shapetrace: the return value of 'pair' has IR type { i64, i64 } (a struct or array the ABI passes in registers): only integers up to 64 bits, pointers, float and double can be recorded
; RUN: not %opt_shapetrace -passes=shapetrace-instrument -shapetrace-args='wide@arg1' -disable-output %t/sig.ll 2>&1 | FileCheck %s --check-prefix=WIDE
; WIDE: error: shapetrace: arg1 of 'wide' has IR type i128 (wider than 64 bits or not a scalar): only integers up to 64 bits, pointers, float and double can be recorded
; RUN: not %opt_shapetrace -passes=shapetrace-instrument -shapetrace-args='longdouble@retval' -disable-output %t/sig.ll 2>&1 | FileCheck %s --check-prefix=LONGDOUBLE
; LONGDOUBLE: error: shapetrace: the return value of 'longdouble' has IR type x86_fp80 (wider than 64 bits or not a scalar)
; RUN: not %opt_shapetrace -passes=shapetrace-instrument -shapetrace-args='vector@arg1' -disable-output %t/sig.ll 2>&1 | FileCheck %s --check-prefix=VECTOR
; VECTOR: error: shapetrace: arg1 of 'vector' has IR type <4 x float> (wider than 64 bits or not a scalar)
; RUN: not %opt_shapetrace -passes=shapetrace-instrument -shapetrace-args='memory@retval' -disable-output %t/sig.ll 2>&1 | FileCheck %s --check-prefix=SRET
; SRET: error: shapetrace: 'memory' returns a struct in memory (sret): no return value can be recorded
; RUN: not %opt_shapetrace -passes=shapetrace-instrument -shapetrace-args='wide@retval' -disable-output %t/sig.ll 2>&1 | FileCheck %s --check-prefix=VOID
; VOID: error: shapetrace: 'wide' returns nothing (void)
; The sret pointer is not an argument: `memory` has one.
; RUN: not %opt_shapetrace -passes=shapetrace-instrument -shapetrace-args='memory@arg2' -disable-output %t/sig.ll 2>&1 | FileCheck %s --check-prefix=RANGE
; RANGE: error: shapetrace: 'memory' has 1 arguments (`this` counted, an sret pointer not), no arg2
; AArch64: the same refusals.
; RUN: %aarch64_of %t/sig.ll > %t/sig-a64.ll
; RUN: not %opt_shapetrace -passes=shapetrace-instrument -shapetrace-args='registers@arg2' -disable-output %t/sig-a64.ll 2>&1 | FileCheck %s --check-prefix=REGISTERS
; RUN: not %opt_shapetrace -passes=shapetrace-instrument -shapetrace-args='memory@arg1' -disable-output %t/sig-a64.ll 2>&1 | FileCheck %s --check-prefix=MEMORY

; With debug information.
; RUN: not %opt_shapetrace -passes=shapetrace-instrument -shapetrace-args='packed@arg1' -disable-output %t/debug.ll 2>&1 | FileCheck %s --check-prefix=PACKED
; PACKED: error: shapetrace: arg1 of 'packed' is a struct, class or union by value (the ABI passes it in registers or as a hidden reference): only integers up to 64 bits, pointers, float and double can be recorded
; RUN: not %opt_shapetrace -passes=shapetrace-instrument -shapetrace-args='split@arg2' -disable-output %t/debug.ll 2>&1 | FileCheck %s --check-prefix=SPLIT
; SPLIT: error: shapetrace: 'split' has 2 parameters in the source and 3 arguments in the IR, which do not correspond (a struct by value split over several registers or packed with another, or arguments the optimiser removed from this internal function): argument positions would not be the source's, so none can be recorded; SHAPETRACE_PASS_MODE=before-inlining records functions as the source declares them
; An unsigned int (i32 without zeroext on x86-64) is recorded unsigned: zero-extended, type 1.
; RUN: %opt_shapetrace -passes=shapetrace-instrument -shapetrace-args='unsigned_size@arg1,retval' -S %t/debug.ll | FileCheck %s --check-prefix=UNSIGNED
; UNSIGNED-LABEL: define internal i32 @unsigned_size.traced(
; UNSIGNED:         %shapetrace.value = zext i32 %n to i64
; UNSIGNED-NEXT:    call void @__shapetrace_value(i32 %{{.*}}, i32 257, i64 %shapetrace.value)
; UNSIGNED:         call void @__shapetrace_value(i32 %{{.*}}, i32 256, i64 %shapetrace.value{{[0-9]+}})
; An enumeration is its underlying integer (an enumeration is a composite type in the debug
; information, not a struct): `enum Mode : unsigned` recorded unsigned, type 1.
; RUN: %opt_shapetrace -passes=shapetrace-instrument -shapetrace-args='mode@arg1' -S %t/debug.ll | FileCheck %s --check-prefix=ENUM
; ENUM-LABEL: define internal i32 @mode.traced(
; ENUM:         %shapetrace.value = zext i32 %m to i64
; ENUM-NEXT:    call void @__shapetrace_value(i32 %{{.*}}, i32 257, i64 %shapetrace.value)

; A copy the optimiser made (function specialisation, constant propagation) has arguments of its
; own: it records nothing, with a remark.
; RUN: %opt_shapetrace -passes=shapetrace-instrument -shapetrace-args='scaled*@arg1' -pass-remarks-missed=shapetrace -S %t/sig.ll 2>&1 | FileCheck %s --check-prefix=COPY
; COPY: remark: <unknown>:0:0: 'scaled.specialized.1' records no values: a copy the optimiser made, whose arguments are not the source's
; COPY-NOT: call void @__shapetrace_value

; Choices that cannot be read.
; RUN: not %opt_shapetrace -passes=shapetrace-instrument -shapetrace-args='memory' -disable-output %t/sig.ll 2>&1 | FileCheck %s --check-prefix=NOVALUE
; NOVALUE: error: shapetrace: -shapetrace-args: 'memory' names no value: expected FUNCTION@argN or FUNCTION@retval
; RUN: not %opt_shapetrace -passes=shapetrace-instrument -shapetrace-args='memory@arg0' -disable-output %t/sig.ll 2>&1 | FileCheck %s --check-prefix=ARG0
; ARG0: error: shapetrace: -shapetrace-args: 'arg0' for 'memory' is not a value: expected argN (N from 1 to 255) or retval
; RUN: not %opt_shapetrace -passes=shapetrace-instrument -shapetrace-args='memory@arg1,ret' -disable-output %t/sig.ll 2>&1 | FileCheck %s --check-prefix=RET
; RET: error: shapetrace: -shapetrace-args: 'ret' for 'memory' is not a value: expected argN (N from 1 to 255) or retval
; RUN: not %opt_shapetrace -passes=shapetrace-instrument -shapetrace-args='@arg1' -disable-output %t/sig.ll 2>&1 | FileCheck %s --check-prefix=NOFUNCTION
; NOFUNCTION: error: shapetrace: -shapetrace-args: a value without a function: expected FUNCTION@argN or FUNCTION@retval
; RUN: not %opt_shapetrace -passes=shapetrace-instrument -shapetrace-args='f[@arg1' -disable-output %t/sig.ll 2>&1 | FileCheck %s --check-prefix=BADGLOB
; BADGLOB: error: shapetrace: -shapetrace-args: bad pattern 'f[': invalid glob pattern, unmatched '['
; In a rule file, the message names the file and the line.
; RUN: printf 'include *\nargs memory@arg256\n' > %t/rules
; RUN: not %opt_shapetrace -passes=shapetrace-instrument -shapetrace-filter-file=%t/rules -disable-output %t/sig.ll 2>&1 | FileCheck %s --check-prefix=RULE
; RULE: error: shapetrace: {{.*}}rules:2: 'arg256' for 'memory' is not a value: expected argN (N from 1 to 255) or retval


; Strings (`/s`): a pointer is recorded with type 4 (SHAPETRACE_VALUE_STRING, descriptor 4 << 8 | N),
; from the variable or a rule file; a value that is not a pointer and a format but /s are refused.
; RUN: printf 'include *\nargs text@arg1/s,arg2,retval/s\n' > %t/string-rules
; RUN: %opt_shapetrace -passes=shapetrace-instrument -shapetrace-filter-file=%t/string-rules -S %t/sig.ll | FileCheck %s --check-prefix=STRING
; STRING-LABEL: define internal ptr @text.traced(
; STRING:         %shapetrace.value = ptrtoint ptr %s to i64
; STRING-NEXT:    call void @__shapetrace_value(i32 %{{.*}}, i32 1025, i64 %shapetrace.value)
; STRING:         call void @__shapetrace_value(i32 %{{.*}}, i32 2, i64 %shapetrace.value{{[0-9]+}})
; STRING:         call void @__shapetrace_value(i32 %{{.*}}, i32 1024, i64 %shapetrace.value{{[0-9]+}})
; RUN: not %opt_shapetrace -passes=shapetrace-instrument -shapetrace-args='text@arg2/s' -disable-output %t/sig.ll 2>&1 | FileCheck %s --check-prefix=NOTPOINTER
; NOTPOINTER: error: shapetrace: arg2 of 'text' has IR type i32: /s records a const char* or (with debug information, -g) a std::string_view, and this is neither
; RUN: printf 'include *\nargs text@arg1/d\n' > %t/format-rules
; RUN: not %opt_shapetrace -passes=shapetrace-instrument -shapetrace-filter-file=%t/format-rules -disable-output %t/sig.ll 2>&1 | FileCheck %s --check-prefix=FORMAT
; FORMAT: error: shapetrace: {{.*}}format-rules:2: 'arg1/d': '/d' is not a format this pass knows (only /s, a const char* or std::string_view recorded as its text)
; RUN: not %opt_shapetrace -passes=shapetrace-instrument -shapetrace-args='text@arg1/' -disable-output %t/sig.ll 2>&1 | FileCheck %s --check-prefix=EMPTYFORMAT
; EMPTYFORMAT: error: shapetrace: -shapetrace-args: 'arg1/': '/' is not a format this pass knows (only /s, a const char* or std::string_view recorded as its text)

;--- sig.ll
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-pc-linux-gnu"

%struct.Big = type { [8 x i64] }

define void @memory(ptr sret(%struct.Big) %out, ptr byval(%struct.Big) %in) {
  ret void
}
define i64 @registers(i32 %n, [2 x i64] %s) {
  %x = extractvalue [2 x i64] %s, 0
  ret i64 %x
}
define ptr @text(ptr %s, i32 %n) {
  ret ptr %s
}
define { i64, i64 } @pair() {
  ret { i64, i64 } zeroinitializer
}
define void @wide(i128 %x) {
  ret void
}
define i32 @scaled.specialized.1(i32 %x) {
  ret i32 %x
}
define x86_fp80 @longdouble() {
  ret x86_fp80 0xK00000000000000000000
}
define float @vector(<4 x float> %v) {
  %x = extractelement <4 x float> %v, i32 0
  ret float %x
}

;--- debug.ll
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-pc-linux-gnu"

; struct Pair { int a, b; };  int packed(struct Pair p);  (x86-64 passes p as one i64)
define i32 @packed(i64 %p.coerce) !dbg !10 {
  %a = trunc i64 %p.coerce to i32
  ret i32 %a
}
; struct Two { long a, b; };  long split(struct Two t, int n);  (t in two registers)
define i64 @split(i64 %t.0, i64 %t.1, i32 %n) !dbg !20 {
  ret i64 %t.0
}
; unsigned unsigned_size(unsigned n);
define i32 @unsigned_size(i32 %n) !dbg !30 {
  ret i32 %n
}
; enum Mode : unsigned { Fast, Slow };  int mode(enum Mode m);
define i32 @mode(i32 %m) !dbg !40 {
  ret i32 %m
}

!llvm.dbg.cu = !{!0}
!llvm.module.flags = !{!2, !3}
!0 = distinct !DICompileUnit(language: DW_LANG_C11, file: !1, producer: "clang", isOptimized: true, runtimeVersion: 0, emissionKind: FullDebug)
!1 = !DIFile(filename: "values.c", directory: "/src")
!2 = !{i32 7, !"Dwarf Version", i32 5}
!3 = !{i32 2, !"Debug Info Version", i32 3}
!4 = !DIBasicType(name: "int", size: 32, encoding: DW_ATE_signed)
!5 = !DIBasicType(name: "long", size: 64, encoding: DW_ATE_signed)
!6 = !DIBasicType(name: "unsigned int", size: 32, encoding: DW_ATE_unsigned)
!7 = !DICompositeType(tag: DW_TAG_structure_type, name: "Pair", file: !1, line: 1, size: 64, elements: !{})
!8 = !DICompositeType(tag: DW_TAG_structure_type, name: "Two", file: !1, line: 2, size: 128, elements: !{})
!9 = !DIDerivedType(tag: DW_TAG_typedef, name: "size", file: !1, line: 3, baseType: !6)
!10 = distinct !DISubprogram(name: "packed", scope: !1, file: !1, line: 4, type: !11, scopeLine: 4, spFlags: DISPFlagDefinition | DISPFlagOptimized, unit: !0)
!11 = !DISubroutineType(types: !{!4, !7})
!20 = distinct !DISubprogram(name: "split", scope: !1, file: !1, line: 5, type: !21, scopeLine: 5, spFlags: DISPFlagDefinition | DISPFlagOptimized, unit: !0)
!21 = !DISubroutineType(types: !{!5, !8, !4})
!30 = distinct !DISubprogram(name: "unsigned_size", scope: !1, file: !1, line: 6, type: !31, scopeLine: 6, spFlags: DISPFlagDefinition | DISPFlagOptimized, unit: !0)
!31 = !DISubroutineType(types: !{!9, !9})
!40 = distinct !DISubprogram(name: "mode", scope: !1, file: !1, line: 7, type: !41, scopeLine: 7, spFlags: DISPFlagDefinition | DISPFlagOptimized, unit: !0)
!41 = !DISubroutineType(types: !{!4, !42})
!42 = !DICompositeType(tag: DW_TAG_enumeration_type, name: "Mode", file: !1, line: 7, baseType: !6, size: 32, elements: !{})
