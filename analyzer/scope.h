// What part of a run a command looks at, named one way for every command (summarize, compare,
// export; docs/summaries.md "Scopes"): threads, the calls of a function, shape or cluster, one call
// instance, a time window, and how deep below each call.
//
// A request holds what the user typed; resolveScope() checks it against the analysis of the
// recording and turns it into ids. Names that are not in the recording are errors (ScopeError,
// exit 1); text that cannot mean anything (a time without a number) is a usage error
// (std::invalid_argument, exit 2).
#pragma once

#include "analysis.h"

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace shapetrace::analyzer {

struct ScopeError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct ScopeRequest {
  std::string thread;   // a thread id, PROCESS:ID, or a thread name (all threads of that name)
  std::string function; // a function's name (with or without its parameters) or mangled name
  std::string shape;    // a shape id of the analysis
  std::string cluster;  // a cluster id of the analysis
  std::string instance; // THREAD@TIME (the outermost call starting then), or outlier:N
  std::string from, to; // times (parseTime)
  uint32_t depth = UINT32_MAX; // levels of calls kept below each root (0: the roots alone)
};

struct Scope {
  enum class Roots : uint8_t {
    kThread,    // a sequence per thread: the calls that start in the window
    kFunctions, // a sequence per outermost call of the functions starting in the window
    kShapes,    // a sequence per outermost call of the shapes (clusters) starting in the window
    kInstance,  // one call
  };
  Roots roots = Roots::kThread;
  std::vector<ThreadKey> threads;  // never empty
  std::vector<bool> functions;     // kFunctions: by analysis function index
  std::vector<bool> shapes;        // kShapes: by analysis shape id
  uint64_t instance_ns = 0;        // kInstance: the call's start
  uint32_t instance_function = UINT32_MAX; // kInstance: its function (UINT32_MAX: the outermost)
  uint64_t from_ns = 0;
  uint64_t to_ns = UINT64_MAX;
  uint32_t depth = UINT32_MAX;
  std::string description; // "thread worker-0 (4321), calls of kv::Store::put, 2 s .. 3 s"

  bool inWindow(uint64_t time_ns) const { return time_ns >= from_ns && time_ns < to_ns; }
};

// Relative times count from `run_start_ns`, the run's first event (UINT64_MAX: unknown, 0 used).
Scope resolveScope(const Analysis& analysis, uint64_t run_start_ns, const ScopeRequest& request);
// Whether the request names something only the analysis knows (a shape, a cluster, an outlier):
// otherwise the recording's names (replay.h namesOf) suffice.
bool needsAnalysis(const ScopeRequest& request);

// The threads `selector` names: a thread id, "process:thread", or a thread name. Throws ScopeError
// listing the recording's threads when none matches.
std::vector<ThreadKey> selectThreads(const Analysis& analysis, const std::string& selector);
// "worker-0 (13789)"; the process key is added only when the trace holds several processes.
std::string threadLabel(const Analysis& analysis, const ThreadKey& thread);
// threadLabel() for many threads of one analysis: the threads are looked at once, not once a
// label (a table of 100,000 threads would otherwise take 10^10 steps).
class ThreadLabels {
public:
  explicit ThreadLabels(const Analysis& analysis);
  std::string operator()(const ThreadKey& thread) const;

private:
  bool several_processes_ = false;
  std::map<ThreadKey, const ThreadSummary*> threads_;
};
// "LOSS: the input is not what was recorded: 25 event batches lost at threads' ends, ...; threads
// 7:101, 7:102 (see diagnostics)": the headline every command prints when the recording or the
// live input lost or repeated batches or frames; empty when it did not.
std::string inputLossLine(const Analysis& analysis);
// "throttled (SHAPETRACE_THROTTLE; not recorded from then on):" and a line per throttled function
// (when, on which thread, after how many short calls, how many calls were not recorded); empty
// when the runtime throttled none.
std::string throttledLines(const Analysis& analysis);
// "FILTERED: 3 functions filtered out at build, 1 throttled (their calls are not in the
// recording; see docs/analyzer.md)": the headline of a recording whose build or runtime left
// functions out; empty when none was.
std::string filteredLine(const Analysis& analysis);
// Whether `name` names the function: its display name, that name without its parameter list
// ("ns::Class::method") and also without ABI tags ("ns::make" for "ns::make[abi:cxx11]"), or its
// mangled name.
bool namesFunction(const FunctionName& function, std::string_view name);
// Analysis function indices named by `name` (namesFunction). Throws ScopeError suggesting names
// that contain it when none matches.
std::vector<uint32_t> selectFunctions(const Analysis& analysis, const std::string& name);

// A recorded value named as the pass's choices and uftrace's -A/-R name it: FUNCTION@argN (N from
// 1 to 255) or FUNCTION@retval (position 0). Nothing for any other text.
struct ValueChoice {
  std::string function;
  uint8_t position = 0; // N of argN, 0 for retval
};
std::optional<ValueChoice> parseValueChoice(const std::string& text);

// A time: digits alone are absolute nanoseconds (as the JSON model and `analyze` write them); a
// number with a unit (ns, us, ms, s) is relative to the run's first event ("1.5s"). Throws
// std::invalid_argument for anything else.
uint64_t parseTime(std::string_view text, uint64_t run_start_ns);
// The check for CLI11: empty when `text` is a time, else the reason.
std::string checkTime(const std::string& text);

} // namespace shapetrace::analyzer
