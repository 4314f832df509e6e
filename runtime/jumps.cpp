// setjmp and longjmp: the frames a longjmp jumps over end, in the stream, at the jump.
//
// A longjmp leaves every frame between it and the setjmp it returns to without running their
// epilogues, so their exit hooks never run. uftrace remembers the depth of its return stack at
// setjmp and cuts it back at longjmp; this does the same with the hooks' count of open calls:
//
// - setjmp, _setjmp and __sigsetjmp are interposed by assembly trampolines (arch/<arch>/setjmp.S): a
//   setjmp returns twice into its caller's frame, so no C function may stand between them. The
//   trampoline calls __shapetrace_rt_note_setjmp (which notes the jmp_buf, the caller's stack
//   pointer and the thread's open calls in a small per-thread table) and then jumps to the real
//   function with the caller's frame untouched.
// - longjmp, _longjmp, siglongjmp and __longjmp_chk are interposed by ordinary functions: they
//   look the jmp_buf up, end the calls opened since that setjmp (abandonCalls: the recorded ones
//   become one kAbandonMarker, which the drain turns into one AbandonedExit per frame with the
//   frames' ids), then call the real function.
//
// The table keeps the last kMaxJumpPoints setjmps of the thread that are still live: a setjmp at a
// higher stack address than an entry means that entry's frame has returned (stacks grow down), so
// it is dropped; a longjmp drops the entries of the frames below its target's. A longjmp whose jmp_buf is not in
// the calling thread's table (set by another thread, on another stack, evicted) or whose target is
// below the current stack pointer changes nothing: the calls stay open, as before this existed
// (the analyzer closes them at the next exit that matches an outer call). A longjmp out of a signal
// handler that interrupted one of our hooks also leaves that hook: the thread's guard is released
// and one event is counted as lost (a gap), as the hook may have been half done. A jump that stays
// inside such a handler (to a setjmp made in it) changes nothing.
#include "runtime.h"
#include "interpose.h"

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <dlfcn.h>
#include <iterator>
#include <setjmp.h>

namespace shapetrace::rt {
namespace {

struct JumpPoint {
  const void* env;
  uintptr_t stack;     // the setjmp caller's stack pointer
  uint32_t open_calls; // the calls the thread tracked then
  bool in_handler;     // made inside a handler that interrupted runtime code (t_local.busy)
};

struct JumpTable {
  static constexpr uint32_t kMaxJumpPoints = 32;
  bool busy; // a setjmp or longjmp of this thread is updating the table (a handler may interrupt)
  uint32_t count;
  JumpPoint points[kMaxJumpPoints]; // oldest (outermost) first
};
// Not initial-exec: the hot path never touches it, and a runtime loaded by dlopen (as the
// dependency of an instrumented library) must not need more static TLS than the hooks' block.
constinit thread_local JumpTable t_jumps = {};

// The real functions, in the trampolines' order (arch/<arch>/setjmp.S).
constexpr const char* kSetjmpNames[] = {"setjmp", "_setjmp", "__sigsetjmp"};
std::atomic<void*> g_real_setjmp[std::size(kSetjmpNames)] = {};

void* realSetjmp(int which) {
  void* real = g_real_setjmp[which].load(std::memory_order_acquire);
  if (!real) {
    real = dlsym(RTLD_NEXT, kSetjmpNames[which]);
    g_real_setjmp[which].store(real, std::memory_order_release);
  }
  return real;
}

void noteJumpPoint(JumpTable& table, const JumpPoint& point) {
  // Entries deeper than this setjmp (lower addresses) belong to frames that have returned.
  while (table.count > 0 && table.points[table.count - 1].stack < point.stack)
    --table.count;
  // The common case: the same setjmp again (a loop, an interpreter's protected call).
  if (table.count > 0 && table.points[table.count - 1].env == point.env) {
    table.points[table.count - 1] = point;
    return;
  }
  // The same jmp_buf set again elsewhere: only the latest counts.
  for (uint32_t i = 0; i < table.count; ++i)
    if (table.points[i].env == point.env) {
      for (uint32_t j = i + 1; j < table.count; ++j)
        table.points[j - 1] = table.points[j];
      --table.count;
      break;
    }
  if (table.count == JumpTable::kMaxJumpPoints) { // forget the outermost
    for (uint32_t j = 1; j < table.count; ++j)
      table.points[j - 1] = table.points[j];
    --table.count;
  }
  table.points[table.count++] = point;
}

// The live setjmp of `env` for a longjmp made at `stack`; nullptr when unknown. The entries of
// deeper frames made after it are forgotten: the jump leaves them. Those of its own frame (same
// stack pointer; the table's stacks never grow from oldest to newest) stay live, as C keeps them
// until that frame returns: a later longjmp to one of them (uftrace's s-longjmp3) must find it.
const JumpPoint* findJumpPoint(JumpTable& table, const void* env, uintptr_t stack) {
  for (uint32_t i = table.count; i-- > 0;)
    if (table.points[i].env == env) {
      if (table.points[i].stack < stack)
        return nullptr; // not an outer frame of this one: another stack
      uint32_t live = i + 1;
      while (live < table.count && table.points[live].stack == table.points[i].stack)
        ++live;
      table.count = live;
      return &table.points[i];
    }
  return nullptr;
}

void beforeLongjmp(const void* env, uintptr_t stack) {
  ThreadLocal& local = t_local;
  JumpTable& table = t_jumps;
  if (local.runtime_thread || table.busy)
    return;
  const int saved_errno = errno;
  table.busy = true;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  const JumpPoint* point = findJumpPoint(table, env, stack);
  // A jump to a setjmp made inside the same handler stays inside it: nothing it left was tracked.
  if (!point || !point->in_handler) {
    const bool interrupted_a_hook = local.busy;
    local.busy = true;
    const uint32_t open_calls = trackedOpenCalls();
    if (point && point->open_calls <= open_calls)
      abandonCalls(point->open_calls, interrupted_a_hook);
    else if (interrupted_a_hook)
      abandonCalls(open_calls, true);
    std::atomic_signal_fence(std::memory_order_seq_cst);
    local.busy = false; // the jump leaves whatever runtime code a handler interrupted
  }
  std::atomic_signal_fence(std::memory_order_seq_cst);
  table.busy = false;
  errno = saved_errno;
}

using LongjmpFn = void (*)(struct __jmp_buf_tag*, int);
enum Longjmp { kLongjmp, kUnderscoreLongjmp, kSiglongjmp, kLongjmpChk };
constexpr const char* kLongjmpNames[] = {"longjmp", "_longjmp", "siglongjmp", "__longjmp_chk"};
std::atomic<void*> g_real_longjmp[std::size(kLongjmpNames)] = {};

void* realLongjmp(Longjmp which) {
  void* real = g_real_longjmp[which].load(std::memory_order_acquire);
  if (!real) {
    real = dlsym(RTLD_NEXT, kLongjmpNames[which]);
    g_real_longjmp[which].store(real, std::memory_order_release);
  }
  return real;
}

[[noreturn]] void jump(Longjmp which, struct __jmp_buf_tag* env, int value) {
  void* real = realLongjmp(which);
  beforeLongjmp(env, reinterpret_cast<uintptr_t>(__builtin_frame_address(0)));
  reinterpret_cast<LongjmpFn>(real)(env, value);
  __builtin_unreachable();
}

} // namespace

// Resolves the real setjmp functions before any signal handler may need them (dlsym is not
// async-signal-safe). Called at start.
void resolveJumpFunctions() {
  for (int which = 0; which < int(std::size(kSetjmpNames)); ++which)
    realSetjmp(which);
  for (int which = 0; which < int(std::size(kLongjmpNames)); ++which)
    realLongjmp(Longjmp(which));
}

void forgetJumpPointsAfterFork() {
  t_jumps.count = 0;
}

} // namespace shapetrace::rt

using namespace shapetrace::rt;

// Called by the trampolines (arch/<arch>/setjmp.S) with the jmp_buf, the caller's stack pointer once
// setjmp returns, and which function was called; returns the real function to jump to.
extern "C" __attribute__((visibility("hidden"))) void*
__shapetrace_rt_note_setjmp(const void* env, uintptr_t stack, int which) {
  // errno is untouched: nothing here sets it (a thread's first ring is attached with it saved).
  ThreadLocal& local = t_local;
  JumpTable& table = t_jumps;
  if (!local.runtime_thread && !table.busy) {
    table.busy = true;
    std::atomic_signal_fence(std::memory_order_seq_cst);
    JumpPoint point{env, stack, 0, local.busy};
    if (!local.busy) {
      local.busy = true;
      std::atomic_signal_fence(std::memory_order_seq_cst);
      point.open_calls = openCallsForSetjmp();
      std::atomic_signal_fence(std::memory_order_seq_cst);
      local.busy = false;
    }
    noteJumpPoint(table, point);
    std::atomic_signal_fence(std::memory_order_seq_cst);
    table.busy = false;
  }
  return realSetjmp(which);
}

SHAPETRACE_INTERPOSE void longjmp(struct __jmp_buf_tag env[1], int value) {
  jump(kLongjmp, env, value);
}
SHAPETRACE_INTERPOSE void _longjmp(struct __jmp_buf_tag env[1], int value) {
  jump(kUnderscoreLongjmp, env, value);
}
SHAPETRACE_INTERPOSE void siglongjmp(struct __jmp_buf_tag env[1], int value) {
  jump(kSiglongjmp, env, value);
}
SHAPETRACE_INTERPOSE void __longjmp_chk(struct __jmp_buf_tag env[1], int value) {
  jump(kLongjmpChk, env, value);
}
