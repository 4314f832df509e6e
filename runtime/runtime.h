// The process-wide runtime state shared by the hooks, the drain thread and the public API, and the
// lifecycle entry points (start, fork, exit). Internal: nothing here is exported.
#pragma once

#include "clock.h"
#include "sink.h"
#include "thread_state.h"
#include "wire/items.h"
#include "shapetrace/abi.h"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#define SHAPETRACE_EXPORT extern "C" __attribute__((visibility("default")))

namespace shapetrace::rt {

enum class Phase : int { NotStarted, Running, ShutDown };

// Strings the hot path refers to by number (annotation keys, thread names). Bounded, so that a
// program that annotates with ever-new keys cannot grow the runtime without limit.
class StringTable {
public:
  static constexpr uint32_t kMaxStrings = 65536;
  static constexpr uint32_t kFull = UINT32_MAX;
  uint32_t intern(const char* text);  // kFull when the table is full
  std::string lookup(uint32_t id);
  std::mutex& mutex() { return mutex_; }

private:
  std::mutex mutex_;
  std::unordered_map<std::string, uint32_t> ids_;
  std::vector<std::string> strings_;
};

// Whether recording is on: the exported __shapetrace_enabled (abi.h), which instrumented code also
// reads inline. Off until the runtime has started, so a hook that runs earlier records nothing.
inline bool recordingEnabled() {
  return std::atomic_ref<uint8_t>(__shapetrace_enabled).load(std::memory_order_relaxed) != 0;
}
inline void setRecordingEnabled(bool on) {
  std::atomic_ref<uint8_t>(__shapetrace_enabled).store(on ? 1 : 0, std::memory_order_release);
}

// What the hooks read: constant-initialised, so that it is valid before any constructor runs.
struct HotState {
  // Blocking mode (SHAPETRACE_BLOCKING): producers wait for ring space while this is true.
  std::atomic<bool> blocking_wait{false};
  // Threads waiting for ring space right now (blocking mode): the drain then runs back to back.
  std::atomic<uint32_t> waiting_producers{0};
  bool blocking = false;
  // Events from threads after their exit destructor ran, or after shutdown began, or that
  // interrupted a hook before the thread had a ring.
  std::atomic<uint64_t> late_events{0};
};
extern constinit HotState g_hot;

struct Runtime {
  std::atomic<Phase> phase{Phase::NotStarted};
  bool enabled_at_start = true;
  uint64_t ring_bytes = 0;
  uint64_t process_key = 0;
  uint64_t parent_process_key = 0;
  TickSource tick_source = TickSource::Monotonic;
  Registry registry;

  // Module tables, kept so that a forked child can announce them again.
  std::mutex modules_mutex;
  uint32_t next_function_id = 0;
  std::vector<wire::ModuleTable> modules;
  // Items waiting for the drain, in order (module tables).
  std::deque<wire::StreamItem> control_queue;

  StringTable strings;
};

Runtime& runtime();
// Idempotent; every entry point calls it (constructors of other libraries may run before ours).
void ensureStarted();
// Wakes the drain for one full cycle and waits for it; true when everything recorded before the
// call was accepted by the sink within timeout_ms.
bool flushFor(uint32_t timeout_ms);
// Before exec (the exec functions are interposed, exec_hooks.cpp): sends what was recorded, within
// SHAPETRACE_EXIT_TIMEOUT_MS. Does nothing in a vfork child (it shares the parent's memory).
void prepareForExec();
// First event of a thread: maps its state and registers it. nullptr when tracing is impossible
// now (shut down, thread exiting, no memory).
ThreadState* attachThread(ThreadLocal& local);

} // namespace shapetrace::rt
