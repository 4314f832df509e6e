// Needleman-Wunsch (001's comparison view): the scores of the full table, Hirschberg and the
// alignment over runs against a direct quadratic implementation written here, on random pairs;
// every alignment spells both sequences and scores what it claims; the run alignment of two loops
// of 10^5 iterations without expanding them; the textbook example.
#include "summaries/alignment.h"

#include <gtest/gtest.h>

#include <random>

namespace shapetrace::analyzer::summaries {
namespace {

// The oracle: the recurrence as written in any textbook, one full table.
int64_t oracle(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b, const Scoring& s) {
  std::vector<std::vector<int64_t>> t(a.size() + 1, std::vector<int64_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i)
    t[i][0] = static_cast<int64_t>(i) * s.gap;
  for (size_t j = 0; j <= b.size(); ++j)
    t[0][j] = static_cast<int64_t>(j) * s.gap;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j)
      t[i][j] = std::max({t[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? s.match : s.mismatch),
                          t[i - 1][j] + s.gap, t[i][j - 1] + s.gap});
  return t[a.size()][b.size()];
}

std::vector<uint32_t> dna(const std::string& text) { return {text.begin(), text.end()}; }

std::vector<summaries::Run> runsOf(const std::vector<uint32_t>& v) {
  RunLengthEncoder rle;
  for (uint32_t x : v)
    rle.push(x);
  return rle.runs();
}

TEST(AlignmentTest, TextbookExample) {
  // 001, Figure 8: GCATGCU and GATTACA align with score 0 (match 1, mismatch -1, gap -1), e.g.
  // GCATG-CU over G-ATTACA.
  const auto a = dna("GCATGCU"), b = dna("GATTACA");
  const Scoring s;
  for (const Alignment& al : {alignFull(a, b, s), alignHirschberg(a, b, s),
                               alignRuns(runsOf(a), runsOf(b), s)}) {
    EXPECT_EQ(al.score, 0) << al.algorithm;
    EXPECT_EQ(scoreOf(al, a, b, s), 0) << al.algorithm;
    EXPECT_EQ(al.columns, 8u) << al.algorithm;
  }
}

std::vector<uint32_t> randomSequence(std::mt19937& rng, size_t max_length, uint32_t alphabet,
                                     bool runs) {
  std::vector<uint32_t> v;
  const size_t length = rng() % (max_length + 1);
  while (v.size() < length) {
    const uint32_t x = rng() % alphabet;
    const size_t n = runs && rng() % 2 ? 1 + rng() % 12 : 1;
    for (size_t i = 0; i < n && v.size() < length; ++i)
      v.push_back(x);
  }
  return v;
}

TEST(AlignmentTest, EveryMethodMatchesTheOracle) {
  std::mt19937 rng(1);
  const Scoring scorings[] = {{1, -1, -1}, {2, -1, -2}, {1, -3, -1}, {3, 0, -1}, {0, -1, -1}};
  for (int trial = 0; trial < 3000; ++trial) {
    const Scoring s = scorings[trial % 5];
    const uint32_t alphabet = 1 + rng() % 5;
    const bool runs = trial % 2 == 0;
    const auto a = randomSequence(rng, 60, alphabet, runs);
    const auto b = randomSequence(rng, 60, alphabet, runs);
    const int64_t expected = oracle(a, b, s);
    for (const Alignment& al : {alignFull(a, b, s), alignHirschberg(a, b, s),
                                 alignRuns(runsOf(a), runsOf(b), s)}) {
      ASSERT_EQ(al.score, expected) << al.algorithm << " trial " << trial;
      ASSERT_EQ(scoreOf(al, a, b, s), expected) << al.algorithm << " trial " << trial;
      ASSERT_EQ(al.matches + al.mismatches + al.only_a, a.size());
      ASSERT_EQ(al.matches + al.mismatches + al.only_b, b.size());
    }
  }
}

TEST(AlignmentTest, RunsOfAHundredThousandIterations) {
  // Two calls: one loops 100,000 times, the other 99,990 times and does one more thing. The run
  // alignment never expands them: 5 runs a side.
  enum : uint32_t { kCall, kLock, kWork, kUnlock, kFlush };
  const std::vector<summaries::Run> a = {{kCall, 1}, {kLock, 100000}, {kWork, 1}, {kUnlock, 1}};
  const std::vector<summaries::Run> b = {{kCall, 1}, {kLock, 99990}, {kFlush, 3}, {kWork, 1},
                                         {kUnlock, 1}};
  const Scoring s;
  const Alignment al = align(a, b, s);
  EXPECT_EQ(al.algorithm, "runs");
  EXPECT_EQ(al.matches, 1u + 99990u + 2u);
  // 10 lock calls only in A, 3 flush calls only in B: the best is to pair 3 of them as mismatches.
  EXPECT_EQ(al.score, 99993 - 3 - 7);
  const auto ea = expandRuns(a), eb = expandRuns(b);
  EXPECT_EQ(scoreOf(al, ea, eb, s), al.score);
  ASSERT_LE(al.segments.size(), 6u);
  EXPECT_EQ(al.segments[0].kind, AlignedSegment::Kind::kMatch);
  EXPECT_EQ(al.segments[0].length, 99991u);
}

TEST(AlignmentTest, ChoosesAMethodWithinTheLimits) {
  std::mt19937 rng(5);
  std::vector<uint32_t> a(3000), b(2500);
  for (auto& x : a) x = rng() % 7;
  for (auto& x : b) x = rng() % 7;
  const Scoring s;
  AlignmentLimits tight;
  tight.max_full_cells = 1000;
  tight.max_run_values = 1000;
  const Alignment al = align(runsOf(a), runsOf(b), s, tight);
  EXPECT_EQ(al.algorithm, "hirschberg");
  EXPECT_EQ(al.score, alignFull(a, b, s).score);
  tight.max_hirschberg_cells = 1000;
  EXPECT_THROW(align(runsOf(a), runsOf(b), s, tight), std::runtime_error);
}

} // namespace
} // namespace shapetrace::analyzer::summaries
