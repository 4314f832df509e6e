// Clean shutdown on SIGINT/SIGTERM for the long-running commands (collect, record): the handler
// only sets a flag that the receive loop checks at least every 100 ms.
#pragma once

#include <atomic>
#include <csignal>

namespace shapetrace::cli {

// Set by the handler; the signal number that arrived (0 while none did).
inline std::atomic<int> stop_signal{0};

inline void installStopHandlers() {
  struct sigaction action {};
  action.sa_handler = [](int signal) { stop_signal.store(signal, std::memory_order_relaxed); };
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

} // namespace shapetrace::cli
