// Clean shutdown on SIGINT/SIGTERM/SIGHUP for the long-running commands (collect, record): the
// handler only records the signal; the receive loop checks it at least every 100 ms. SIGHUP is the
// terminal going away: without a handler it would end the command before it finished its
// recording.
#pragma once

#include <atomic>
#include <csignal>

namespace shapetrace::cli {

// The signal number that arrived (0 while none did).
inline std::atomic<int> stop_signal{0};
// Whether it was sent by a process (kill) rather than by the terminal (Ctrl-C reaches the whole
// foreground process group, so `record` must not forward it to its program a second time).
inline std::atomic<bool> stop_signal_from_process{false};

inline void installStopHandlers() {
  struct sigaction action {};
  action.sa_flags = SA_SIGINFO;
  action.sa_sigaction = [](int signal, siginfo_t* info, void*) {
    stop_signal_from_process.store(info && info->si_code != SI_KERNEL, std::memory_order_relaxed);
    stop_signal.store(signal, std::memory_order_relaxed);
  };
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGHUP, &action, nullptr);
}

} // namespace shapetrace::cli
