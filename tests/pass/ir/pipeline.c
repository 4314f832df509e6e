// Where the pass runs in clang's pipeline, at -O0 and -O2, in both modes.
//  - after-inlining (default, OptimizerLastEP): at -O2 the small static helper is inlined away
//    and absent from the table; what remains is instrumented.
//  - before-inlining (PipelineStartEP): every source function is in the table, and the helper's
//    hooks travel with its body into its caller.
//  - at -O0 both modes instrument every function (both extension points run at -O0).
// RUN: %clang_plugin -O0 -g -S -emit-llvm %s -o - | FileCheck %s --check-prefixes=CHECK,O0
// RUN: %clang_plugin -O0 -S -emit-llvm -mllvm -shapetrace-mode=before-inlining %s -o - | FileCheck %s --check-prefixes=O0-TABLE
// RUN: %clang_plugin -O2 -g -S -emit-llvm %s -o - | FileCheck %s --check-prefixes=CHECK,O2
// RUN: %clang_plugin -O2 -S -emit-llvm -mllvm -shapetrace-mode=before-inlining %s -o - | FileCheck %s --check-prefixes=SOURCE
// Without -fplugin the plugin's options are unknown when clang parses -mllvm (why the wrappers
// pass both):
// RUN: not %clang -fpass-plugin=%plugin -O2 -S -emit-llvm -mllvm -shapetrace-mode=before-inlining %s -o - 2>&1 | FileCheck %s --check-prefix=NO-FPLUGIN
// NO-FPLUGIN: Unknown command line argument '-shapetrace-mode=before-inlining'

// The table, in definition order, with lines from the debug information.
// O0: @__shapetrace_functions = private constant [2 x { ptr, ptr, ptr, i32, i32 }]
// O0-SAME: i32 [[#ENTRY_LINE:]], i32 0 }
// O0-SAME: i32 [[#ENTRY_LINE + 8]], i32 0 }]
// O0-TABLE: @__shapetrace_functions = private constant [2 x
// O2: @[[NAME:__shapetrace_str[.0-9]*]] = {{.*}} c"entry_point\00"
// O2: @[[FILE:__shapetrace_str[.0-9]*]] = {{.*}} c"/{{.*}}/pipeline.c\00"
// O2: @__shapetrace_functions = private constant [1 x { ptr, ptr, ptr, i32, i32 }] [{ ptr, ptr, ptr, i32, i32 } { ptr @[[NAME]], ptr @[[NAME]], ptr @[[FILE]], i32 [[#ENTRY_LINE:]], i32 0 }]
// SOURCE: @__shapetrace_functions = private constant [2 x

static volatile int sink;
static void helper(int x);

// After inlining, two bodies (-shapetrace-detached=clone): entry_point keeps its ordinary body
// behind one test of the flag and tail-calls entry_point.traced, which has the hooks.
// CHECK-LABEL: define {{.*}}void @entry_point(
// CHECK: load atomic i8, ptr @__shapetrace_image_enabled unordered
// CHECK: musttail call void @entry_point.traced(i32 {{.*}}), !dbg [[CALL_LOC:![0-9]+]]
// CHECK-NEXT: ret void
// CHECK-NOT: call void @__shapetrace_
// CHECK: store volatile
// CHECK-LABEL: define internal void @entry_point.traced(i32
// CHECK-SAME: !dbg [[TRACED_SP:![0-9]+]]
// CHECK: call void @__shapetrace_enter(i32 %{{.*}}), !dbg [[ENTRY_LOC:![0-9]+]]
// O2-NOT: call void @__shapetrace_enter(
// CHECK: call void @__shapetrace_exit(
// SOURCE-LABEL: define {{.*}}void @entry_point(
// SOURCE: [[B0:%.*]] = load i32, ptr @__shapetrace_base_id
// SOURCE-NEXT: call void @__shapetrace_enter(i32 [[B0]])
// SOURCE: [[B1:%.*]] = load i32, ptr @__shapetrace_base_id
// SOURCE-NEXT: [[ID1:%.*]] = add i32 [[B1]], 1
// SOURCE-NEXT: call void @__shapetrace_enter(i32 [[ID1]])
// SOURCE: store volatile
// SOURCE: call void @__shapetrace_exit(i32
// SOURCE: call void @__shapetrace_exit(i32
void entry_point(int x) {
  helper(x);
}

// O0-LABEL: define internal void @helper.traced(
// O0: call void @__shapetrace_enter({{.*}}), !dbg
// O2-NOT: define {{.*}}@helper(
// SOURCE-NOT: define {{.*}}@helper(
static void helper(int x) {
  sink = x;
}

// The entry hook's location is the function's opening line. The copy has a DISubprogram of its
// own, with the function's name and line (symbolizers name its frames entry_point), and the
// original's call of it is at the same line in the original's.
// CHECK-DAG: [[ENTRY_LOC]] = !DILocation(line: [[#ENTRY_LINE]], scope: [[TRACED_SP]])
// CHECK-DAG: [[CALL_LOC]] = !DILocation(line: [[#ENTRY_LINE]], scope: [[SP:![0-9]+]])
// CHECK-DAG: [[SP]] = distinct !DISubprogram(name: "entry_point", scope: {{.*}}, line: [[#ENTRY_LINE]],
// CHECK-DAG: [[TRACED_SP]] = distinct !DISubprogram(name: "entry_point", scope: {{.*}}, line: [[#ENTRY_LINE]],
