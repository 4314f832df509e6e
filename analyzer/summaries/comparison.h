// The comparison of two call sequences (001's comparison view; docs/summaries.md "Comparing two
// calls"): each side's calls as runs of symbols, aligned by Needleman-Wunsch (alignment.h), and
// what the alignment says: the aligned rows with gaps, the conservation (matched columns) along
// the alignment, and where the two sides diverge.
#pragma once

#include "summaries/alignment.h"
#include "summaries/sequences.h"
#include "summaries/symbols.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace shapetrace::analyzer::summaries {

// One side: its symbols as runs, each run with the depth of its first symbol below the root.
struct ComparedSequence {
  std::string label;
  SequenceInfo info;
  uint64_t end_ns = 0;
  uint64_t calls = 0;
  std::vector<Run> runs;
  std::vector<uint32_t> depths; // per run
  uint64_t length() const;
};

// A sink that collects one sequence of a scope (the first it is given; more are counted).
class SequenceCollector final : public SequenceSink {
public:
  explicit SequenceCollector(SymbolForm form) : form_(form) {}
  void begin(const SequenceInfo& info) override;
  void enter(uint32_t function, uint32_t depth, uint64_t time_ns) override;
  void exit(uint32_t function, uint32_t depth, uint64_t enter_ns, uint64_t exit_ns,
            bool measured) override;
  void end(uint64_t time_ns) override;

  uint64_t sequences() const { return sequences_; }
  ComparedSequence take() { return std::move(sequence_); }

private:
  void push(uint32_t symbol, uint32_t depth);
  SymbolForm form_;
  ComparedSequence sequence_;
  uint64_t sequences_ = 0;
};

// A call's calls in entry order (function, depth below the call) as a calls-form sequence.
ComparedSequence sequenceOfCalls(const std::vector<std::pair<uint32_t, uint32_t>>& calls);

struct ComparisonOptions {
  Scoring scoring;
  std::string algorithm = "auto"; // auto, full, runs, hirschberg
  AlignmentLimits limits;
  size_t max_rows = 200;          // aligned rows written (the rest counted)
  size_t conservation_bins = 100; // the conservation track's resolution
};

Alignment alignSequences(const ComparedSequence& a, const ComparedSequence& b,
                         const ComparisonOptions& options);

// The aligned rows: each a piece of one segment within one run of each side.
struct AlignedRow {
  AlignedSegment::Kind kind;
  uint64_t count;         // columns
  uint64_t column;        // first column
  std::optional<size_t> a_run, b_run; // the run of each side (none: a gap on that side)
};
std::vector<AlignedRow> alignedRows(const ComparedSequence& a, const ComparedSequence& b,
                                    const Alignment& alignment);

// Where the sides diverge, in the order of the alignment: "only in A: 12 x waitForFlush at
// column 40", at most `max` sentences.
std::vector<std::string> divergences(const ComparedSequence& a, const ComparedSequence& b,
                                     const Alignment& alignment, const FunctionNamer& name,
                                     SymbolForm form, size_t max);

// {"a": side, "b": side, "scoring", "algorithm", "score", "columns", "matches", "mismatches",
//  "only_a", "only_b", "conservation", "conservation_track": [fraction per bin],
//  "rows": [[kind, columns, a run | null, b run | null]], "more_rows", "divergences": [text]}
// with side = {"label", "process", "thread", "start_ns", "duration_ns", "function", "calls",
// "symbols", "runs": [[code, count, depth]]}.
nlohmann::ordered_json comparisonJson(const ComparedSequence& a, const ComparedSequence& b,
                                      const Alignment& alignment, const ComparisonOptions& options,
                                      const FunctionNamer& name, SymbolForm form);

// The comparison in text: a header, the rows side by side, the divergences.
std::string comparisonText(const ComparedSequence& a, const ComparedSequence& b,
                           const Alignment& alignment, const ComparisonOptions& options,
                           const FunctionNamer& name, SymbolForm form);

} // namespace shapetrace::analyzer::summaries
