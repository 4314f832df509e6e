// Ended threads folded into one result per process, so that a long run's memory follows the
// threads alive, not every thread it ever had (a thread-per-request service has millions).
//
// A process's folded threads are a ThreadResult like any thread's, in the process's function ids:
// each ended thread's shapes and DAG nodes interned into it, its statistics, timeline cells,
// diagnostics and counts added, its outliers kept among the most extreme (each still naming its
// thread). The merge (analysis.h) takes it as one more thread, listed as the process's folded
// threads (ThreadSummary::folded_threads). The Analyzer folds only past a number of ended threads
// kept whole (AnalysisSettings::kept_ended_threads), so a recording with fewer threads is analysed
// exactly as before.
#pragma once

#include "thread_result.h"

#include <cstdint>
#include <functional>

namespace shapetrace::analyzer {

// The thread id a process's folded threads are listed under: one no thread of Linux has (thread
// ids are below 2^22).
constexpr uint32_t kFoldedThreadsId = UINT32_MAX;

// The process key the folded processes are listed under (a process key is drawn at random: a stream
// that uses this one has its process counted among the folded ones).
constexpr uint64_t kFoldedProcessesKey = UINT64_MAX;

// An empty result to fold threads into, with the threads' settings (the timeline's bins).
ThreadResult foldedThreads(const ThreadAnalyzerSettings& settings);

// Adds the result of the ended thread `key` to `folded` (its process's folded threads).
void foldThread(ThreadResult& folded, const ThreadResult& thread, const ThreadKey& key,
                const ThreadAnalyzerSettings& settings);

// Adds an ended process's folded threads (all of its threads, folded) to `folded`, the folded
// processes' result, whose function ids are interned by identity across processes: `function_of`
// maps the process's function ids to them.
void foldProcess(ThreadResult& folded, const ThreadResult& process_threads,
                 const std::function<uint32_t(uint32_t)>& function_of,
                 const ThreadAnalyzerSettings& settings);

} // namespace shapetrace::analyzer
