// SHAPETRACE_NO_INSTRUMENT from <shapetrace/shapetrace.h>: no hooks and no table entry, at -O0
// and -O2, and (unlike an annotate attribute) nothing keeps an out-of-line copy of a static
// function whose calls were all inlined.
// RUN: %clang_plugin -O0 -S -emit-llvm %s -o - | FileCheck %s --check-prefix=O0
// RUN: %clang_plugin -O2 -S -emit-llvm %s -o - | FileCheck %s --check-prefix=O2
#include <shapetrace/shapetrace.h>

static int quiet_helper(int x);

// O0: @__shapetrace_functions = private constant [1 x
// O2: @__shapetrace_functions = private constant [1 x

// O0-LABEL: define {{.*}}i32 @uses_quiet(
// O0: musttail call {{.*}}i32 @uses_quiet.traced(
// O2-LABEL: define {{.*}}i32 @uses_quiet(
// O2: musttail call {{.*}}i32 @uses_quiet.traced(
int uses_quiet(int x) { return quiet_helper(x) + 1; }

// O0-LABEL: define internal i32 @quiet_helper(
// O0-NOT: __shapetrace
// O0: ret i32
// O0-NOT: @quiet_helper.traced
// O2-NOT: define {{.*}}@quiet_helper(
// O2-NOT: @quiet_helper.traced
SHAPETRACE_NO_INSTRUMENT static int quiet_helper(int x) { return x * 3; }
