// Needleman-Wunsch global alignment of two symbol sequences: the ThreadViewer proposal's
// comparison view (001), which aligns two call sequences as biologists align DNA strands
// (docs/summaries.md).
//
// Three ways to the same optimal score:
// - alignFull: the textbook quadratic table with a traceback (small inputs);
// - alignHirschberg: Hirschberg's divide and conquer, linear memory, quadratic time (long
//   sequences without repetitions);
// - alignRuns: the sequences as runs (a loop of 10^5 identical calls is one run). The table is cut
//   into blocks, one per pair of runs; every cell of a block pairs the same two symbols, so the
//   best path from the block's top row or left column to its bottom row or right column is a
//   formula (diagonals, then gaps), and a block's output edges follow from its input edges in time
//   proportional to its perimeter: O(runs(A) * |B| + runs(B) * |A|) instead of |A| * |B|, exact.
//   The traceback jumps from block edge to block edge, so the alignment comes out as runs too.
#pragma once

#include "summaries/grammar.h"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace shapetrace::analyzer::summaries {

struct Scoring {
  int64_t match = 1;
  int64_t mismatch = -1;
  int64_t gap = -1;
};

// A stretch of alignment columns of one kind.
struct AlignedSegment {
  enum class Kind : uint8_t { kMatch, kMismatch, kOnlyA, kOnlyB };
  Kind kind = Kind::kMatch;
  uint64_t length = 0;  // columns
  uint64_t a_begin = 0; // position in A of its first symbol (kOnlyB: the next symbol of A)
  uint64_t b_begin = 0;
  friend bool operator==(const AlignedSegment&, const AlignedSegment&) = default;
};

struct Alignment {
  int64_t score = 0;
  std::vector<AlignedSegment> segments; // in column order, adjacent ones of a kind merged
  uint64_t columns = 0, matches = 0, mismatches = 0, only_a = 0, only_b = 0;
  std::string algorithm; // "full", "hirschberg" or "runs"
};

const char* alignedKindName(AlignedSegment::Kind kind);

Alignment alignFull(std::span<const uint32_t> a, std::span<const uint32_t> b, const Scoring& s);
Alignment alignHirschberg(std::span<const uint32_t> a, std::span<const uint32_t> b,
                          const Scoring& s);
Alignment alignRuns(const std::vector<Run>& a, const std::vector<Run>& b, const Scoring& s);

struct AlignmentLimits {
  uint64_t max_full_cells = uint64_t{1} << 26;     // alignFull's table (a byte a cell)
  uint64_t max_run_values = uint64_t{1} << 25;     // alignRuns' stored block edges (8 bytes each)
  uint64_t max_hirschberg_cells = uint64_t{1} << 36; // time: beyond it, refused
};

// The cheapest exact method for the two run sequences; throws std::runtime_error when they are too
// long for all three within `limits`.
Alignment align(const std::vector<Run>& a, const std::vector<Run>& b, const Scoring& s,
                const AlignmentLimits& limits = {});

// The alignment's score recomputed from its columns (tests, and a check of the traceback).
int64_t scoreOf(const Alignment& alignment, std::span<const uint32_t> a,
                std::span<const uint32_t> b, const Scoring& s);

std::vector<uint32_t> expandRuns(const std::vector<Run>& runs);

} // namespace shapetrace::analyzer::summaries
