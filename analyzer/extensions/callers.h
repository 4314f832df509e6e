// The extension "callers": for every function, who calls it, how often, and how long those calls
// took (inclusive and exclusive of their callees), over the whole run: gprof's call graph, exact.
//
// Each thread's calls come through the call stream (call_stack.h) into a CallerSink, which keeps
// one entry per distinct (caller, callee) pair of process function ids; the result maps them onto
// the model's functions and sums the threads. Calls closed by an outer exit (no own exit, their
// duration only an upper bound) are counted but their time is not, as in the shapes' statistics.
#pragma once

#include "extension.h"
#include "id_table.h"
#include "pair_map.h"

#include <cstdint>
#include <functional>
#include <map>
#include <vector>

namespace shapetrace::analyzer {

struct CallerTotals {
  uint64_t calls = 0;
  uint64_t measured = 0;  // calls with their own exit: the ones timed below
  uint64_t total_ns = 0;  // inclusive
  uint64_t self_ns = 0;   // exclusive: minus the time of its measured callees
  void add(const CallerTotals& other) {
    calls += other.calls;
    measured += other.measured;
    total_ns += other.total_ns;
    self_ns += other.self_ns;
  }
  friend bool operator==(const CallerTotals&, const CallerTotals&) = default;
};

// A call-stack sink: totals by (caller, callee) of one thread.
class CallerSink {
public:
  struct Edge {
    uint32_t caller; // kNoCaller for calls at the root of the stack
    uint32_t callee;
    CallerTotals totals;
  };

  void onEnter(uint32_t function, uint32_t depth, uint64_t time_ns);
  void onCall(const FinishedCall& call);
  void onLeaf(const FinishedCall& call) { account(call, 0); }
  void onReset() { callee_ns_.clear(); }

  // Every distinct (caller, callee) pair of the thread, in order of first call.
  const std::vector<Edge>& edges() const { return edges_; }
  // Adds another thread's totals (of the same process: its function ids): folding an ended thread
  // into its process's folded threads.
  void add(const CallerSink& other);
  // The same with the other's function ids mapped (folding a process into the folded processes).
  void add(const CallerSink& other, const std::function<uint32_t(uint32_t)>& function_of);

private:
  CallerTotals& totalsOf(uint32_t caller, uint32_t callee);
  CallerTotals& findEdge(uint32_t caller, uint32_t callee);
  void account(const FinishedCall& call, uint64_t callee_ns);

  std::vector<Edge> edges_;
  PairMap edge_of_; // (caller, callee) -> index in edges_
  // Per callee, the edge of its last call: most functions are called from one place most of the
  // time, so this answers most look-ups without hashing.
  IdTable<uint32_t> last_edge_; // sparse: function ids come from the input
  std::vector<uint64_t> callee_ns_; // per open call: the time of its measured callees so far
};

class CallersExtension final : public Extension {
public:
  static constexpr std::string_view kName = "callers";
  // Calls deeper than `max_depth` are not counted, as the analysis leaves them out.
  explicit CallersExtension(uint32_t max_depth = kDefaultMaxDepth) : max_depth_(max_depth) {}
  std::unique_ptr<ThreadConsumer> consumerFor(const ThreadKey& thread) override;
  // An ended thread's totals go into its process's folded threads' (they are summed over threads
  // anyway).
  bool foldsThreads() const override { return true; }
  void foldThread(const ThreadKey& thread) override;
  // A folded process's totals go into the folded processes' (by function identity).
  bool foldsProcesses() const override { return true; }
  void foldProcess(uint64_t process,
                   const std::function<uint32_t(uint32_t)>& function_of) override;
  // {"edges": [{"caller", "callee", "calls", "measured", "total_ns", "self_ns"}...]}: caller and
  // callee are function indices of the model (caller null at the root), sorted by callee, then
  // caller.
  nlohmann::ordered_json result(const Analysis& analysis, FunctionIndex& functions) const override;

  // The threads' totals by (caller, callee) model function index (caller UINT32_MAX: the root).
  std::map<std::pair<uint32_t, uint32_t>, CallerTotals> merged(FunctionIndex& functions) const;

private:
  using Consumer = CallStreamConsumer<CallerSink>;
  uint32_t max_depth_;
  std::map<ThreadKey, const Consumer*> consumers_;
  std::map<uint64_t, CallerSink> folded_; // by process: its folded threads' totals
};

} // namespace shapetrace::analyzer
