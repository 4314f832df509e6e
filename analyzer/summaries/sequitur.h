// Sequitur (Nevill-Manning & Witten): an online, linear-time inference of a context-free grammar
// from a sequence, which Reiss & Renieris use to encode call strings and the ThreadViewer proposal
// to summarise a thread (docs/summaries.md).
//
// The grammar keeps two properties after every symbol:
// - digram uniqueness: no pair of adjacent symbols appears more than once in the grammar;
// - rule utility: every rule is used more than once.
// A repeated digram becomes a rule (or is replaced by the rule it already is), and a rule whose
// uses fall to one is expanded in place. Symbols are doubly linked in circular lists, one per
// rule, closed by a guard node; a hash table indexes each digram's (first) occurrence. The memory
// is proportional to the grammar, not to the input: about 28 bytes per grammar symbol.
//
// The implementation follows Nevill-Manning's reference code (sequitur_simple.cc): overlapping
// digrams ("aaa") are not replaced, and when a triple loses a digram its other one is put back in
// the index. It checks both ends of a new rule for an underused rule (the reference only the
// first), and it indexes both digrams that the expansion of a rule forms.
//
// Balanced mode (002's restriction, after Nevill-Manning's thesis): terminals are brackets (an
// entry opens, an exit or a return closes, symbols.h) and only digrams whose expansion never closes
// below its start are considered, so every rule is well nested or starts with an open bracket and
// has more opening than closing ones.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace shapetrace::analyzer::summaries {

// A symbol of a grammar: a terminal (symbols.h, below 2^30) or a reference to rule r
// (kRuleRef | r).
using GrammarSymbol = uint32_t;
inline constexpr uint32_t kRuleRef = uint32_t{1} << 31;
inline constexpr bool isRuleRef(GrammarSymbol s) { return (s & kRuleRef) != 0; }
inline constexpr uint32_t ruleIndex(GrammarSymbol s) { return s & ~kRuleRef; }

// A grammar as Sequitur leaves it: rules[0] is the sequence (S), the other rules are numbered in
// post-order of their first use from S (a rule's sub-rules before it: Reiss & Renieris' R1, R2,
// R3 of ABBBBBBBBBCDDDBCDC).
struct Grammar {
  std::vector<std::vector<GrammarSymbol>> rules;
};

// The expansion of rule `rule` (terminals). For tests and small grammars.
std::vector<uint32_t> expand(const Grammar& grammar, uint32_t rule = 0);

// Bracket profile of a string: its net depth change, and the lowest depth it reaches (<= 0)
// relative to its start. A string is well nested when both are 0.
struct BracketProfile {
  int64_t net = 0;
  int64_t low = 0;
  static BracketProfile ofTerminal(uint32_t terminal);
  BracketProfile then(const BracketProfile& next) const {
    return {net + next.net, low < net + next.low ? low : net + next.low};
  }
  bool balanced() const { return net == 0 && low == 0; }
  friend bool operator==(const BracketProfile&, const BracketProfile&) = default;
};

class Sequitur {
public:
  struct Options {
    bool balanced = false;
    // The grammar stops growing at this many symbols: push() then returns false.
    size_t max_symbols = std::numeric_limits<size_t>::max();
  };
  Sequitur() : Sequitur(Options{}) {}
  explicit Sequitur(Options options);

  // Appends a terminal (below 2^30) to the sequence. False (and nothing added) when the grammar
  // holds max_symbols symbols.
  bool push(uint32_t terminal);
  // Back to the empty sequence; keeps the memory.
  void clear();

  Grammar grammar() const;
  size_t symbols() const { return symbols_; } // in every rule's body
  size_t ruleCount() const { return live_rules_; } // with S
  uint64_t length() const { return length_; }  // terminals pushed

private:
  static constexpr uint32_t kNone = UINT32_MAX;
  static constexpr uint32_t kGuard = uint32_t{1} << 30; // a guard node's value: kGuard | rule

  struct Node {
    uint32_t value; // a terminal, kRuleRef | rule, or kGuard | rule
    uint32_t prev;
    uint32_t next;
  };
  struct Rule {
    uint32_t guard = kNone; // kNone: free
    uint32_t uses = 0;
    BracketProfile profile;
  };

  // Open addressing with linear probing and backward-shift deletion: digram -> its indexed node.
  class DigramIndex {
  public:
    uint32_t find(uint64_t key) const;
    void set(uint64_t key, uint32_t node);
    void eraseIf(uint64_t key, uint32_t node); // only when `node` is the one indexed
    void clear();
    size_t size() const { return size_; }

  private:
    struct Slot {
      uint64_t key;
      uint32_t node;
    };
    static constexpr uint64_t kEmpty = UINT64_MAX; // no digram has this key (bit 62 is free)
    size_t home(uint64_t key) const;
    void grow();
    std::vector<Slot> slots_;
    size_t size_ = 0;
  };

  bool isGuard(uint32_t node) const { return (nodes_[node].value & (kRuleRef | kGuard)) == kGuard; }
  uint32_t value(uint32_t node) const { return nodes_[node].value; }
  uint32_t& next(uint32_t node) { return nodes_[node].next; }
  uint32_t& prev(uint32_t node) { return nodes_[node].prev; }
  uint32_t next(uint32_t node) const { return nodes_[node].next; }
  uint32_t prev(uint32_t node) const { return nodes_[node].prev; }
  uint32_t first(uint32_t rule) const { return next(rules_[rule].guard); }
  uint32_t last(uint32_t rule) const { return prev(rules_[rule].guard); }
  uint64_t digramKey(uint32_t node) const {
    return uint64_t{value(node)} << 32 | value(next(node));
  }
  BracketProfile profileOf(uint32_t value) const;
  bool considered(uint32_t node) const; // the digram at `node` may form a rule

  uint32_t newNode(uint32_t value);
  uint32_t newRule();
  void join(uint32_t left, uint32_t right);
  void insertAfter(uint32_t node, uint32_t inserted);
  void deleteDigram(uint32_t node);
  void indexDigram(uint32_t node);
  void removeNode(uint32_t node);
  bool check(uint32_t node);
  void substitute(uint32_t node, uint32_t rule);
  void expandUnderused(uint32_t rule);
  void expand(uint32_t node);

  Options options_;
  std::vector<Node> nodes_;
  uint32_t free_nodes_ = kNone;
  std::vector<Rule> rules_;
  std::vector<uint32_t> free_rules_;
  DigramIndex index_;
  size_t symbols_ = 0;
  size_t live_rules_ = 0;
  uint64_t length_ = 0;
};

} // namespace shapetrace::analyzer::summaries
