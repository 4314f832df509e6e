// The analyzer's one entry point for a recording and for a live stream: feed it StreamItems in
// arrival order, take a snapshot (the merged Analysis) whenever wanted.
//
// Module tables name functions, thread items name and end threads, event batches and gaps go to
// that thread's ThreadAnalyzer and to its consumers of the extensions that run (extension.h), which
// also observe every item; a snapshot merges the threads' results and adds the extensions' results. With jobs > 1 every thread is pinned to one of `jobs` workers (so its
// events stay in order) and the workers run in parallel; with jobs == 1 everything runs on the
// caller's thread. The result does not depend on `jobs`: threads are merged in a fixed order.
//
// Not thread-safe: one caller feeds items and takes snapshots.
#pragma once

#include "analysis.h"
#include "extension.h"
#include "wire/items.h"

#include <deque>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace shapetrace::analyzer {

// Tunes glibc's allocator for the analyzer's pattern: every decoded batch is a 64 KiB vector
// allocated by the reader and freed by a worker. By default glibc returns the freed top of the heap
// to the kernel and takes it back for the next batch (page faults, zeroing); keeping it costs a
// few megabytes. Call once, early, in a process that runs the analyzer.
void keepFreedMemory();

// The module tables' functions, by (process key, function id).
using FunctionTables = std::map<std::pair<uint64_t, uint32_t>, wire::FunctionInfo>;

// Longest processing time first: each thread, the largest first, on the least loaded of
// `workers` (ties: the lower worker); thread -> worker.
std::map<ThreadKey, size_t> largestFirstPlan(const std::map<ThreadKey, uint64_t>& work,
                                             size_t workers);

class Analyzer {
public:
  // What the merge takes, as the analyzer holds it: every thread's result (by pointer), the
  // function tables naming their ids, and what was counted before items reached the threads.
  // Valid until the next consume().
  struct MergeInputs {
    std::vector<ThreadInput> threads;
    const FunctionTables* functions = nullptr;
    Diagnostics input_diagnostics;
  };

  explicit Analyzer(const AnalysisSettings& settings = {}, unsigned jobs = 1,
                    std::vector<NamedExtension> extensions = {});
  ~Analyzer();
  Analyzer(const Analyzer&) = delete;
  Analyzer& operator=(const Analyzer&) = delete;

  // Places threads on the workers by their expected work (their bytes in a recording, say): the
  // largest first, each on the least loaded worker. Otherwise threads go round-robin in order of
  // appearance, and a recording whose busiest threads appear on the same turn keeps one worker
  // busy long after the other. Call before the threads' first items; threads not named go
  // round-robin.
  void planWorkers(const std::map<ThreadKey, uint64_t>& work);

  void consume(wire::StreamItem item);
  // The input is over: calls still open on threads that did not end are closed as unfinished, and
  // the processes whose end never came are counted (processes_without_end).
  void finish();
  // The merged analysis of everything consumed so far. Waits for the workers to catch up.
  Analysis snapshot();
  // The per-thread results a snapshot merges (what a host ships to the fleet, fleet/summary.h).
  // Waits for the workers to catch up.
  MergeInputs mergeInputs();

  // The input holds every thread from its start (a recording): batches missing before a thread's
  // first one are lost too. Call before the first item.
  void readsFromStart() { settings_.thread.from_start = true; }
  // Counts a problem met before items reach the analyzer (damaged recording, bad message).
  void count(Stat stat, uint64_t n = 1) { input_diagnostics_.add(stat, n); }
  uint64_t itemsConsumed() const { return items_; }
  // The running extension of that name, nullptr when it does not run.
  Extension* extension(std::string_view name) const;

private:
  struct ThreadSlot;
  struct Task;
  class Worker;

  ThreadSlot& slotFor(uint64_t process, uint32_t thread);
  void dispatch(ThreadSlot& slot, Task task);
  void hold(ThreadSlot& slot, Task task);
  void runHeld();
  void drain();
  void foldEnded();
  void foldEndedProcesses();
  bool foldProcess(uint64_t process);
  uint32_t foldedFunctionId(uint64_t process, uint32_t id);

  // Ended threads are folded this many at a time past the ones kept whole
  // (AnalysisSettings::kept_ended_threads): each fold waits for the workers.
  static constexpr size_t kFoldBatch = 256;

  // Batches held with jobs == 1 before the threads' tasks run in one go (64 batches of 4096
  // events: 4 MiB).
  static constexpr size_t kMaxHeldTasks = 64;

  AnalysisSettings settings_;
  std::map<ThreadKey, std::unique_ptr<ThreadSlot>> threads_;
  FunctionTables functions_;
  std::vector<NamedExtension> extensions_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::map<ThreadKey, size_t> planned_worker_; // planWorkers()
  Diagnostics input_diagnostics_;
  // Every process seen, and whether its ProcessEnd came.
  std::map<uint64_t, bool> process_ended_;
  // Throttle marks (EventBatch.throttles) and counts (ProcessEnd.throttledCalls) by (process,
  // function id); `function` holds the id until the snapshot maps it.
  std::map<std::pair<uint64_t, uint32_t>, ThrottledFunction> throttles_;
  // (process, function id) of every function a module table says the build left out.
  std::vector<std::pair<uint64_t, uint32_t>> excluded_;
  // Each process's function id of `main`, once a module table names it: its threads' outliers
  // after main returned are marked at exit (ThreadAnalyzer::setMainFunction).
  std::map<uint64_t, uint32_t> main_function_;
  bool finished_ = false;
  uint64_t items_ = 0;
  std::vector<ThreadSlot*> holding_; // slots with held tasks, in order of their first one
  size_t held_tasks_ = 0;
  // Ended threads not folded yet, in the order their ends came (threads followed by an extension
  // that does not fold threads, Extension::foldsThreads, are not folded).
  std::deque<ThreadKey> ended_;
  std::map<uint64_t, ThreadResult> folded_; // by process (thread_fold.h)
  // Ended processes not folded yet, in the order their ends came.
  std::deque<uint64_t> ended_processes_;
  // The folded processes' result (thread_fold.h, foldProcess), under kFoldedProcessesKey, and its
  // function ids by identity (nameFunction): their module-table entries are in functions_.
  ThreadResult folded_processes_;
  std::unordered_map<std::string, uint32_t> folded_function_ids_;
  uint32_t next_folded_function_id_ = UINT32_MAX - 1; // known functions, counted down
};

} // namespace shapetrace::analyzer
