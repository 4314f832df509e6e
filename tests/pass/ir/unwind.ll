; Unwinding: an exception leaving a function records __shapetrace_unwind_exit. Calls that may
; throw straight to the caller become invokes of one cleanup pad that records it and resumes;
; existing `resume`s get the hook; existing landing pads become cleanups so that the unwinder
; lands in them even when no clause matches.
; RUN: %opt_shapetrace -passes=shapetrace-instrument -shapetrace-detached=gate -S %s | FileCheck %s
; AArch64: the same IR; the cleanup pad records the unwind exit before _Unwind_Resume.
; RUN: %aarch64_of %s | %opt_shapetrace -passes=shapetrace-instrument -shapetrace-detached=gate -S | FileCheck %s
; RUN: %aarch64_of %s | %opt_shapetrace -passes=shapetrace-instrument -shapetrace-detached=gate | %llc_a64 -O2 - -o - | FileCheck %s --check-prefix=A64

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-pc-linux-gnu"

@_ZTIi = external constant ptr
declare void @may_throw()
declare void @no_throw() nounwind
declare i32 @__gxx_personality_v0(...)
declare i32 @llvm.eh.typeid.for.p0(ptr)
declare ptr @__cxa_begin_catch(ptr)
declare void @__cxa_end_catch()

; Two calls that may throw share one cleanup; the nounwind call stays a call. The function had no
; personality: it gets the one the module uses.
; CHECK-LABEL: define void @calls_may_throw() personality ptr @__gxx_personality_v0
; CHECK:         call void @__shapetrace_enter(
; CHECK-NEXT:    br label %[[CONT:.*]]
; CHECK:       [[CONT]]:
; CHECK-NEXT:    invoke void @may_throw()
; CHECK-NEXT:            to label %[[CONT1:.*]] unwind label %shapetrace.unwind
; CHECK:       [[CONT1]]:
; CHECK-NEXT:    call void @no_throw()
; CHECK-NEXT:    invoke void @may_throw()
; CHECK-NEXT:            to label %[[CONT2:.*]] unwind label %shapetrace.unwind
; CHECK:       [[CONT2]]:
; CHECK:         call void @__shapetrace_exit(
; CHECK-NEXT:    br label %[[CONT:.*]]
; CHECK:       [[CONT]]:
; CHECK-NEXT:    ret void
; CHECK:       shapetrace.unwind:
; CHECK-NEXT:    [[LP:%.*]] = landingpad { ptr, i32 }
; CHECK-NEXT:            cleanup
; CHECK-NEXT:    br i1 %shapetrace.on, label %[[HOOK:.*]], label
; CHECK:       [[HOOK]]:
; CHECK-NEXT:    [[B:%.*]] = load i32, ptr @__shapetrace_base_id
; CHECK-NEXT:    call void @__shapetrace_unwind_exit(i32 [[B]])
; CHECK-NEXT:    br label %[[CONT:.*]]
; CHECK:       [[CONT]]:
; CHECK-NEXT:    resume { ptr, i32 } [[LP]]
; A64-LABEL: calls_may_throw:
; A64:         bl may_throw
; A64:         bl may_throw
; A64:         :got_lo12:__shapetrace_exit]
; A64:         ret
; A64:       %shapetrace.unwind
; A64:         :got_lo12:__shapetrace_unwind_exit]
; A64:         bl _Unwind_Resume
define void @calls_may_throw() {
  call void @may_throw()
  call void @no_throw()
  call void @may_throw()
  ret void
}

; try { may_throw(); } catch (int) {}: the catch-only pad becomes a cleanup too, its no-match
; path (the resume) records the unwind exit; the invoke keeps its pad; the call inside the
; handler that may throw goes to the new cleanup.
; CHECK-LABEL: define void @catches_int() personality ptr @__gxx_personality_v0
; CHECK:         invoke void @may_throw()
; CHECK-NEXT:            to label %done unwind label %lpad
; CHECK:       lpad:
; CHECK-NEXT:    %lp = landingpad { ptr, i32 }
; CHECK-NEXT:            cleanup
; CHECK-NEXT:            catch ptr @_ZTIi
; CHECK:       handler:
; CHECK:         invoke void @__cxa_end_catch()
; CHECK-NEXT:            to label %{{.*}} unwind label %shapetrace.unwind
; CHECK:       done:
; CHECK:         call void @__shapetrace_exit(i32 [[ID:%.*]])
; CHECK-NEXT:    br label %[[CONT:.*]]
; CHECK:       [[CONT]]:
; CHECK-NEXT:    ret void
; CHECK:       no_match:
; CHECK-NEXT:    br i1 %shapetrace.on, label %[[HOOK:.*]], label
; CHECK:       [[HOOK]]:
; CHECK-NEXT:    [[B:%.*]] = load i32, ptr @__shapetrace_base_id
; CHECK-NEXT:    [[ID2:%.*]] = add i32 [[B]], 1
; CHECK-NEXT:    call void @__shapetrace_unwind_exit(i32 [[ID2]])
; CHECK-NEXT:    br label %[[CONT:.*]]
; CHECK:       [[CONT]]:
; CHECK-NEXT:    resume { ptr, i32 } %lp
; CHECK:       shapetrace.unwind:
; CHECK:         call void @__shapetrace_unwind_exit(
; CHECK-NEXT:    br label %[[CONT:.*]]
; CHECK:       [[CONT]]:
; CHECK-NEXT:    resume
define void @catches_int() personality ptr @__gxx_personality_v0 {
entry:
  invoke void @may_throw() to label %done unwind label %lpad
lpad:
  %lp = landingpad { ptr, i32 } catch ptr @_ZTIi
  %sel = extractvalue { ptr, i32 } %lp, 1
  %tid = call i32 @llvm.eh.typeid.for.p0(ptr @_ZTIi)
  %match = icmp eq i32 %sel, %tid
  br i1 %match, label %handler, label %no_match
handler:
  %exn = extractvalue { ptr, i32 } %lp, 0
  %obj = call ptr @__cxa_begin_catch(ptr %exn) nounwind
  call void @__cxa_end_catch()
  br label %done
done:
  ret void
no_match:
  resume { ptr, i32 } %lp
}

; A nounwind function (noexcept) cannot be left by an exception: no cleanup is added even
; though it calls a function that may throw, and its resume-free terminate pad is untouched.
; CHECK-LABEL: define void @noexcept_function() #{{[0-9]+}} personality ptr @__gxx_personality_v0
; CHECK:         invoke void @may_throw()
; CHECK-NEXT:            to label %ok unwind label %terminate
; CHECK:       terminate:
; CHECK-NEXT:    landingpad { ptr, i32 }
; CHECK-NEXT:            catch ptr null
; CHECK-NEXT:    call void @abort()
; CHECK-NOT:   shapetrace.unwind
; CHECK-NOT:   __shapetrace_unwind_exit
; CHECK:       }
declare void @abort() noreturn nounwind
define void @noexcept_function() nounwind personality ptr @__gxx_personality_v0 {
entry:
  invoke void @may_throw() to label %ok unwind label %terminate
ok:
  ret void
terminate:
  %lp = landingpad { ptr, i32 } catch ptr null
  call void @abort()
  unreachable
}

; A cleanup that runs a destructor and resumes: the unwind exit comes after the destructor,
; right before the resume, which is when the frame is left.
; CHECK-LABEL: define void @destructor_cleanup()
; CHECK:       cleanup:
; CHECK-NEXT:    %lp = landingpad { ptr, i32 }
; CHECK-NEXT:            cleanup
; CHECK-NEXT:    call void @no_throw()
; CHECK-NEXT:    br i1 %shapetrace.on, label %[[HOOK:.*]], label
; CHECK:       [[HOOK]]:
; CHECK-NEXT:    [[B:%.*]] = load i32, ptr @__shapetrace_base_id
; CHECK-NEXT:    [[ID:%.*]] = add i32 [[B]], 3
; CHECK-NEXT:    call void @__shapetrace_unwind_exit(i32 [[ID]])
; CHECK-NEXT:    br label %[[CONT:.*]]
; CHECK:       [[CONT]]:
; CHECK-NEXT:    resume { ptr, i32 } %lp
define void @destructor_cleanup() personality ptr @__gxx_personality_v0 {
entry:
  invoke void @may_throw() to label %ok unwind label %cleanup
ok:
  ret void
cleanup:
  %lp = landingpad { ptr, i32 } cleanup
  call void @no_throw()
  resume { ptr, i32 } %lp
}

; A tail call that may throw follows the caller's exit: it is not given an unwind path.
; CHECK-LABEL: define void @tail_call_may_throw()
; CHECK:         call void @__shapetrace_exit(
; CHECK-NEXT:    br label %[[CONT:.*]]
; CHECK:       [[CONT]]:
; CHECK-NEXT:    tail call void @may_throw()
; CHECK-NEXT:    ret void
; CHECK-NOT:   shapetrace.unwind
; CHECK:       }
define void @tail_call_may_throw() {
  tail call void @may_throw()
  ret void
}
