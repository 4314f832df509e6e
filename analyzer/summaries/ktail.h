// Reiss & Renieris' finite state automaton inference (002, "Finite State Automata Encoding"): a
// deterministic automaton accepting one or more sequences, in which any k-tail (a string of k
// symbols readable from a state) starts at one state only (docs/summaries.md).
//
// Every sequence is extended by k end symbols "$" for its tails, and the automaton reads one "$"
// into its single final state. Building goes through the sequence once: at each position the
// state is mapped to the k-tail that starts there (if another state has that tail the two are
// merged, and merging is recursive to keep the automaton deterministic), then the symbol is read:
// along the existing transition; else, with the self-loop modification, as a loop on the current
// state when it already has an incoming transition on that symbol; else into a new state. Tails
// that merges create are ignored while building; post-processing merges states that share a k-tail
// until none do, and finally minimizes the automaton (Moore's partition refinement). With 002's
// second self-loop modification, "the initial instance of X causes a transition to the state
// representing the loop and is not part of the loop itself": a tail takes a loop on X only right
// after reading X, so a state entering a loop state on X does not share the loop's tails, nor does
// any state whose tail would read a run's first X on the loop further along.
#pragma once

#include "summaries/symbols.h"

#include <nlohmann/json.hpp>

#include <array>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace shapetrace::analyzer::summaries {

inline constexpr uint32_t kMaxTail = 8; // the largest k

struct Automaton {
  struct Transition {
    uint32_t from;
    uint32_t symbol; // a terminal, or kEndSymbol into the final state
    uint32_t to;
    friend bool operator==(const Transition&, const Transition&) = default;
  };
  uint32_t k = 3;
  uint32_t states = 0; // numbered from the start state (0) in breadth-first order
  uint32_t start = 0;
  uint32_t final = 0;
  std::vector<Transition> transitions; // by state, then symbol
  uint64_t sequences = 0;
  uint64_t symbols = 0;           // read, without the end symbols
  bool tails_truncated = false;   // post-processing enumerated at most its bound of k-tails
};

class KTailBuilder {
public:
  struct Options {
    uint32_t k = 3;           // 1 .. kMaxTail
    bool self_loops = true;   // 002's two modifications (false: the basic algorithm)
    // The second modification alone: in post-processing, a tail takes a loop on X only right
    // after reading X (ignored without self_loops).
    bool keep_loop_entries = true;
    // Post-processing enumerates at most this many k-tails per round; beyond it, the tails of
    // the remaining states are not compared (counted in Automaton::tails_truncated).
    uint64_t max_tails = uint64_t{1} << 24;
  };
  KTailBuilder() : KTailBuilder(Options{}) {}
  explicit KTailBuilder(Options options);

  void beginSequence();
  void push(uint32_t symbol);
  void endSequence();

  // Post-processing and minimization of what was built (the builder is left as it was).
  Automaton automaton() const;
  // The automaton as built, before post-processing (for tests of the building step).
  Automaton built() const;

private:
  using Tail = std::array<uint32_t, kMaxTail>;
  struct TailHash {
    size_t operator()(const Tail& t) const;
  };
  struct State {
    std::vector<std::pair<uint32_t, uint32_t>> out; // (symbol, target), targets not resolved
    std::vector<uint32_t> incoming;                 // symbols of transitions into it, sorted
  };
  struct Graph {
    std::vector<uint32_t> parent; // union-find
    std::vector<State> states;
    uint32_t find(uint32_t s);
    uint32_t target(uint32_t s, uint32_t symbol); // UINT32_MAX: none
    void addTransition(uint32_t from, uint32_t symbol, uint32_t to);
    void merge(uint32_t a, uint32_t b);
    uint32_t add();
  };

  void step();
  static Automaton extract(Graph graph, uint32_t final, const Options& options, bool minimize,
                           uint64_t sequences, uint64_t symbols, bool truncated);
  static bool postMerge(Graph& graph, uint32_t final, const Options& options, bool& truncated);

  Options options_;
  Graph graph_;
  uint32_t final_ = UINT32_MAX;
  std::unordered_map<Tail, uint32_t, TailHash> state_of_tail_;
  // The sequence being read: its state and the symbols whose tails are not complete yet.
  uint32_t current_ = 0;
  std::vector<uint32_t> pending_;
  bool in_sequence_ = false;
  uint64_t sequences_ = 0;
  uint64_t symbols_ = 0;
};

using TerminalNamer = std::function<std::string(uint32_t terminal)>;

// Graphviz: states as circles (the final one doubled, the start one bold), one edge per
// transition labelled with the symbol.
std::string automatonDot(const Automaton& a, const TerminalNamer& name);
// {"k", "states", "start", "final", "sequences", "symbols", "tails_truncated",
//  "transitions": [{"from", "to", "symbol": text, "code": terminalCode or null for "$"}]}
nlohmann::ordered_json automatonJson(const Automaton& a, const TerminalNamer& name);

} // namespace shapetrace::analyzer::summaries
