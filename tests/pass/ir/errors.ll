; Errors a user can cause: each one stops the compilation with a message that says what and
; where, never a crash.
; RUN: not %opt_shapetrace -passes=shapetrace-instrument -shapetrace-filter-file=%t.missing -disable-output %s 2>&1 | FileCheck %s --check-prefix=MISSING
; MISSING: error: shapetrace: cannot read the filter file '{{.*}}.missing': No such file or directory
; RUN: printf '# rules\ninclude f*\n\nfrobnicate g\n' > %t.unknown
; RUN: not %opt_shapetrace -passes=shapetrace-instrument -shapetrace-filter-file=%t.unknown -disable-output %s 2>&1 | FileCheck %s --check-prefix=UNKNOWN
; UNKNOWN: error: shapetrace: {{.*}}.unknown:4: unknown rule 'frobnicate' (expected include, exclude, include-file, exclude-file or args)
; RUN: printf 'exclude-file   \n' > %t.empty
; RUN: not %opt_shapetrace -passes=shapetrace-instrument -shapetrace-filter-file=%t.empty -disable-output %s 2>&1 | FileCheck %s --check-prefix=EMPTY
; EMPTY: error: shapetrace: {{.*}}.empty:1: rule 'exclude-file' has no pattern
; RUN: printf 'include [z-a]\n' > %t.glob
; RUN: not %opt_shapetrace -passes=shapetrace-instrument -shapetrace-filter-file=%t.glob -disable-output %s 2>&1 | FileCheck %s --check-prefix=GLOB
; GLOB: error: shapetrace: {{.*}}.glob:1: bad pattern '[z-a]': invalid glob pattern: [z-a]
; RUN: not %opt_shapetrace -passes=shapetrace-instrument -shapetrace-mode=always -disable-output %s 2>&1 | FileCheck %s --check-prefix=MODE
; MODE: Cannot find option named 'always'!
; RUN: split-file %s %t.split
; RUN: not %opt_shapetrace -passes=shapetrace-instrument -disable-output %t.split/clash.ll 2>&1 | FileCheck %s --check-prefix=CLASH
; CLASH: error: shapetrace: '__shapetrace_enter' is declared in this module with a type other than void(uint32_t); the name is reserved for the shapetrace runtime

define void @f() {
  ret void
}

;--- clash.ll
declare void @__shapetrace_enter(i64)
define void @g() {
  call void @__shapetrace_enter(i64 1)
  ret void
}
