// Grammars of many sequences in one table, and what Reiss & Renieris and the ThreadViewer proposal
// make of them (docs/summaries.md):
//
// - GrammarTable: 002's global table of variables. Each sequence is encoded on its own (Sequitur),
//   then its rules are merged into the table so that each distinct right-hand side appears once;
//   identical sequences share one entry with a count.
// - postProcess(): 002's run-length post-processing. Rules are processed once, after the rules
//   they use; a rule whose processed body is a single run (k:X) is replaced by that run wherever it
//   is used, and every body is run-length encoded (X X -> 2:X, 2:(4:B) -> 8:B). With a cutoff k,
//   counts above k are "*" and rules that become equal merge. The balanced variant expands every
//   unbalanced rule in place, so that the grammar keeps only well-nested rules.
// - summarize(): the ThreadViewer proposal's summary: the sequence's top-level items are its phases,
//   a repetition of a body is one rule ("2 -> 64 x (+lock,-lock)"), and rules used once are inlined.
#pragma once

#include "summaries/sequitur.h"
#include "summaries/symbols.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace shapetrace::analyzer::summaries {

// A symbol repeated `count` times (1: the symbol itself).
struct Run {
  GrammarSymbol symbol = 0;
  uint64_t count = 1;
  friend bool operator==(const Run&, const Run&) = default;
};

struct VectorHash {
  size_t operator()(const std::vector<uint32_t>& v) const;
  size_t operator()(const std::vector<Run>& v) const;
};

class GrammarTable {
public:
  struct Sequence {
    std::vector<GrammarSymbol> body; // S, over the table's rules
    uint64_t count = 0;              // sequences with this body
    uint64_t first = 0;              // the index (order of add()) of the first of them
  };

  // Merges one sequence's grammar (rules referred to by their index in `grammar`). Returns the
  // index of its entry in sequences().
  uint32_t add(const Grammar& grammar);

  // Rules by id; ids start at 1 and follow the order the rules were first added (post-order within
  // each grammar, so a rule's sub-rules have smaller ids).
  const std::vector<std::vector<GrammarSymbol>>& rules() const { return rules_; }
  const std::vector<Sequence>& sequences() const { return sequences_; }
  const BracketProfile& profile(uint32_t rule) const { return profiles_[rule]; }
  uint64_t added() const { return added_; }

private:
  std::vector<std::vector<GrammarSymbol>> rules_{{}}; // rules_[0] unused
  std::vector<BracketProfile> profiles_{{}};
  std::unordered_map<std::vector<uint32_t>, uint32_t, VectorHash> rule_of_body_;
  std::vector<Sequence> sequences_;
  std::unordered_map<std::vector<uint32_t>, uint32_t, VectorHash> sequence_of_body_;
  uint64_t added_ = 0;
};

struct PostProcessing {
  uint64_t cutoff = 0;   // k: counts above it are written "*" (0: no cutoff)
  bool balanced = false; // expand unbalanced rules in place (002's second modification)
};

// A post-processed grammar: rules and sequences are run lists; a rule reference's id is an index
// into `rules`. A count of cutoff + 1 stands for "*".
struct ProcessedGrammar {
  struct Rule {
    std::vector<Run> body;
    uint32_t name = 0;   // the number of the table rule it came from (the paper's "R3")
    uint64_t length = 0; // terminals in its expansion (with cutoff: counting * as cutoff + 1)
    uint32_t uses = 0;   // items referring to it in reachable bodies
  };
  struct Sequence {
    std::vector<Run> body;
    uint64_t count = 0;
    uint64_t first = 0;
    uint64_t length = 0;
  };
  std::vector<Rule> rules;         // rules[0] unused; only rules reachable from a sequence
  std::vector<Sequence> sequences; // identical processed bodies merged, in order of first
  uint64_t cutoff = 0;

  bool starred(uint64_t count) const { return cutoff != 0 && count > cutoff; }
};

ProcessedGrammar postProcess(const GrammarTable& table, const PostProcessing& options);

// The table's raw rules as a ProcessedGrammar with every count 1 (Sequitur's own output).
ProcessedGrammar rawGrammar(const GrammarTable& table);

// How runs are written, in the papers' notation: "A 9:B C 3:D BCDC", "A 8:B R3 2:D R3 C". Items
// are separated by spaces, except that plain single-character terminals are written together, as
// the papers write letters ("BCDC"); a count above `cutoff` (when not 0) is "*". With
// `joined_returns`, a single return marker is written together with them too, as 002 writes the
// string form ("AB∨C 2:∨": a return is not a word of its own); the run-length encoding asks for it.
std::string formatRuns(const std::vector<Run>& runs, uint64_t cutoff,
                       const std::function<std::string(uint32_t)>& terminal,
                       const std::function<std::string(uint32_t)>& rule = {},
                       bool joined_returns = false);
// The same one run at a time, for output too long to hold.
class RunFormatter {
public:
  RunFormatter(uint64_t cutoff, std::function<std::string(uint32_t)> terminal,
               std::function<std::string(uint32_t)> rule = {}, bool joined_returns = false)
      : cutoff_(cutoff), terminal_(std::move(terminal)), rule_(std::move(rule)),
        joined_returns_(joined_returns) {}
  void append(const Run& run, std::string& out);

private:
  uint64_t cutoff_;
  std::function<std::string(uint32_t)> terminal_, rule_;
  bool joined_returns_;
  bool first_ = true;
  bool last_was_letter_ = false;
};
// A post-processed body: rules are named "R" and the number of the table rule they came from.
std::string formatBody(const ProcessedGrammar& grammar, const std::vector<Run>& body,
                       const std::function<std::string(uint32_t)>& terminal);

// Run-length encoding of a sequence (002): immediate repetitions as one run.
class RunLengthEncoder {
public:
  void push(uint32_t symbol) {
    if (!runs_.empty() && runs_.back().symbol == symbol && runs_.back().count != UINT64_MAX)
      ++runs_.back().count;
    else
      runs_.push_back({symbol, 1});
    ++length_;
  }
  void clear() {
    runs_.clear();
    length_ = 0;
  }
  const std::vector<Run>& runs() const { return runs_; }
  std::vector<Run> take() {
    length_ = 0;
    return std::move(runs_);
  }
  uint64_t length() const { return length_; }

private:
  std::vector<Run> runs_;
  uint64_t length_ = 0;
};

// The ThreadViewer proposal's summary of one sequence of a post-processed grammar (no cutoff).
struct Summary {
  struct Item {
    enum class Kind : uint8_t { kTerminal, kRule, kRepeat };
    Kind kind = Kind::kTerminal;
    uint32_t terminal = 0; // kTerminal
    uint32_t rule = 0;     // kRule: its number; kRepeat: the repeated rule's number (0: a terminal)
    uint64_t count = 1;    // kRepeat
    uint32_t repeated_terminal = 0; // kRepeat of a terminal
  };
  struct Rule {
    uint32_t number = 0;
    std::vector<Item> body; // a repetition rule: one kRepeat item
    uint64_t length = 0;    // terminals in its expansion
    bool repetition = false;
  };
  // rules[i].number == i; rules[0] is the sequence. The rules written on lines of their own come
  // first, numbered in the order they appear; a rule used only inside one repetition (written
  // there, "2 x (...)") is numbered after them.
  std::vector<Rule> rules;
};
Summary summarize(const ProcessedGrammar& grammar, size_t sequence);

// "0 -> 1,2,1" / "1 -> +foo,-foo,+bar,-bar" / "2 -> 64 x (+lock,-lock)", one line per rule.
std::vector<std::string> formatSummary(const Summary& summary,
                                       const std::function<std::string(uint32_t)>& terminal);

// The summary for the page: its phases (rule 0's items) with their length, repetitions and the
// first `label_events` terminals of their expansion, at most `max_phases` phases (the rest counted).
nlohmann::ordered_json summaryJson(const Summary& summary, size_t max_phases, size_t label_events);

} // namespace shapetrace::analyzer::summaries
