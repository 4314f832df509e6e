; Arguments and return values of chosen functions (-shapetrace-args, the rule file's `args`
; lines): each chosen value is widened to 64 bits and handed to __shapetrace_value(id, descriptor,
; bits) right after the entry hook (arguments, in order) and right before each exit hook (the
; return value); descriptor = position | type << 8 (abi.h: type 0 signed, 1 unsigned, 2 pointer,
; 3 float). Positions are the IR signature's without the sret pointer, `this` first. Functions no
; choice names get nothing more.
; RUN: %opt_shapetrace -passes=shapetrace-instrument -shapetrace-args='ints@arg1,arg2,arg3,arg4,retval,floats@arg1,arg2,retval,Widget::*@arg1,arg2,make@arg1,tail@retval' -pass-remarks=shapetrace -S %s 2>%t.remarks | FileCheck %s --check-prefix=CHECK
; RUN: FileCheck %s --check-prefix=REMARK < %t.remarks
; The same choices from a rule file, and with the gate: each value hook behind the entry's test.
; RUN: printf '# values to record\nargs ints@arg1,arg2,arg3,arg4,retval\nargs floats@arg1,arg2,retval , Widget::*@arg1,arg2\nargs make@arg1\nargs tail@retval\n' > %t.rules
; RUN: %opt_shapetrace -passes=shapetrace-instrument -shapetrace-filter-file=%t.rules -S %s | FileCheck %s --check-prefix=CHECK
; RUN: %opt_shapetrace -passes=shapetrace-instrument -shapetrace-detached=gate -shapetrace-args='ints@arg1,arg2,arg3,arg4,retval,floats@arg1,arg2,retval,Widget::*@arg1,arg2,make@arg1,tail@retval' -S %s | FileCheck %s --check-prefix=GATE
; AArch64: the same IR.
; RUN: %aarch64_of %s | %opt_shapetrace -passes=shapetrace-instrument -shapetrace-args='ints@arg1,arg2,arg3,arg4,retval,floats@arg1,arg2,retval,Widget::*@arg1,arg2,make@arg1,tail@retval' -S | FileCheck %s --check-prefix=CHECK
; RUN: %opt_shapetrace -passes=shapetrace-instrument -shapetrace-args='ints@arg1,retval,floats@retval' -S %s | FileCheck %s --check-prefix=ORDINARY
; No choice: no value hook anywhere, not even declared.
; RUN: %opt_shapetrace -passes=shapetrace-instrument -S %s | FileCheck %s --check-prefix=NONE
; NONE-NOT: __shapetrace_value
; The code: the value reaches the hook in its argument registers.
; RUN: %opt_shapetrace -passes=shapetrace-instrument -shapetrace-args='floats@arg1,arg2,retval' %s | %llc_x86 -O2 | FileCheck %s --check-prefix=X86
; RUN: %aarch64_of %s | %opt_shapetrace -passes=shapetrace-instrument -shapetrace-args='floats@arg1,arg2,retval' | %llc_a64 -O2 | FileCheck %s --check-prefix=A64

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-pc-linux-gnu"

%struct.Big = type { [8 x i64] }

; Integers: sign-extended, or zero-extended when the ABI zero-extends them (zeroext, i1); i64 as is.
; CHECK-LABEL: define internal i32 @ints.traced(i32 %a, i8 zeroext %b, i1 zeroext %c, i64 %d)
; CHECK-NEXT:    %shapetrace.base = load i32, ptr @__shapetrace_base_id
; CHECK-NEXT:    call void @__shapetrace_enter(i32 %shapetrace.base)
; CHECK-NEXT:    %shapetrace.base1 = load i32, ptr @__shapetrace_base_id
; CHECK-NEXT:    %shapetrace.value = sext i32 %a to i64
; CHECK-NEXT:    call void @__shapetrace_value(i32 %shapetrace.base1, i32 1, i64 %shapetrace.value)
; CHECK-NEXT:    %shapetrace.base2 = load i32, ptr @__shapetrace_base_id
; CHECK-NEXT:    %shapetrace.value3 = zext i8 %b to i64
; CHECK-NEXT:    call void @__shapetrace_value(i32 %shapetrace.base2, i32 258, i64 %shapetrace.value3)
; CHECK-NEXT:    %shapetrace.base4 = load i32, ptr @__shapetrace_base_id
; CHECK-NEXT:    %shapetrace.value5 = zext i1 %c to i64
; CHECK-NEXT:    call void @__shapetrace_value(i32 %shapetrace.base4, i32 259, i64 %shapetrace.value5)
; CHECK-NEXT:    %shapetrace.base6 = load i32, ptr @__shapetrace_base_id
; CHECK-NEXT:    call void @__shapetrace_value(i32 %shapetrace.base6, i32 4, i64 %d)
; CHECK-NEXT:    br i1 %c, label %neg, label %pos
; Each return: its value, then the exit.
; CHECK:       neg:
; CHECK:         %shapetrace.value{{[0-9]+}} = sext i32 %n to i64
; CHECK-NEXT:    call void @__shapetrace_value(i32 %{{.*}}, i32 0, i64 %shapetrace.value{{[0-9]+}})
; CHECK:         call void @__shapetrace_exit(
; CHECK-NEXT:    ret i32 %n
; CHECK:       pos:
; CHECK:         call void @__shapetrace_value(i32 %{{.*}}, i32 0, i64 %shapetrace.value{{[0-9]+}})
; CHECK:         call void @__shapetrace_exit(
; CHECK-NEXT:    ret i32 %a
; The ordinary body records nothing (it comes first in the module, the copies last).
; ORDINARY-LABEL: define i32 @ints(
; ORDINARY-NOT:     __shapetrace_value
; ORDINARY:         ret i32 %a
; ORDINARY-LABEL: define double @floats(
; ORDINARY-NOT:     __shapetrace_value
; ORDINARY:         ret double %r
; GATE-LABEL: define i32 @ints(
; GATE:         %shapetrace.on = icmp ne i8 %shapetrace.flag, 0
; GATE:         br i1 %shapetrace.on, label %shapetrace.hook, label
; GATE:       shapetrace.hook:
; GATE:         call void @__shapetrace_enter(
; GATE:         br i1 %shapetrace.on, label %shapetrace.hook{{[0-9]+}}, label
; GATE:         call void @__shapetrace_value(i32 %{{.*}}, i32 1, i64 %shapetrace.value)
define i32 @ints(i32 %a, i8 zeroext %b, i1 zeroext %c, i64 %d) {
  br i1 %c, label %neg, label %pos
neg:
  %n = sub i32 0, %a
  ret i32 %n
pos:
  ret i32 %a
}
; REMARK: remark: <unknown>:0:0: 'ints' records arg1, arg2, arg3, arg4, retval

; Floating point: a float as a double's bits, a double's bits as they are.
; CHECK-LABEL: define internal double @floats.traced(float %f, double %d)
; CHECK:         call void @__shapetrace_enter(
; CHECK:         %[[F:[0-9]+]] = fpext float %f to double
; CHECK-NEXT:    %shapetrace.value = bitcast double %[[F]] to i64
; CHECK-NEXT:    call void @__shapetrace_value(i32 %{{.*}}, i32 769, i64 %shapetrace.value)
; CHECK:         %shapetrace.value{{[0-9]+}} = bitcast double %d to i64
; CHECK-NEXT:    call void @__shapetrace_value(i32 %{{.*}}, i32 770, i64 %shapetrace.value{{[0-9]+}})
; CHECK:         %r = fadd double
; CHECK:         call void @__shapetrace_value(i32 %{{.*}}, i32 768, i64 %shapetrace.value{{[0-9]+}})
; CHECK-NEXT:    %shapetrace.base{{[0-9]+}} = load i32
; CHECK-NEXT:    %shapetrace.id{{[0-9]+}} = add i32
; CHECK-NEXT:    call void @__shapetrace_exit(
; CHECK-NEXT:    ret double %r
; X86-LABEL: floats.traced:
; X86:         callq *__shapetrace_enter@GOTPCREL(%rip)
; X86:         cvtss2sd
; X86:         movq %xmm0, %rdx
; X86:         movq __shapetrace_value@GOTPCREL(%rip), %[[HOOK:[a-z0-9]+]]
; X86-NEXT:    movl $769, %esi
; X86-NEXT:    callq *%[[HOOK]]
; A64-LABEL: floats.traced:
; A64:         blr
; A64:         fcvt d[[F:[0-9]+]], s{{[0-9]+}}
; A64:         ldr x[[HOOK:[0-9]+]], [x{{[0-9]+}}, :got_lo12:__shapetrace_value]
; A64-NEXT:    mov w1, #769
; A64:         fmov x2, d[[F]]
; A64-NEXT:    blr x[[HOOK]]
define double @floats(float %f, double %d) {
  %e = fpext float %f to double
  %r = fadd double %e, %d
  ret double %r
}
; REMARK: remark: <unknown>:0:0: 'floats' records arg1, arg2, retval

; A method: `this` is arg1, a pointer (its address); arg2 is the first parameter of the source.
; CHECK-LABEL: define internal void @_ZN6Widget3setEl.traced(ptr %this, i64 %v)
; CHECK:         call void @__shapetrace_enter(
; CHECK:         %shapetrace.value = ptrtoint ptr %this to i64
; CHECK-NEXT:    call void @__shapetrace_value(i32 %{{.*}}, i32 513, i64 %shapetrace.value)
; CHECK:         call void @__shapetrace_value(i32 %{{.*}}, i32 2, i64 %v)
define void @_ZN6Widget3setEl(ptr %this, i64 %v) {
  store i64 %v, ptr %this
  ret void
}
; REMARK: remark: <unknown>:0:0: 'Widget::set(long)' records arg1, arg2

; A name with an ABI tag is also matched without it: `Maker::make` names
; `Maker::make[abi:cxx11](unsigned int)`.
; RUN: %opt_shapetrace -passes=shapetrace-instrument -shapetrace-args='Maker::make@arg2' -pass-remarks=shapetrace -disable-output %s 2>&1 | FileCheck %s --check-prefix=TAGGED
; TAGGED: remark: <unknown>:0:0: 'Maker::make[abi:cxx11](unsigned int)' records arg2
define void @_ZN5Maker4makeB5cxx11Ej(ptr sret(%struct.Big) %out, ptr %this, i32 %n) {
  ret void
}

; A struct returned in memory: the sret pointer is not counted, arg1 is the int.
; CHECK-LABEL: define internal void @make.traced(ptr sret(%struct.Big) %out, i32 %n)
; CHECK:         call void @__shapetrace_value(i32 %{{.*}}, i32 1, i64 %shapetrace.value)
define void @make(ptr sret(%struct.Big) %out, i32 %n) {
  store i32 %n, ptr %out
  ret void
}

; The exit before a tail call has no return value yet: the callee returns it, after this exit.
; CHECK-LABEL: define internal i32 @tail.traced(i32 %x)
; CHECK:         call void @__shapetrace_exit(
; CHECK-NEXT:    %r = tail call i32 @callee(i32 %x)
; CHECK-NEXT:    ret i32 %r
; CHECK-NOT:     __shapetrace_value
define i32 @tail(i32 %x) {
  %r = tail call i32 @callee(i32 %x)
  ret i32 %r
}

; Not chosen: nothing more than the entry and exit hooks.
; CHECK-LABEL: define internal i32 @callee.traced(i32 %x)
; CHECK-NOT:     __shapetrace_value
; CHECK:         ret i32 %x
define i32 @callee(i32 %x) {
  ret i32 %x
}
