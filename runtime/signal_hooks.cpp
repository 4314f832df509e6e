// Signals that end the process end the image in the stream first, without the program seeing a
// handler.
//
// A service is usually stopped by a signal (SIGTERM from its supervisor, SIGINT from a terminal,
// SIGHUP when its terminal goes), and a crash is one (SIGABRT, SIGSEGV): at its default action the
// signal ends the process with its rings unsent and no ProcessEnd, a loss of unknown size, and
// the last calls before a crash are the ones a user needs most. So where the program's action for one of
// them is the default, the runtime's handler stands in for it (SHAPETRACE_FLUSH_ON_SIGNAL): it ends
// the image (endImageForSignal: everything sent, ProcessEnd with reason signal), then restores the
// default action, unblocks the signal and raises it, so that the process ends as it would have, by
// that signal, with the status its parent expects.
//
// The stand-in must be invisible, or the program behaves differently: CPython and SDL install
// their SIGINT/SIGTERM handlers only where the action reads SIG_DFL, and a handler that chains to
// the action it replaced would call the runtime's (which ends the process) where it found
// SIG_DFL before (and did nothing). So sigaction, signal, bsd_signal, sysv_signal, __sysv_signal
// and sigset are interposed: where the runtime stands in, they report the program's own default
// action, setting SIG_DFL keeps the stand-in, and setting anything else replaces it as it would
// replace SIG_DFL; setting SIG_DFL later (a handler that cleans up, then restores the default and
// raises the signal again) puts the stand-in back. Whether the runtime stands in is read from the
// kernel each time, so an action saved and restored past these functions (glibc's system(), a raw
// rt_sigaction) is seen as it is. Not interposed: ssignal(), glibc's alias of signal().
//
// The init of a PID namespace (a container's first process) gets no stand-in: the kernel drops a
// signal at its default action there, where a handler would run and interrupt system calls.
//
// A second termination signal while the first one's image end is under way (GNU timeout signals
// its child, then its process group) waits for that end, then ends the process the same way.
// An ignored signal stays ignored, a program's handler stays the program's, and a program that
// blocks the signal to sigwait for it never runs the stand-in. The runtime's threads block every
// signal.
#include "flags.h"
#include "interpose.h"
#include "runtime.h"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <pthread.h>
#include <time.h>

// The real sigaction: glibc exports it as __sigaction too, which nothing interposes. Called
// directly, not looked up with dlsym: a sanitizer's runtime calls sigaction (through this library)
// while it initialises, before anything can be looked up, and a handler may call it too, where
// dlsym is not safe.
extern "C" int __sigaction(int, const struct sigaction*, struct sigaction*) noexcept;

// What a sanitizer's runtime may call while it initialises carries no instrumentation of its own.
#define SHAPETRACE_UNINSTRUMENTED __attribute__((disable_sanitizer_instrumentation))

namespace shapetrace::rt {
namespace {

// One termination signal the runtime may stand in for. Whether it does is the kernel's action
// alone (endOnSignal is never handed to the program), so that an action restored past the
// interposed functions (glibc's system() saves and restores SIGINT with its internal sigaction)
// is the stand-in again.
struct StandIn {
  int signal;
  // The default action the stand-in replaces, as the program set (or found) it: reported back as
  // the current action. Written by the program's own calls, which it serialises as it would any
  // sigaction.
  struct sigaction program_default {};
};
// Every signal whose default action ends the process, but the timers profilers use (SIGPROF,
// SIGVTALRM) and SIGTRAP (a debugger's): a service stopped (SIGTERM, SIGINT, SIGHUP, SIGQUIT),
// a crash (SIGABRT from abort() and failed assertions, SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGSYS
// from seccomp), a write to a closed pipe (SIGPIPE), a resource limit (SIGXCPU, SIGXFSZ), or a
// signal nobody handles (SIGALRM, SIGUSR1, SIGUSR2). A fault that repeats when the handler
// returns is raised again here at its default action, so the process still dumps core.
StandIn g_stand_ins[] = {{SIGTERM, {}}, {SIGINT, {}},  {SIGHUP, {}},  {SIGQUIT, {}},
                         {SIGABRT, {}}, {SIGSEGV, {}}, {SIGBUS, {}},  {SIGFPE, {}},
                         {SIGILL, {}},  {SIGSYS, {}},  {SIGPIPE, {}}, {SIGXCPU, {}},
                         {SIGXFSZ, {}}, {SIGALRM, {}}, {SIGUSR1, {}}, {SIGUSR2, {}}};

SHAPETRACE_UNINSTRUMENTED StandIn* standInFor(int signal) {
  for (StandIn& s : g_stand_ins)
    if (s.signal == signal)
      return &s;
  return nullptr;
}

// Whether the stand-in may be (re)installed: only while the runtime runs and was asked to.
std::atomic<bool> g_stand_in_allowed{false};

// 0: no termination signal arrived; 1: the image is being ended; 2: it has been.
std::atomic<int> g_signal_end{0};

// SIG_DFL, with or without SA_SIGINFO (a null sa_sigaction is the same value).
SHAPETRACE_UNINSTRUMENTED bool isDefault(const struct sigaction& action) { return action.sa_handler == SIG_DFL; }

// Waits (async-signal-safely) until the thread that is ending the image has done so, at most a
// little longer than that end may take.
void waitForTheImageEnd() {
  const long limit_ms = long(flags().exit_timeout_ms) + 500;
  for (long waited_ms = 0; g_signal_end.load() != 2 && waited_ms < limit_ms; ++waited_ms) {
    const timespec millisecond{0, 1000000};
    nanosleep(&millisecond, nullptr);
  }
}

void endOnSignal(int signal) {
  const int saved_errno = errno;
  int none = 0;
  if (g_signal_end.compare_exchange_strong(none, 1)) {
    endImageForSignal(signal);
    g_signal_end.store(2);
  } else {
    waitForTheImageEnd();
  }
  // What the default action does: the process ends by this signal.
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  __sigaction(signal, &default_action, nullptr);
  sigset_t just_this;
  sigemptyset(&just_this);
  sigaddset(&just_this, signal);
  pthread_sigmask(SIG_UNBLOCK, &just_this, nullptr);
  raise(signal);
  errno = saved_errno; // reached only where the default action does not end the process
}

SHAPETRACE_UNINSTRUMENTED struct sigaction standInAction() {
  struct sigaction action {};
  action.sa_handler = endOnSignal;
  sigfillset(&action.sa_mask); // no other signal's handler runs inside this one
  action.sa_flags = SA_RESTART;
  return action;
}

// Whether the kernel's action for the signal is the stand-in.
SHAPETRACE_UNINSTRUMENTED bool standsIn(int signal) {
  struct sigaction current {};
  return __sigaction(signal, nullptr, &current) == 0 && (current.sa_flags & SA_SIGINFO) == 0 &&
         current.sa_handler == endOnSignal;
}

// The interposed sigaction, for one of the termination signals. `action` is read before `old` is
// written: they may be the same struct. Uninstrumented, with everything it calls: a sanitizer's
// runtime installs its own handlers for SIGSEGV, SIGBUS, SIGABRT, SIGFPE and SIGILL through it
// while it initialises, before its instrumentation may run.
SHAPETRACE_UNINSTRUMENTED int sigactionOfTerminationSignal(StandIn& s, const struct sigaction* action,
                                 struct sigaction* old) {
  const bool has_action = action != nullptr;
  struct sigaction wanted {};
  if (has_action)
    wanted = *action;
  if (standsIn(s.signal)) {
    const struct sigaction replaced = s.program_default;
    if (has_action && !isDefault(wanted)) {
      const int result = __sigaction(s.signal, &wanted, nullptr);
      if (result != 0)
        return result;
    } else if (has_action) {
      s.program_default = wanted;
    }
    if (old)
      *old = replaced;
    return 0;
  }
  if (has_action && isDefault(wanted) && g_stand_in_allowed.load()) {
    const struct sigaction stand_in = standInAction();
    const int result = __sigaction(s.signal, &stand_in, old);
    if (result == 0)
      s.program_default = wanted;
    return result;
  }
  return __sigaction(s.signal, has_action ? &wanted : nullptr, old);
}

// sysv_signal() in terms of sigaction, as glibc builds it: the handler runs once, unmasked, and
// interrupts system calls.
sighandler_t sysvSignal(int signal, sighandler_t handler) {
  if (handler == SIG_ERR || signal < 1 || signal >= NSIG) {
    errno = EINVAL;
    return SIG_ERR;
  }
  struct sigaction action {};
  action.sa_handler = handler;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESETHAND | SA_NODEFER;
  struct sigaction old {};
  if (sigaction(signal, &action, &old) != 0)
    return SIG_ERR;
  return old.sa_handler;
}

} // namespace

void flushOnTerminatingSignals() {
  // The init of a PID namespace (a container's first process) never gets a signal at its default
  // action: the kernel drops it. A handler would be run instead, interrupting system calls.
  if (getpid() == 1)
    return;
  g_stand_in_allowed.store(true);
  for (StandIn& s : g_stand_ins) {
    struct sigaction current {};
    if (__sigaction(s.signal, nullptr, &current) != 0 || !isDefault(current))
      continue;
    const struct sigaction stand_in = standInAction();
    if (__sigaction(s.signal, &stand_in, nullptr) == 0)
      s.program_default = current;
  }
}

} // namespace shapetrace::rt

using shapetrace::rt::StandIn;

SHAPETRACE_INTERPOSE SHAPETRACE_UNINSTRUMENTED int sigaction(int signal,
                                                             const struct sigaction* action,
                                                             struct sigaction* old) noexcept {
  if (StandIn* s = shapetrace::rt::standInFor(signal))
    return shapetrace::rt::sigactionOfTerminationSignal(*s, action, old);
  return __sigaction(signal, action, old);
}

// glibc's signal() (and its aliases bsd_signal and ssignal) has BSD semantics: restarted system
// calls unless siginterrupt() said otherwise, the signal blocked in its handler. glibc's own does
// all of it, through __sigaction (not through the interposed sigaction), so that where the
// runtime stands in, what it replaced is reported, and SIG_DFL keeps the stand-in.
extern "C" sighandler_t ssignal(int, sighandler_t) noexcept;

namespace {
SHAPETRACE_UNINSTRUMENTED sighandler_t bsdSignal(int signal, sighandler_t handler) {
  StandIn* s = shapetrace::rt::standInFor(signal);
  if (!s || handler == SIG_ERR)
    return ssignal(signal, handler);
  if (handler == SIG_DFL) {
    struct sigaction action {}, old {};
    action.sa_handler = SIG_DFL;
    sigemptyset(&action.sa_mask);
    sigaddset(&action.sa_mask, signal);
    action.sa_flags = SA_RESTART;
    return sigaction(signal, &action, &old) == 0 ? old.sa_handler : SIG_ERR;
  }
  const bool stood_in = shapetrace::rt::standsIn(signal);
  const sighandler_t previous = ssignal(signal, handler);
  return stood_in && previous != SIG_ERR ? s->program_default.sa_handler : previous;
}
} // namespace

SHAPETRACE_INTERPOSE SHAPETRACE_UNINSTRUMENTED sighandler_t signal(int signal,
                                                                  sighandler_t handler) noexcept {
  return bsdSignal(signal, handler);
}

SHAPETRACE_INTERPOSE SHAPETRACE_UNINSTRUMENTED sighandler_t bsd_signal(int signal,
                                                                      sighandler_t handler) noexcept {
  return bsdSignal(signal, handler);
}

SHAPETRACE_INTERPOSE SHAPETRACE_UNINSTRUMENTED sighandler_t sysv_signal(int signal,
                                                                       sighandler_t handler) noexcept {
  return shapetrace::rt::sysvSignal(signal, handler);
}

SHAPETRACE_INTERPOSE SHAPETRACE_UNINSTRUMENTED sighandler_t
__sysv_signal(int signal, sighandler_t handler) noexcept {
  return shapetrace::rt::sysvSignal(signal, handler);
}

// System V's sigset(): SIG_HOLD blocks the signal; any other disposition is set (no flags, an
// empty mask) and unblocks it. Returns SIG_HOLD when the signal was blocked, else the previous
// disposition: for the three signals, through the interposed sigaction, what the stand-in replaced.
SHAPETRACE_INTERPOSE SHAPETRACE_UNINSTRUMENTED sighandler_t sigset(int signal,
                                                                  sighandler_t disposition) noexcept {
  if (disposition == SIG_ERR || signal < 1 || signal >= NSIG) {
    errno = EINVAL;
    return SIG_ERR;
  }
  sigset_t just_this, was_blocked;
  sigemptyset(&just_this);
  sigaddset(&just_this, signal);
  if (sigprocmask(SIG_BLOCK, nullptr, &was_blocked) != 0)
    return SIG_ERR;
  struct sigaction old {};
  if (disposition == SIG_HOLD) {
    if (sigaction(signal, nullptr, &old) != 0 || sigprocmask(SIG_BLOCK, &just_this, nullptr) != 0)
      return SIG_ERR;
  } else {
    struct sigaction action {};
    action.sa_handler = disposition;
    sigemptyset(&action.sa_mask);
    if (sigaction(signal, &action, &old) != 0 ||
        sigprocmask(SIG_UNBLOCK, &just_this, nullptr) != 0)
      return SIG_ERR;
  }
  return sigismember(&was_blocked, signal) ? SIG_HOLD : old.sa_handler;
}
