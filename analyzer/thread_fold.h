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

namespace shapetrace::analyzer {

// The thread id a process's folded threads are listed under: one no thread of Linux has (thread
// ids are below 2^22).
constexpr uint32_t kFoldedThreadsId = UINT32_MAX;

// An empty result to fold threads into, with the threads' settings (the timeline's bins).
ThreadResult foldedThreads(const ThreadAnalyzerSettings& settings);

// Adds the result of the ended thread `key` to `folded` (its process's folded threads).
void foldThread(ThreadResult& folded, const ThreadResult& thread, const ThreadKey& key,
                const ThreadAnalyzerSettings& settings);

} // namespace shapetrace::analyzer
