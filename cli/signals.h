// Clean shutdown on SIGINT/SIGTERM/SIGHUP for the long-running commands (collect, record, live,
// analyze --live, summarize --live, fleet): the
// handler only records the signal; the receive loop checks it at least every 100 ms. SIGHUP is the
// terminal going away: without a handler it would end the command before it finished its
// recording.
#pragma once

#include <atomic>
#include <csignal>
#include <iterator>

namespace shapetrace::cli {

// The signal number that arrived (0 while none did).
inline std::atomic<int> stop_signal{0};
// How many arrived: a command that finishes its work after the first (a live analysis catching up
// with what it received) stops at once on the next.
inline std::atomic<int> stop_signals{0};
// Whether it was sent by a process (kill) rather than by the terminal (Ctrl-C reaches the whole
// foreground process group, so `record` must not forward it to its program a second time).
inline std::atomic<bool> stop_signal_from_process{false};

inline constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP};
// The actions the command was started with, replaced by installStopHandlers(): a program that
// `record` starts gets them back (a background job's SIGINT stays ignored, as without `record`).
inline struct sigaction inherited_stop_actions[std::size(kStopSignals)];

inline void installStopHandlers() {
  struct sigaction action {};
  action.sa_flags = SA_SIGINFO;
  action.sa_sigaction = [](int signal, siginfo_t* info, void*) {
    stop_signal_from_process.store(info && info->si_code != SI_KERNEL, std::memory_order_relaxed);
    stop_signal.store(signal, std::memory_order_relaxed);
    stop_signals.fetch_add(1, std::memory_order_relaxed);
  };
  sigemptyset(&action.sa_mask);
  for (size_t i = 0; i < std::size(kStopSignals); ++i)
    sigaction(kStopSignals[i], &action, &inherited_stop_actions[i]);
}

// True once another stop signal arrives after this call: "the next Ctrl-C stops at once".
inline auto anotherStopSignal() {
  return [at_call = stop_signals.load()] { return stop_signals.load() > at_call; };
}

// In a child about to exec a program: the stop signals' actions as the command found them.
inline void restoreInheritedStopActions() {
  for (size_t i = 0; i < std::size(kStopSignals); ++i)
    sigaction(kStopSignals[i], &inherited_stop_actions[i], nullptr);
}

} // namespace shapetrace::cli
