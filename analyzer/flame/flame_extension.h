// The extension "flame": the exact calling-context tree of the run (flame_tree.h), for the flame
// graph and the funky graph of 003 and for the exports (`shapetrace export`).
//
// Each thread's calls come through the call stream (call_stack.h) into a FlameSink, which keeps the
// thread's tree of distinct stacks of process function ids. Memory is bounded by distinct stacks:
// at most `max_nodes` nodes per thread (kDefaultMaxNodes, about 48 bytes each with the hash
// entry). Past the bound a call whose stack is new gets no node: it and everything it calls count
// as its caller's own time, and the calls are counted (`truncated_calls`), never silently lost.
// The result merges the threads by function identity (the model's function indices), threads in
// (process, thread) order and each thread's nodes in their order of first entry, so the merged
// node ids are deterministic for any -j.
//
// Ended threads the Analyzer folds (thread_fold.h) are added into their process's folded threads:
// one tree of the process's function ids (bounded by `max_nodes` like a thread's; a stack past it
// counts its calls as truncated and its own time as its nearest caller's) and its slices at one
// width (widened as a thread's are), listed as a thread under kFoldedThreadsId.
//
// Calls closed by an outer exit (a longjmp-like escape; their duration only an upper bound) are
// counted, not timed, as in the shapes' statistics: their time is their measured caller's own.
// Calls discarded at a gap or still open at the end are not counted, but a node entered by them
// stays (with no calls), so the calls they finished keep their stacks.
#pragma once

#include "extension.h"
#include "flame/flame_slices.h"
#include "flame/flame_tree.h"

#include <cstdint>
#include <map>
#include <vector>

namespace shapetrace::analyzer {

// A call-stack sink: the calling-context tree of one thread.
class FlameSink {
public:
  explicit FlameSink(size_t max_nodes) : tree_(max_nodes) {}
  // With `max_slices` > 0, also each node's values per time slice (flame_slices.h).
  FlameSink(size_t max_nodes, uint32_t max_slices) : tree_(max_nodes) {
    if (max_slices > 0) slices_.emplace_back(max_slices);
  }
  void onEnter(uint32_t function, uint32_t depth, uint64_t time_ns);
  void onCall(const FinishedCall& call);
  void onLeaf(const FinishedCall& call);
  void onReset() { open_.clear(); }

  const FlameTree& tree() const { return tree_; } // functions are the process's ids
  FlameTree& tree() { return tree_; }
  uint64_t truncatedCalls() const { return truncated_calls_; }
  const FlameSlices* slices() const { return slices_.empty() ? nullptr : &slices_.front(); }

private:
  struct Open {
    uint32_t node;      // FlameTree::kNoNode: past the bound
    uint64_t callee_ns; // the time of its measured callees so far
  };
  uint32_t childOfTop(uint32_t function);
  void account(uint32_t node, const FinishedCall& call, uint64_t callee_ns);

  FlameTree tree_;
  std::vector<Open> open_;
  uint64_t truncated_calls_ = 0;
  std::vector<FlameSlices> slices_; // one, or none
};

// The merged tree with the model's function indices, and each thread's part of it.
struct MergedFlame {
  struct Thread {
    ThreadKey key;
    // Per node of the thread's own tree (but its root): the merged node it is, and its values.
    std::vector<uint32_t> nodes;
    std::vector<FlameNode> values;
    // The thread's own tree with merged function indices (its node i+1 is nodes[i]); empty
    // (the root alone) unless merged() was asked for it.
    FlameTree tree;
  };
  FlameTree tree;
  std::vector<Thread> threads; // in (process, thread) order, as the extension's consumers
  uint64_t truncated_calls = 0;
};

// A tree as the model writes it: {"parent": [], "function": [], "calls": [], "measured": [],
// "total_ns": [], "self_ns": []} (columns; node 0 the root (-1, -1), whose calls and total are its
// children's).
nlohmann::ordered_json treeColumns(const FlameTree& tree);

class FlameExtension final : public Extension {
public:
  static constexpr std::string_view kName = "flame";
  static constexpr size_t kDefaultMaxNodes = size_t{1} << 20;

  // (node, slice) entries the merged slices may hold in the result (about 40 bytes each in JSON):
  // past it the slices are widened until they fit, and the result says how often.
  static constexpr size_t kMaxResultSliceEntries = size_t{1} << 17;

  explicit FlameExtension(size_t max_nodes_per_thread = kDefaultMaxNodes,
                          uint32_t max_depth = kDefaultMaxDepth,
                          uint32_t max_slices = FlameSlices::kDefaultMaxSlices)
      : max_nodes_(max_nodes_per_thread), max_depth_(max_depth), max_slices_(max_slices) {}
  std::unique_ptr<ThreadConsumer> consumerFor(const ThreadKey& thread) override;
  bool foldsThreads() const override { return true; }
  // A folded process's tree and slices are added into the folded processes' (by identity).
  bool foldsProcesses() const override { return true; }
  void foldProcess(uint64_t process,
                   const std::function<uint32_t(uint32_t)>& function_of) override;
  void foldThread(const ThreadKey& thread) override;
  // {"max_nodes_per_thread", "truncated_calls",
  //  "nodes": {"parent": [], "function": [], "calls": [], "measured": [], "total_ns": [],
  //            "self_ns": []},                       // columns, node 0 the root (-1, -1)
  //  "threads": [{"process", "thread", "nodes": [merged ids], "calls": [], "measured": [],
  //               "total_ns": [], "self_ns": []}],   // the thread's values on those nodes
  //  "slices": {"width_ns", "max_per_thread", "widened_for_size",
  //             "slices": [{"start_ns", "nodes": [merged ids], "calls": [], "measured": [],
  //                         "total_ns": [], "self_ns": []}]}}   // all threads, by call end
  nlohmann::ordered_json result(const Analysis& analysis, FunctionIndex& functions) const override;

  // The merged tree and each thread's nodes and values on it; with `thread_trees`, each thread's
  // own tree too (what `export --thread` needs; the JSON result does not).
  MergedFlame merged(FunctionIndex& functions, bool thread_trees = true) const;

  // Every thread's slices on the merged tree's nodes (`merged` from merged()), summed over threads,
  // at the narrowest width every thread's slices fit (its shift returned in `shift`).
  std::vector<FlameSlice> mergedSlices(const MergedFlame& merged, unsigned& shift) const;

private:
  using Consumer = CallStreamConsumer<FlameSink>;
  // A process's folded threads: their trees added into one, their slices at one width.
  struct Folded {
    explicit Folded(size_t max_nodes) : tree(max_nodes) {}
    FlameTree tree; // the process's function ids
    std::vector<FlameSlice> slices; // in time order, 2^shift wide, on `tree`'s nodes
    unsigned shift = FlameSlices::kFirstShift;
    uint64_t truncated_calls = 0;
    std::vector<uint32_t> position; // scratch for addSlices: a node's place in one slice
  };
  // What the model merges for one entry of the threads: a thread's consumer or a process's folded
  // threads.
  struct Part {
    const FlameTree* tree = nullptr;
    uint64_t truncated_calls = 0;
    const FlameSlices* slices = nullptr; // a thread's, when it keeps slices
    const Folded* folded = nullptr;      // a process's folded threads
  };
  // Every part in (process, thread) order, a process's folded threads last.
  std::map<ThreadKey, Part> parts() const;
  void fold(Folded& into, const FlameSink& thread);
  void addTree(Folded& into, const FlameTree& local, uint64_t truncated_calls,
               const std::vector<FlameSlice>* slices, unsigned shift,
               const std::function<uint32_t(uint32_t)>& function_of);
  // Adds slices on `into`'s tree's nodes, 2^shift wide and in time order, to its slices.
  void addSlices(Folded& into, std::vector<FlameSlice> slices, unsigned shift);

  size_t max_nodes_;
  uint32_t max_depth_; // calls deeper are left out, as the analysis leaves them out
  uint32_t max_slices_;
  std::map<ThreadKey, const Consumer*> consumers_;
  std::map<uint64_t, Folded> folded_; // by process (the folded processes: kFoldedProcessesKey)
};

} // namespace shapetrace::analyzer
