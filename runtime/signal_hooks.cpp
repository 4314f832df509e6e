// Termination signals end the image in the stream first, without the program seeing a handler.
//
// A service is usually stopped by a signal (SIGTERM from its supervisor, SIGINT from a terminal,
// SIGHUP when its terminal goes): at its default action the signal ends the process with its
// rings unsent and no ProcessEnd, a loss of unknown size. So where the program's action for one of
// them is the default, the runtime's handler stands in for it (SHAPETRACE_FLUSH_ON_SIGNAL): it ends
// the image (endImageForSignal: everything sent, ProcessEnd with reason signal), then restores the
// default action, unblocks the signal and raises it, so that the process ends as it would have, by
// that signal, with the status its parent expects.
//
// The stand-in must be invisible, or the program behaves differently: CPython and SDL install
// their SIGINT/SIGTERM handlers only where the action reads SIG_DFL, and a handler that chains to
// the action it replaced would call the runtime's (which ends the process) where it found
// SIG_DFL before (and did nothing). So sigaction, signal, bsd_signal, sysv_signal and
// __sysv_signal are interposed: where the runtime stands in, they report the program's own
// default action, setting SIG_DFL keeps the stand-in, and setting anything else replaces it as it
// would replace SIG_DFL; setting SIG_DFL later (a handler that cleans up, then restores the
// default and raises the signal again) puts the stand-in back. Whatever changes the action past
// these functions (sigset, a raw rt_sigaction) is noticed: the kernel's action is checked before
// the stand-in is reported.
//
// A second termination signal while the first one's image end is under way (GNU timeout signals
// its child, then its process group) waits for that end, then ends the process the same way.
// An ignored signal stays ignored, a program's handler stays the program's, and a program that
// blocks the signal to sigwait for it never runs the stand-in. The runtime's threads block every
// signal.
#include "flags.h"
#include "runtime.h"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <pthread.h>
#include <time.h>

#define SHAPETRACE_INTERPOSE extern "C" __attribute__((visibility("default")))

// The real sigaction: glibc exports it as __sigaction too, which nothing interposes. Called
// directly, not looked up with dlsym: a sanitizer's runtime calls sigaction (through this library)
// while it initialises, before anything can be looked up, and a handler may call it too, where
// dlsym is not safe.
extern "C" int __sigaction(int, const struct sigaction*, struct sigaction*) noexcept;

// What a sanitizer's runtime may call while it initialises carries no instrumentation of its own.
#define SHAPETRACE_UNINSTRUMENTED __attribute__((disable_sanitizer_instrumentation))

namespace shapetrace::rt {
namespace {

// One termination signal the runtime may stand in for.
struct StandIn {
  int signal;
  std::atomic<bool> active{false};
  // The action the program set (or found) that the stand-in replaces: a SIG_DFL with the flags
  // and mask it was set with, reported back as the current action.
  struct sigaction program_default {};
};
StandIn g_stand_ins[] = {{SIGTERM}, {SIGINT}, {SIGHUP}};

SHAPETRACE_UNINSTRUMENTED StandIn* standInFor(int signal) {
  switch (signal) {
  case SIGTERM: return &g_stand_ins[0];
  case SIGINT: return &g_stand_ins[1];
  case SIGHUP: return &g_stand_ins[2];
  default: return nullptr;
  }
}

// Whether the stand-in may be (re)installed: only while the runtime runs and was asked to.
std::atomic<bool> g_stand_in_allowed{false};

// 0: no termination signal arrived; 1: the image is being ended; 2: it has been.
std::atomic<int> g_signal_end{0};

bool isDefault(const struct sigaction& action) {
  return (action.sa_flags & SA_SIGINFO) == 0 && action.sa_handler == SIG_DFL;
}

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
}

struct sigaction standInAction() {
  struct sigaction action {};
  action.sa_handler = endOnSignal;
  sigfillset(&action.sa_mask); // no other signal's handler runs inside this one
  action.sa_flags = SA_RESTART;
  return action;
}

// Whether the kernel's action for the signal is still the stand-in (sigset or a raw system call
// may have replaced it behind the interposed functions).
bool standsInNow(StandIn& s) {
  if (!s.active.load())
    return false;
  struct sigaction current {};
  if (__sigaction(s.signal, nullptr, &current) == 0 && (current.sa_flags & SA_SIGINFO) == 0 &&
      current.sa_handler == endOnSignal)
    return true;
  s.active.store(false);
  return false;
}

// The interposed sigaction, for one of the termination signals.
int sigactionOfTerminationSignal(StandIn& s, const struct sigaction* action,
                                 struct sigaction* old) {
  if (standsInNow(s)) {
    if (old)
      *old = s.program_default;
    if (!action)
      return 0;
    if (isDefault(*action)) {
      s.program_default = *action;
      return 0;
    }
    const int result = __sigaction(s.signal, action, nullptr);
    if (result == 0)
      s.active.store(false);
    return result;
  }
  if (action && isDefault(*action) && g_stand_in_allowed.load()) {
    const struct sigaction stand_in = standInAction();
    const int result = __sigaction(s.signal, &stand_in, old);
    if (result == 0) {
      s.program_default = *action;
      s.active.store(true);
    }
    return result;
  }
  return __sigaction(s.signal, action, old);
}

// signal() and its kin in terms of sigaction, as glibc builds them.
sighandler_t signalWith(int signal, sighandler_t handler, int flags, bool mask_itself) {
  struct sigaction action {};
  action.sa_handler = handler;
  sigemptyset(&action.sa_mask);
  if (mask_itself && sigaddset(&action.sa_mask, signal) != 0)
    return SIG_ERR; // EINVAL, as glibc
  action.sa_flags = flags;
  struct sigaction old {};
  if (sigaction(signal, &action, &old) != 0)
    return SIG_ERR;
  return old.sa_handler;
}

} // namespace

void flushOnTerminatingSignals() {
  g_stand_in_allowed.store(true);
  for (StandIn& s : g_stand_ins) {
    struct sigaction current {};
    if (__sigaction(s.signal, nullptr, &current) != 0 || !isDefault(current))
      continue;
    const struct sigaction stand_in = standInAction();
    if (__sigaction(s.signal, &stand_in, nullptr) == 0) {
      s.program_default = current;
      s.active.store(true);
    }
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

// glibc's signal() has BSD semantics (restarted system calls, the signal blocked in its handler),
// sysv_signal() System V's (the handler runs once, unmasked, and interrupts system calls), as
// built here on sigaction. Other signals than the three keep glibc's own signal(), through its
// alias ssignal (which honours siginterrupt()).
extern "C" sighandler_t ssignal(int, sighandler_t) noexcept;

SHAPETRACE_INTERPOSE SHAPETRACE_UNINSTRUMENTED sighandler_t signal(int signal,
                                                                  sighandler_t handler) noexcept {
  if (!shapetrace::rt::standInFor(signal))
    return ssignal(signal, handler);
  return shapetrace::rt::signalWith(signal, handler, SA_RESTART, true);
}

SHAPETRACE_INTERPOSE SHAPETRACE_UNINSTRUMENTED sighandler_t bsd_signal(int signal,
                                                                      sighandler_t handler) noexcept {
  return ::signal(signal, handler);
}

SHAPETRACE_INTERPOSE SHAPETRACE_UNINSTRUMENTED sighandler_t sysv_signal(int signal,
                                                                       sighandler_t handler) noexcept {
  return shapetrace::rt::signalWith(signal, handler, SA_RESETHAND | SA_NODEFER, false);
}

SHAPETRACE_INTERPOSE SHAPETRACE_UNINSTRUMENTED sighandler_t
__sysv_signal(int signal, sighandler_t handler) noexcept {
  return shapetrace::rt::signalWith(signal, handler, SA_RESETHAND | SA_NODEFER, false);
}
