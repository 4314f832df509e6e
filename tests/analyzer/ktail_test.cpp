// The k-tail automaton of Reiss & Renieris (002) on the paper's examples: ABBBC with the basic
// algorithm (seven states in a chain) and with the self-loop modifications (a loop on B that the
// post-processing does not merge with the state entering it), and Figures 2-3's sequence; then
// properties: every input sequence is accepted, the automaton is deterministic and minimal.
#include "summaries/ktail.h"

#include "letter_symbols.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

namespace shapetrace::analyzer::summaries {
namespace {

using testing::letterName;
using testing::letters;

KTailBuilder build(const std::vector<std::vector<uint32_t>>& sequences,
                   KTailBuilder::Options options = {}) {
  KTailBuilder b(options);
  for (const auto& s : sequences) {
    b.beginSequence();
    for (uint32_t t : s)
      b.push(t);
    b.endSequence();
  }
  return b;
}

// "0 -A-> 1" per transition, in order.
std::vector<std::string> edges(const Automaton& a) {
  std::vector<std::string> out;
  for (const auto& t : a.transitions)
    out.push_back(std::to_string(t.from) + " -" +
                  (t.symbol == kEndSymbol ? std::string("$") : letterName(t.symbol)) + "-> " +
                  std::to_string(t.to));
  return out;
}

TEST(KTailTest, BasicAlgorithmBuildsAChainForABBBC) {
  // 002: "seven states each with a single transition to the next one" (one more for "$").
  const Automaton a = build({letters("ABBBC")}, {3, false}).automaton();
  EXPECT_EQ(a.states, 7u);
  EXPECT_EQ(edges(a), (std::vector<std::string>{"0 -A-> 1", "1 -B-> 2", "2 -B-> 3", "3 -B-> 4",
                                                "4 -C-> 5", "5 -$-> 6"}));
  EXPECT_EQ(a.final, 6u);
}

TEST(KTailTest, SelfLoopForABBBC) {
  // The second B finds the state it is in entered by B: a loop. The first B enters the loop's
  // state and is not part of the loop: post-processing does not merge 1 and 2 although both have
  // the tails BBB, BBC and BC$.
  const Automaton a = build({letters("ABBBC")}).automaton();
  EXPECT_EQ(a.states, 5u);
  EXPECT_EQ(edges(a), (std::vector<std::string>{"0 -A-> 1", "1 -B-> 2", "2 -B-> 2", "2 -C-> 3",
                                                "3 -$-> 4"}));
  EXPECT_EQ(a.start, 0u);
  EXPECT_EQ(a.final, 4u);
  // Without the second modification, post-processing merges them: the spurious merge that makes
  // the automaton accept AC.
  KTailBuilder::Options first_only;
  first_only.keep_loop_entries = false;
  EXPECT_EQ(edges(build({letters("ABBBC")}, first_only).automaton()),
            (std::vector<std::string>{"0 -A-> 1", "1 -B-> 1", "1 -C-> 2", "2 -$-> 3"}));
}

TEST(KTailTest, FiguresTwoAndThree) {
  // 002, Figures 2-3: ABBBBBBBBBBCDDDBCDC. The basic algorithm loops on B by determinism (the
  // tails BBB of consecutive positions map to one state); the modified one also loops on the
  // second D, and the tail BCD after the Ds merges that state with the B loop's (Figure 3b). The
  // state after C enters the loop state on D and is not merged with it.
  const auto input = letters("ABBBBBBBBBBCDDDBCDC");
  const Automaton basic = build({input}, {3, false}).automaton();
  bool b_loop = false;
  for (const auto& t : basic.transitions)
    b_loop |= t.from == t.to && t.symbol == enterSymbol(1);
  EXPECT_TRUE(b_loop);
  const Automaton a = build({input}).automaton();
  EXPECT_EQ(edges(a), (std::vector<std::string>{"0 -A-> 1", "1 -B-> 1", "1 -C-> 2", "1 -D-> 1",
                                                "2 -D-> 1", "2 -$-> 3"}));
}

TEST(KTailTest, DotAndJson) {
  const Automaton a = build({letters("ABBBC")}).automaton();
  const std::string dot = automatonDot(a, letterName);
  EXPECT_NE(dot.find("digraph fsa {"), std::string::npos);
  EXPECT_NE(dot.find("s2 -> s2 [label=\"B\"];"), std::string::npos);
  EXPECT_NE(dot.find("s4 [label=\"4\", shape=doublecircle];"), std::string::npos);
  EXPECT_NE(dot.find("s3 -> s4 [label=\"$\"];"), std::string::npos);
  const auto json = automatonJson(a, letterName);
  EXPECT_EQ(json["states"], 5);
  EXPECT_EQ(json["final"], 4);
  EXPECT_EQ(json["transitions"][2]["symbol"], "B");
  EXPECT_EQ(json["transitions"][2]["from"], 2);
  EXPECT_EQ(json["transitions"][2]["to"], 2);
  EXPECT_EQ(json["transitions"][4]["code"], nullptr);
}

bool accepts(const Automaton& a, const std::vector<uint32_t>& input) {
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> delta;
  for (const auto& t : a.transitions) {
    const bool fresh = delta.emplace(std::pair{t.from, t.symbol}, t.to).second;
    EXPECT_TRUE(fresh) << "not deterministic at state " << t.from;
  }
  uint32_t q = a.start;
  for (uint32_t s : input) {
    const auto it = delta.find({q, s});
    if (it == delta.end()) return false;
    q = it->second;
  }
  const auto end = delta.find({q, kEndSymbol});
  return end != delta.end() && end->second == a.final;
}

TEST(KTailTest, AcceptsEveryInputSequence) {
  std::mt19937 rng(21);
  for (int trial = 0; trial < 1500; ++trial) {
    std::vector<std::vector<uint32_t>> sequences(1 + rng() % 4);
    for (auto& s : sequences) {
      const size_t length = rng() % 40;
      const uint32_t alphabet = 1 + rng() % 4;
      while (s.size() < length) {
        const uint32_t symbol = enterSymbol(rng() % alphabet);
        const size_t run = rng() % 3 == 0 ? 1 + rng() % 6 : 1;
        for (size_t i = 0; i < run; ++i)
          s.push_back(symbol);
      }
    }
    const uint32_t k = 1 + rng() % 4;
    for (bool loops : {false, true}) {
      const Automaton a = build(sequences, {k, loops}).automaton();
      for (const auto& s : sequences)
        ASSERT_TRUE(accepts(a, s)) << "trial " << trial << " k " << k << " loops " << loops;
      // Minimal: no two states have the same transitions into the same classes, so at least no
      // two states with identical outgoing transitions exist.
      std::map<std::vector<std::pair<uint32_t, uint32_t>>, uint32_t> signatures;
      std::map<uint32_t, std::vector<std::pair<uint32_t, uint32_t>>> out;
      for (const auto& t : a.transitions)
        out[t.from].push_back({t.symbol, t.to});
      for (const auto& [state, transitions] : out)
        ASSERT_TRUE(signatures.emplace(transitions, state).second)
            << "states " << signatures[transitions] << " and " << state << " are equivalent";
    }
  }
}

TEST(KTailTest, RejectsABadK) {
  EXPECT_THROW(KTailBuilder(KTailBuilder::Options{0}), std::invalid_argument);
  EXPECT_THROW(KTailBuilder(KTailBuilder::Options{kMaxTail + 1}), std::invalid_argument);
}

} // namespace
} // namespace shapetrace::analyzer::summaries
