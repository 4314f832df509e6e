// The k-tail automaton of Reiss & Renieris (002) on the paper's examples: ABBBC with the basic
// algorithm (seven states in a chain) and with the self-loop modifications (a loop on B that the
// post-processing does not merge with the state entering it), Figures 2-3's sequence, and {A, CABB}
// and CBBCBCB, where no tail justifies a merge; then properties: every input sequence is accepted,
// the automaton is deterministic and minimal, and it is what 002's post-processing written
// plainly makes of the built automaton.
#include "summaries/ktail.h"

#include "letter_symbols.h"

#include <gtest/gtest.h>

#include <functional>
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

TEST(KTailTest, SecondModificationDoesNotMergeThroughALoopEntry) {
  // {A, CABB}: the state after A and the one after CA both end in the loop on B; the tail ABB of
  // the start state would read its first B on the loop, which only reads the B's after the first.
  // No tail justifies a merge: the automaton is the one built, C*AB* is not accepted.
  const KTailBuilder b = build({letters("A"), letters("CABB")});
  const std::vector<std::string> expected{"0 -A-> 1", "0 -C-> 2", "1 -B-> 1", "1 -$-> 3",
                                          "2 -A-> 4", "4 -B-> 1"};
  EXPECT_EQ(edges(b.built()), expected);
  EXPECT_EQ(edges(b.automaton()), expected);
  // CBBCBCB: the state looping on B and C is entered by B; the start state does not merge with it
  // (which would accept the empty sequence).
  const Automaton a = build({letters("CBBCBCB")}).automaton();
  EXPECT_EQ(edges(a), (std::vector<std::string>{"0 -C-> 1", "1 -B-> 2", "2 -B-> 2", "2 -C-> 2",
                                                "2 -$-> 3"}));
}

// The k-tails of `state` as 002 defines them (the symbols readable from it, the final state
// reading "$" forever) with the second modification: a loop on X reads only the X's after the
// first of a run, so a tail takes it only right after reading X.
std::set<std::vector<uint32_t>> tailsOf(const Automaton& a, uint32_t state) {
  std::set<std::vector<uint32_t>> tails;
  std::function<void(uint32_t, std::vector<uint32_t>&)> walk = [&](uint32_t s,
                                                                    std::vector<uint32_t>& tail) {
    if (tail.size() == a.k) {
      tails.insert(tail);
      return;
    }
    if (s == a.final) {
      tail.push_back(kEndSymbol);
      walk(s, tail);
      tail.pop_back();
      return;
    }
    for (const auto& t : a.transitions) {
      if (t.from != s) continue;
      if (t.to == s && (tail.empty() || tail.back() != t.symbol)) continue;
      tail.push_back(t.symbol);
      walk(t.to, tail);
      tail.pop_back();
    }
  };
  std::vector<uint32_t> tail;
  walk(state, tail);
  return tails;
}

// The sequences of at most `length` symbols the automaton accepts.
std::set<std::vector<uint32_t>> acceptedUpTo(const Automaton& a, size_t length) {
  std::set<std::vector<uint32_t>> accepted;
  std::function<void(uint32_t, std::vector<uint32_t>&)> walk = [&](uint32_t s,
                                                                    std::vector<uint32_t>& prefix) {
    for (const auto& t : a.transitions) {
      if (t.from != s) continue;
      if (t.symbol == kEndSymbol) {
        if (t.to == a.final) accepted.insert(prefix);
      } else if (prefix.size() < length) {
        prefix.push_back(t.symbol);
        walk(t.to, prefix);
        prefix.pop_back();
      }
    }
  };
  std::vector<uint32_t> prefix;
  walk(a.start, prefix);
  return accepted;
}

// Merges state q into p, then the targets of equal symbols until the automaton is deterministic.
Automaton merged(Automaton a, uint32_t p, uint32_t q) {
  std::vector<std::pair<uint32_t, uint32_t>> work{{p, q}};
  while (!work.empty()) {
    auto [x, y] = work.back();
    work.pop_back();
    if (x == y) continue;
    if (y < x) std::swap(x, y);
    for (auto& t : a.transitions) {
      if (t.from == y) t.from = x;
      if (t.to == y) t.to = x;
    }
    for (auto& [from, to] : work) {
      if (from == y) from = x;
      if (to == y) to = x;
    }
    if (a.final == y) a.final = x;
    if (a.start == y) a.start = x;
    std::map<std::pair<uint32_t, uint32_t>, uint32_t> target;
    std::vector<Automaton::Transition> kept;
    for (const auto& t : a.transitions) {
      const auto [it, fresh] = target.emplace(std::pair{t.from, t.symbol}, t.to);
      if (fresh) kept.push_back(t);
      else if (it->second != t.to) work.push_back({it->second, t.to});
    }
    a.transitions = std::move(kept);
  }
  return a;
}

// 002's post-processing written plainly, on the automaton the building step made: while two
// states share a k-tail (tailsOf), merge them.
Automaton postProcessed(Automaton a) {
  for (;;) {
    std::map<std::vector<uint32_t>, uint32_t> owner;
    std::pair<uint32_t, uint32_t> pair{0, 0};
    for (uint32_t q = 0; q < a.states && pair.first == pair.second; ++q) {
      if (q == a.final) continue;
      for (const auto& tail : tailsOf(a, q)) {
        const auto [it, fresh] = owner.emplace(tail, q);
        if (!fresh) {
          pair = {it->second, q};
          break;
        }
      }
    }
    if (pair.first == pair.second) return a;
    a = merged(std::move(a), pair.first, pair.second);
  }
}

TEST(KTailTest, PostProcessingMergesOnlyStatesThatShareATail) {
  // Against the definition written plainly (one merge at a time, in the same order): the same
  // sequences of at most 8 symbols accepted, so none that the input's tails do not justify.
  // Before the fix, states were merged through tails that read a run's first symbol on a loop
  // ({A, CABB} accepted C*AB*).
  std::mt19937 rng(33);
  for (int trial = 0; trial < 600; ++trial) {
    std::vector<std::vector<uint32_t>> sequences(1 + rng() % 3);
    for (auto& s : sequences) {
      const size_t length = 1 + rng() % 12;
      const uint32_t alphabet = 1 + rng() % 3;
      while (s.size() < length) {
        const uint32_t symbol = enterSymbol(rng() % alphabet);
        const size_t run = rng() % 3 == 0 ? 1 + rng() % 4 : 1;
        for (size_t i = 0; i < run; ++i)
          s.push_back(symbol);
      }
    }
    const uint32_t k = 1 + rng() % 4;
    const KTailBuilder b = build(sequences, {k, true});
    const Automaton a = b.automaton();
    ASSERT_EQ(acceptedUpTo(a, 8), acceptedUpTo(postProcessed(b.built()), 8))
        << "trial " << trial << " k " << k;
    // And 002's invariant: no two states of the result share a tail.
    std::map<std::vector<uint32_t>, uint32_t> owner;
    for (uint32_t q = 0; q < a.states; ++q) {
      if (q == a.final) continue;
      for (const auto& tail : tailsOf(a, q)) {
        const auto [it, fresh] = owner.emplace(tail, q);
        ASSERT_TRUE(fresh) << "trial " << trial << " k " << k << ": states " << it->second
                           << " and " << q << " share a tail";
      }
    }
  }
}

TEST(KTailTest, RejectsABadK) {
  EXPECT_THROW(KTailBuilder(KTailBuilder::Options{0}), std::invalid_argument);
  EXPECT_THROW(KTailBuilder(KTailBuilder::Options{kMaxTail + 1}), std::invalid_argument);
}

} // namespace
} // namespace shapetrace::analyzer::summaries
