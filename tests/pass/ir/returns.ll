; Entry hook first, exit hook before every return, ids = base + local index, and the function
; table, module record and constructor of runtime/include/shapetrace/abi.h.
; RUN: %opt_shapetrace -passes=shapetrace-instrument -shapetrace-detached=gate -S %s | FileCheck %s
; AArch64: the same IR.
; RUN: %aarch64_of %s | %opt_shapetrace -passes=shapetrace-instrument -shapetrace-detached=gate -S | FileCheck %s

source_filename = "src/returns.c"
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-pc-linux-gnu"

; The table: one record per instrumented function in order, strings shared, the base id
; initialised to SHAPETRACE_UNREGISTERED_BASE, the constructor registered at priority 2.
; The image's recording flag (abi.h, image_enabled), read by every instrumented function's entry:
; one per linked image (linkonce_odr in a comdat), hidden, alone on its cache line.
; CHECK: $__shapetrace_image_enabled = comdat any
; CHECK: @__shapetrace_image_enabled = linkonce_odr hidden global [64 x i8] zeroinitializer, comdat, align 64
; CHECK: @__shapetrace_base_id = internal global i32 -2147483648
; CHECK-DAG: @[[VOID_M:__shapetrace_str[.0-9]*]] = private unnamed_addr constant [9 x i8] c"void_ret\00", align 1
; CHECK-DAG: @[[EMPTY:__shapetrace_str[.0-9]*]] = private unnamed_addr constant [1 x i8] zeroinitializer, align 1
; CHECK-DAG: @[[SEV_M:__shapetrace_str[.0-9]*]] = private unnamed_addr constant [17 x i8] c"_Z11severalRetsi\00"
; CHECK-DAG: @[[SEV_D:__shapetrace_str[.0-9]*]] = private unnamed_addr constant [17 x i8] c"severalRets(int)\00"
; CHECK: @__shapetrace_functions = private constant [3 x { ptr, ptr, ptr, i32, i32 }]
; CHECK-SAME: [{ ptr, ptr, ptr, i32, i32 } { ptr @[[VOID_M]], ptr @[[VOID_M]], ptr @[[EMPTY]], i32 0, i32 0 },
; CHECK-SAME: { ptr, ptr, ptr, i32, i32 } { ptr @[[VAL_M:__shapetrace_str[.0-9]*]], ptr @[[VAL_M]], ptr @[[EMPTY]], i32 0, i32 0 },
; CHECK-SAME: { ptr, ptr, ptr, i32, i32 } { ptr @[[SEV_M]], ptr @[[SEV_D]], ptr @[[EMPTY]], i32 0, i32 0 }]
; CHECK: @[[MODID:__shapetrace_str[.0-9]*]] = private unnamed_addr constant [14 x i8] c"src/returns.c\00"
; CHECK: @__shapetrace_module = private constant { i32, i32, ptr, ptr, ptr, ptr } { i32 3, i32 3, ptr @__shapetrace_functions, ptr @[[MODID]], ptr @__shapetrace_base_id, ptr @__shapetrace_image_enabled }
; The module's ELF note (abi.h): namesz 11, descsz 4, type 1, "shapetrace", and the record's offset
; from the descriptor (resolved by the static linker), in .note.shapetrace, kept by llvm.used.
; CHECK: @__shapetrace_note = private constant { i32, i32, i32, [12 x i8], i32 } { i32 11, i32 4, i32 1, [12 x i8] c"shapetrace\00\00", i32 trunc (i64 sub (i64 ptrtoint (ptr @__shapetrace_module to i64), i64 ptrtoint (ptr getelementptr inbounds ({ i32, i32, i32, [12 x i8], i32 }, ptr @__shapetrace_note, i32 0, i32 4) to i64)) to i32) }, section ".note.shapetrace", align 4
; CHECK: @llvm.used = appending global [{{[0-9]+}} x ptr] [ptr @__shapetrace_note
; CHECK: @llvm.global_ctors = appending global [1 x { i32, ptr, ptr }] [{ i32, ptr, ptr } { i32 2, ptr @shapetrace.module_ctor, ptr null }]
; CHECK: @llvm.global_dtors = appending global [1 x { i32, ptr, ptr }] [{ i32, ptr, ptr } { i32 2, ptr @shapetrace.module_dtor, ptr null }]

; Recording on or off is read once, at the entry, and decides both hooks of the frame.
; CHECK-LABEL: define void @void_ret()
; CHECK-NEXT:    [[FLAG:%.*]] = load atomic i8, ptr @__shapetrace_image_enabled unordered, align 1
; CHECK-NEXT:    [[ON:%.*]] = icmp ne i8 [[FLAG]], 0
; CHECK-NEXT:    br i1 [[ON]], label %[[ENTER:.*]], label %[[BODY:.*]]
; CHECK:       [[ENTER]]:
; CHECK-NEXT:    [[B:%.*]] = load i32, ptr @__shapetrace_base_id, align 4
; CHECK-NEXT:    call void @__shapetrace_enter(i32 [[B]])
; CHECK-NEXT:    br label %[[BODY]]
; CHECK:       [[BODY]]:
; CHECK-NEXT:    store i32 1, ptr @g
; CHECK-NEXT:    br i1 [[ON]], label %[[EXIT:.*]], label %[[RET:.*]]
; CHECK:       [[EXIT]]:
; CHECK-NEXT:    [[B2:%.*]] = load i32, ptr @__shapetrace_base_id, align 4
; CHECK-NEXT:    call void @__shapetrace_exit(i32 [[B2]])
; CHECK-NEXT:    br label %[[RET]]
; CHECK:       [[RET]]:
; CHECK-NEXT:    ret void
@g = global i32 0
define void @void_ret() {
  store i32 1, ptr @g
  ret void
}

; CHECK-LABEL: define i32 @value_ret(i32 %x)
; CHECK-NEXT:    [[FLAG:%.*]] = load atomic i8, ptr @__shapetrace_image_enabled unordered, align 1
; CHECK-NEXT:    [[ON:%.*]] = icmp ne i8 [[FLAG]], 0
; CHECK-NEXT:    br i1 [[ON]], label %[[ENTER:.*]], label %[[BODY:.*]]
; CHECK:       [[ENTER]]:
; CHECK-NEXT:    [[B:%.*]] = load i32, ptr @__shapetrace_base_id, align 4
; CHECK-NEXT:    [[ID:%.*]] = add i32 [[B]], 1
; CHECK-NEXT:    call void @__shapetrace_enter(i32 [[ID]])
; CHECK:       [[BODY]]:
; CHECK-NEXT:    [[R:%.*]] = mul i32 %x, %x
; CHECK-NEXT:    br i1 [[ON]], label %[[EXIT:.*]], label %[[RET:.*]]
; CHECK:       [[EXIT]]:
; CHECK-NEXT:    [[B2:%.*]] = load i32, ptr @__shapetrace_base_id, align 4
; CHECK-NEXT:    [[ID2:%.*]] = add i32 [[B2]], 1
; CHECK-NEXT:    call void @__shapetrace_exit(i32 [[ID2]])
; CHECK:       [[RET]]:
; CHECK-NEXT:    ret i32 [[R]]
define i32 @value_ret(i32 %x) {
  %r = mul i32 %x, %x
  ret i32 %r
}

; Three returns, three exits, one entry, all behind the entry's one flag.
; CHECK-LABEL: define i32 @_Z11severalRetsi(i32 %x)
; CHECK:       entry:
; CHECK-NEXT:    [[FLAG:%.*]] = load atomic i8, ptr @__shapetrace_image_enabled unordered
; CHECK-NEXT:    [[ON:%.*]] = icmp ne i8 [[FLAG]], 0
; CHECK-NEXT:    br i1 [[ON]]
; CHECK:         [[B:%.*]] = load i32, ptr @__shapetrace_base_id
; CHECK-NEXT:    [[ID:%.*]] = add i32 [[B]], 2
; CHECK-NEXT:    call void @__shapetrace_enter(i32 [[ID]])
; CHECK-NOT:     call void @__shapetrace_enter
; CHECK-NOT:     load atomic i8, ptr @__shapetrace_image_enabled
; CHECK:       one:
; CHECK-NEXT:    br i1 [[ON]], label %[[EXIT1:.*]], label %[[RET1:.*]]
; CHECK:       [[EXIT1]]:
; CHECK:         call void @__shapetrace_exit(i32 %{{.*}})
; CHECK:       [[RET1]]:
; CHECK-NEXT:    ret i32 1
; CHECK:       two:
; CHECK-NEXT:    br i1 [[ON]], label %[[EXIT2:.*]], label %[[RET2:.*]]
; CHECK:       [[EXIT2]]:
; CHECK:         call void @__shapetrace_exit(i32 %{{.*}})
; CHECK:       [[RET2]]:
; CHECK-NEXT:    ret i32 2
; CHECK:       other:
; CHECK-NEXT:    br i1 [[ON]], label %[[EXIT3:.*]], label %[[RET3:.*]]
; CHECK:       [[EXIT3]]:
; CHECK:         call void @__shapetrace_exit(i32 %{{.*}})
; CHECK:       [[RET3]]:
; CHECK-NEXT:    ret i32 %x
; CHECK-NOT:     call void @__shapetrace_
; CHECK:       }
define i32 @_Z11severalRetsi(i32 %x) {
entry:
  switch i32 %x, label %other [ i32 1, label %one
                                i32 2, label %two ]
one:
  ret i32 1
two:
  ret i32 2
other:
  ret i32 %x
}

; Declarations are not instrumented, nor given a table entry.
declare i32 @external(i32)

; The hooks are nounwind and called through the GOT (nonlazybind); the constructor registers
; the module record and is in no comdat, so every object file's constructor runs; the destructor
; unregisters it (dlclose), so that the runtime stops writing the image's flag.
; CHECK: declare void @__shapetrace_enter(i32) [[HOOK:#[0-9]+]]
; CHECK: declare void @__shapetrace_exit(i32) [[HOOK]]
; CHECK: declare void @__shapetrace_unwind_exit(i32) [[HOOK]]
; CHECK: define internal void @shapetrace.module_ctor() [[CTOR:#[0-9]+]] {
; CHECK-NEXT:  call void @__shapetrace_register_module(ptr @__shapetrace_module)
; CHECK-NEXT:  ret void
; CHECK: declare void @__shapetrace_register_module(ptr) [[REG:#[0-9]+]]
; The destructor calls the unregistering function only when the runtime has it (a weak reference:
; an older runtime refuses the module rather than failing the program at its exit).
; CHECK: define internal void @shapetrace.module_dtor() [[CTOR]] {
; CHECK-NEXT:  [[PRESENT:%.*]] = icmp ne ptr @__shapetrace_unregister_module, null
; CHECK-NEXT:  br i1 [[PRESENT]], label %[[CALL:.*]], label %[[DONE:.*]]
; CHECK: [[CALL]]:
; CHECK-NEXT:  call void @__shapetrace_unregister_module(ptr @__shapetrace_module)
; CHECK: declare extern_weak void @__shapetrace_unregister_module(ptr) [[REG]]
; CHECK: attributes [[HOOK]] = { nounwind nonlazybind }
; CHECK: !shapetrace.instrumented = !{}
