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
#include <set>
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

// Whether recording is on: the exported __shapetrace_enabled (abi.h), which the hooks and code
// instrumented for ABI version 2 read. Off until the runtime has started, so a hook that runs
// earlier records nothing.
inline bool recordingEnabled() {
  return std::atomic_ref<uint8_t>(__shapetrace_enabled).load(std::memory_order_relaxed) != 0;
}
// Switches recording: __shapetrace_enabled, then the flag of every registered image (abi.h,
// image_enabled), which instrumented code reads.
void setRecordingEnabled(bool on);
// Recording off as the image ends, from a signal handler or _exit, which may have interrupted the
// holder of modules_mutex: images whose flag cannot be reached then keep it on, and their hooks
// find __shapetrace_enabled off.
void setRecordingOffAtImageEnd();

// What the hooks read: constant-initialised, so that it is valid before any constructor runs.
struct HotState {
  // Blocking mode (SHAPETRACE_BLOCKING): producers wait for ring space while this is true.
  std::atomic<bool> blocking_wait{false};
  // Threads waiting for ring space right now (blocking mode): the drain then runs back to back.
  std::atomic<uint32_t> waiting_producers{0};
  bool blocking = false;
  // Recording is on and no call may be throttled (SHAPETRACE_THROTTLE off): the hooks' one test.
  // Otherwise they look further (recordingEnabled, the function's throttle word).
  std::atomic<uint8_t> record_every_call{0};
  // The throttle table (throttle.h) when throttling is on, set before recording starts.
  std::atomic<uint64_t>* throttled = nullptr;
  // Events from threads after their exit destructor ran, or after shutdown began, or that
  // interrupted a hook before the thread had a ring.
  std::atomic<uint64_t> late_events{0};
};
extern constinit HotState g_hot;

struct Runtime {
  std::atomic<Phase> phase{Phase::NotStarted};
  bool enabled_at_start = true;
  // Attach on demand: recording follows the collector's connection (Drain::followPeer) until the
  // program switches it itself. Written under recording_switch, so that a switch by the program
  // and one by the drain never cross.
  std::atomic<bool> on_demand{false};
  std::mutex recording_switch;
  uint64_t ring_bytes = 0;
  // Written by start, fork and a failed exec (the drain); read by the drain and by exec's link.
  std::atomic<uint64_t> process_key{0};
  uint64_t parent_process_key = 0;
  uint64_t previous_image = 0; // the image this one replaced by exec (SHAPETRACE_EXEC_FROM)
  TickSource tick_source = TickSource::Monotonic;
  Registry registry;

  // Module tables, kept so that a forked child can announce them again.
  std::mutex modules_mutex;
  uint32_t next_function_id = 0;
  std::vector<wire::ModuleTable> modules;
  // Modules refused (unknown ABI version, no ids left), so that each is refused once.
  std::set<const void*> refused_modules;
  // The recording flags of the images whose modules are registered (abi.h, image_enabled; the
  // modules of one image share one), each with its count of registered modules: written under
  // modules_mutex, which unregistering holds too, so never after dlclose unmapped one.
  struct ImageFlag {
    uint8_t* flag;
    uint32_t modules;
  };
  std::vector<ImageFlag> image_flags;
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
// Process boundaries the library destructor does not see (exec_hooks.cpp, exit_hooks.cpp). Each
// does nothing in a vfork child (it runs in its parent's memory), on a runtime thread, or when the
// runtime is not recording; each is safe in a signal handler (Drain::endImage).
//
// exec is about to replace the image with `path`: everything recorded is sent, then ProcessEnd
// (reason exec), within SHAPETRACE_EXIT_TIMEOUT_MS. True when the image ended (with or without a
// collector to take what was sent): if exec returns, the caller must call execFailed().
bool endImageForExec(const char* path);
// The exec after endImageForExec() failed with `error`: recording goes on (ExecFailed is sent).
void execFailed(int error);
// _exit/_Exit (and daemon's parent): everything recorded is sent, ThreadEnds, ProcessEnd (reason
// exitImmediately, `status`).
void endImageForExit(int status);
// A signal whose default action ends the process arrived (signal_hooks.cpp's stand-in): everything
// recorded is sent, ThreadEnds, ProcessEnd (reason signal, its number); then the signal does end it.
void endImageForSignal(int signal);
// SIGTERM, SIGINT and SIGHUP, where the program's action is the default, get a stand-in handler that
// ends the image (endImageForSignal) and then the process by the signal, unseen by the program
// (SHAPETRACE_FLUSH_ON_SIGNAL; signal_hooks.cpp).
void flushOnTerminatingSignals();
// "SHAPETRACE_EXEC_FROM=<pid>:<process key>:<parent process key>" (hexadecimal keys) for the
// environment of the image exec is about to start, so that it links itself to this one; false
// (nothing written) when this process has no image of its own to link to. Allocates nothing.
bool execLinkEntry(char* buffer, size_t size);
// exit()'s status (an on_exit handler, exit_hooks.cpp), for the ProcessEnd of an ordinary exit.
void noteExitStatus(int status);
inline constexpr char kExecFromVariable[] = "SHAPETRACE_EXEC_FROM";
// setjmp/longjmp (jumps.cpp; implemented in hooks.cpp beside the bookkeeping they change). The
// caller holds the thread's guard (t_local.busy).
// The calls the thread tracks as open (recorded or not).
uint32_t trackedOpenCalls();
// The number of open calls the thread tracks, for a setjmp; the thread's first setjmp while
// recording also asks the drain to keep its open frames' ids (kTrackFramesMarker).
uint32_t openCallsForSetjmp();
// A longjmp to a setjmp made with `target_calls` open calls: the calls above end, and the
// recorded ones among them are sent as abandoned exits (kAbandonMarker). `interrupted_a_hook`:
// the jump leaves a signal handler that interrupted one of this thread's hooks.
void abandonCalls(uint32_t target_calls, bool interrupted_a_hook);
// jumps.cpp: looks the real setjmp and longjmp functions up at start (a handler may need them,
// and dlsym is not async-signal-safe); forgets the forking thread's setjmps in a fork child.
void resolveJumpFunctions();
void forgetJumpPointsAfterFork();
// A fresh random process key (never 0).
uint64_t newProcessKey();
// First event of a thread: maps its state and registers it. nullptr when tracing is impossible
// now (shut down, thread exiting, no memory).
ThreadState* attachThread(ThreadLocal& local);

} // namespace shapetrace::rt
