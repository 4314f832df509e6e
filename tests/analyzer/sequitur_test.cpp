// Sequitur and the grammar post-processing: the worked examples of Reiss & Renieris (002) and of
// the ThreadViewer proposal (001), and Sequitur's invariants as properties over thousands of random
// sequences.
#include "summaries/grammar.h"
#include "summaries/sequitur.h"
#include "summaries/symbols.h"

#include "letter_symbols.h"

#include <gtest/gtest.h>

#include <cctype>
#include <map>
#include <random>
#include <set>
#include <string>

namespace shapetrace::analyzer::summaries {
namespace {

using testing::letterName;
using testing::letters;

Grammar sequitur(const std::vector<uint32_t>& input, bool balanced = false) {
  Sequitur s(Sequitur::Options{balanced});
  for (uint32_t t : input)
    EXPECT_TRUE(s.push(t));
  return s.grammar();
}

std::string raw(const Grammar& g, uint32_t rule) {
  std::string out;
  for (GrammarSymbol s : g.rules[rule])
    out += (out.empty() ? "" : " ") +
           (isRuleRef(s) ? "R" + std::to_string(ruleIndex(s)) : letterName(s));
  return out;
}

const char* kPaper = "ABBBBBBBBBCDDDBCDC";

TEST(SequiturTest, ReissRenierisExample) {
  // 002: R1 ::= B B, R2 ::= R1 R1, R3 ::= B C D, S ::= A R2 R2 R3 D D R3 C.
  const Grammar g = sequitur(letters(kPaper));
  ASSERT_EQ(g.rules.size(), 4u);
  EXPECT_EQ(raw(g, 1), "B B");
  EXPECT_EQ(raw(g, 2), "R1 R1");
  EXPECT_EQ(raw(g, 3), "B C D");
  EXPECT_EQ(raw(g, 0), "A R2 R2 R3 D D R3 C");
}

ProcessedGrammar processed(const std::vector<uint32_t>& input, PostProcessing options = {}) {
  GrammarTable table;
  table.add(sequitur(input, options.balanced));
  return postProcess(table, options);
}

std::vector<std::string> lines(const ProcessedGrammar& g) {
  std::vector<std::string> out;
  for (size_t r = 1; r < g.rules.size(); ++r)
    out.push_back("R" + std::to_string(g.rules[r].name) + " ::= " +
                  formatBody(g, g.rules[r].body, letterName));
  for (const auto& s : g.sequences)
    out.push_back("S ::= " + formatBody(g, s.body, letterName));
  return out;
}

TEST(SequiturTest, RunLengthPostProcessing) {
  // 002: "R3 ::= BCD, S ::= A 8:B R3 2:D R3 C"; R1 and R2 are no longer needed.
  EXPECT_EQ(lines(processed(letters(kPaper))),
            (std::vector<std::string>{"R3 ::= BCD", "S ::= A 8:B R3 2:D R3 C"}));
  // With a cutoff of 3: "R3 ::= BCD, S ::= A *:B R3 2:D R3 C".
  EXPECT_EQ(lines(processed(letters(kPaper), {3, false})),
            (std::vector<std::string>{"R3 ::= BCD", "S ::= A *:B R3 2:D R3 C"}));
}

TEST(SequiturTest, RunLengthEncoding) {
  // 002: ABBBBBBBBBCDDDBCDC is A 9:B C 3:D BCDC, and with k = 3 A *:B C 3:D BCDC.
  RunLengthEncoder rle;
  for (uint32_t t : letters(kPaper))
    rle.push(t);
  EXPECT_EQ(formatRuns(rle.runs(), 0, letterName), "A 9:B C 3:D BCDC");
  EXPECT_EQ(formatRuns(rle.runs(), 3, letterName), "A *:B C 3:D BCDC");
  // 002's string form: A calls B, B returns, A calls C, both return: a return is no word of its own.
  RunLengthEncoder calls;
  for (uint32_t s : {enterSymbol(0), enterSymbol(1), kReturnSymbol, enterSymbol(2), kReturnSymbol,
                     kReturnSymbol})
    calls.push(s);
  const auto name = [](uint32_t s) {
    return symbolText(s, SymbolForm::kString,
                      [](uint32_t f) { return std::string(1, static_cast<char>('A' + f)); });
  };
  EXPECT_EQ(formatRuns(calls.runs(), 0, name, {}, true), "AB∨C 2:∨");
  EXPECT_EQ(formatRuns(calls.runs(), 0, name), "AB ∨ C 2:∨"); // as grammar rules are written
  EXPECT_EQ(rle.length(), 18u);
}

TEST(SequiturTest, CutoffMergesWhatBecomesEqual) {
  // Runs are counted within a rule: here the B run of R4 continues the one R2 ends with.
  const auto input = letters("ABBBBCABBBBCXABBBBBBCABBBBBBC");
  EXPECT_EQ(lines(processed(input)), (std::vector<std::string>{"R2 ::= A 4:B", "R3 ::= R2 C",
                                                               "R4 ::= R2 2:B C",
                                                               "S ::= 2:R3 X 2:R4"}));
  EXPECT_EQ(lines(processed(input, {3, false})),
            (std::vector<std::string>{"R2 ::= A *:B", "R3 ::= R2 C", "R4 ::= R2 2:B C",
                                      "S ::= 2:R3 X 2:R4"}));
  // Sequences (and rules) that differ only in counts above the cutoff become one.
  GrammarTable table;
  table.add(sequitur(letters("ABBBBC")));
  table.add(sequitur(letters("ABBBBBBC")));
  EXPECT_EQ(postProcess(table, {}).sequences.size(), 2u);
  const ProcessedGrammar cut = postProcess(table, {3, false});
  ASSERT_EQ(cut.sequences.size(), 1u);
  EXPECT_EQ(cut.sequences[0].count, 2u);
}

// The ThreadViewer proposal: foo, bar, 64 lock calls, foo, bar in enter/exit form.
std::vector<uint32_t> lockTrace() {
  enum { kFoo, kBar, kLock };
  std::vector<uint32_t> t;
  auto call = [&](uint32_t f) {
    t.push_back(enterSymbol(f));
    t.push_back(exitSymbol(f));
  };
  call(kFoo), call(kBar);
  for (int i = 0; i < 64; ++i)
    call(kLock);
  call(kFoo), call(kBar);
  return t;
}
std::string lockName(uint32_t symbol) {
  static const char* names[] = {"foo", "bar", "lock"};
  return symbolText(symbol, SymbolForm::kEnterExit, [](uint32_t f) { return names[f]; });
}

TEST(SequiturTest, SixtyFourLockCallsAreOneRule) {
  // Plain Sequitur needs log2(64) = 6 rules for them (001: 1->2,2 ... 6->+lock,-lock).
  const Grammar g = sequitur(lockTrace());
  size_t doubling = 0;
  for (size_t r = 1; r < g.rules.size(); ++r)
    if (g.rules[r].size() == 2 && g.rules[r][0] == g.rules[r][1]) ++doubling;
  EXPECT_EQ(doubling, 5u);
  // 001's summary: 0->1,2,1; 1 -> the foo and bar events; 2 -> 64 repetitions of the lock call.
  GrammarTable table;
  table.add(g);
  const Summary summary = summarize(postProcess(table, {}), 0);
  EXPECT_EQ(formatSummary(summary, lockName),
            (std::vector<std::string>{"0 -> 1,2,1", "1 -> +foo,-foo,+bar,-bar",
                                      "2 -> 64 x (+lock,-lock)"}));
  const auto json = summaryJson(summary, 100, 10);
  EXPECT_EQ(json["events"], 136);
  ASSERT_EQ(json["phases"].size(), 3u);
  EXPECT_EQ(json["phases"][1]["repeat"], 64);
  EXPECT_EQ(json["phases"][1]["events"], 128);
  EXPECT_EQ(json["phases"][1]["label"], nlohmann::json({2, -3}));
  EXPECT_EQ(json["phases"][0]["label"], nlohmann::json({0, -1, 1, -2}));
}

std::vector<std::string> summaryOf(const std::vector<uint32_t>& input) {
  GrammarTable table;
  table.add(sequitur(input));
  return formatSummary(summarize(postProcess(table, {}), 0), letterName);
}

TEST(SequiturTest, SummaryRulesAreNumberedWithoutGaps) {
  // The rule written inside the repetition's parentheses has no line: the next rule is 2, not 3.
  EXPECT_EQ(summaryOf(letters("ABCABDABCABD")),
            (std::vector<std::string>{"0 -> 1", "1 -> 2 x (2,C,2,D)", "2 -> A,B"}));
}

// The rule numbers a summary line refers to, in reading order ("3 x (" is a count, not a rule).
std::vector<uint32_t> ruleReferences(const std::string& body) {
  std::vector<uint32_t> out;
  for (size_t i = 0; i < body.size();) {
    if (!std::isdigit(static_cast<unsigned char>(body[i]))) {
      ++i;
      continue;
    }
    size_t end = i;
    while (end < body.size() && std::isdigit(static_cast<unsigned char>(body[end])))
      ++end;
    if (body.compare(end, 3, " x ") != 0) out.push_back(static_cast<uint32_t>(std::stoul(body.substr(i, end - i))));
    i = end;
  }
  return out;
}

TEST(SequiturTest, SummaryRulesAreNumberedInTheOrderTheyAppear) {
  // Lines 0, 1, 2, ... and, reading them in order, each rule first referred to before the next.
  std::mt19937 rng(18);
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<uint32_t> input;
    const size_t length = rng() % 200;
    while (input.size() < length) {
      if (rng() % 2 == 0 && input.size() > 4) {
        const size_t from = rng() % (input.size() - 2);
        const size_t n = 2 + rng() % std::min<size_t>(8, input.size() - from - 1);
        const size_t times = 1 + rng() % 3;
        for (size_t t = 0; t < times; ++t)
          for (size_t i = 0; i < n; ++i)
            input.push_back(input[from + i]);
      } else {
        input.push_back(enterSymbol(static_cast<uint32_t>(rng() % 4)));
      }
    }
    const auto lines = summaryOf(input);
    uint32_t next = 1;
    for (size_t l = 0; l < lines.size(); ++l) {
      const std::string number = std::to_string(l) + " -> ";
      ASSERT_EQ(lines[l].compare(0, number.size(), number), 0) << "trial " << trial << ": " << lines[l];
      for (uint32_t r : ruleReferences(lines[l].substr(number.size()))) {
        ASSERT_LE(r, next) << "trial " << trial << ": " << lines[l];
        if (r == next) ++next;
      }
    }
    ASSERT_EQ(next, lines.size()) << "trial " << trial;
  }
}

TEST(SequiturTest, GlobalTableSharesRulesAcrossSequences) {
  // 002: sequences encoded separately, their rules merged so that each right-hand side is once.
  GrammarTable table;
  table.add(sequitur(letters("XYZXYZ")));
  table.add(sequitur(letters("QXYZXYZ")));
  table.add(sequitur(letters("XYZXYZ")));
  ASSERT_EQ(table.sequences().size(), 2u);
  EXPECT_EQ(table.sequences()[0].count, 2u);
  EXPECT_EQ(table.sequences()[1].first, 1u);
  size_t xyz = 0;
  for (const auto& body : table.rules())
    xyz += body.size() == 3;
  EXPECT_EQ(xyz, 1u);
  EXPECT_EQ(lines(postProcess(table, {})),
            (std::vector<std::string>{"R1 ::= XYZ", "S ::= 2:R1", "S ::= Q 2:R1"}));
}

// ---- balanced rules

// A string of calls and returns: lowercase letters enter, '^' returns.
std::vector<uint32_t> calls(const std::string& text) {
  std::vector<uint32_t> out;
  for (char c : text)
    out.push_back(c == '^' ? kReturnSymbol : enterSymbol(static_cast<uint32_t>(c - 'a')));
  return out;
}

TEST(SequiturTest, BalancedRulesAreWellNested) {
  // a calls b and c three times, then d: "a b^ c^ b^ c^ b^ c^ d^ ^".
  const auto input = calls("ab^c^b^c^b^c^d^^eb^c^^");
  GrammarTable table;
  table.add(sequitur(input, true));
  const ProcessedGrammar g = postProcess(table, {0, true});
  ASSERT_GE(g.rules.size(), 2u);
  for (size_t r = 1; r < g.rules.size(); ++r) {
    BracketProfile p;
    std::vector<summaries::Run> stack = g.rules[r].body;
    std::function<void(const std::vector<summaries::Run>&)> walk = [&](const std::vector<summaries::Run>& body) {
      for (const summaries::Run& run : body)
        for (uint64_t i = 0; i < run.count; ++i) {
          if (isRuleRef(run.symbol)) walk(g.rules[ruleIndex(run.symbol)].body);
          else p = p.then(BracketProfile::ofTerminal(run.symbol));
        }
    };
    walk(g.rules[r].body);
    EXPECT_TRUE(p.balanced()) << "rule R" << g.rules[r].name;
  }
}

// ---- properties over random sequences

void expectInvariants(const Grammar& g, const std::vector<uint32_t>& input, bool balanced) {
  ASSERT_EQ(expand(g), input);
  // Digram uniqueness (in balanced mode, among the digrams it considers) and rule utility.
  std::vector<BracketProfile> profile(g.rules.size());
  for (size_t r = 1; r < g.rules.size(); ++r) // post-order: sub-rules first
    for (GrammarSymbol s : g.rules[r])
      profile[r] = profile[r].then(isRuleRef(s) ? profile[ruleIndex(s)]
                                                : BracketProfile::ofTerminal(s));
  auto profileOf = [&](GrammarSymbol s) {
    return isRuleRef(s) ? profile[ruleIndex(s)] : BracketProfile::ofTerminal(s);
  };
  std::map<std::pair<GrammarSymbol, GrammarSymbol>, std::vector<std::pair<size_t, size_t>>> seen;
  std::vector<size_t> uses(g.rules.size(), 0);
  for (size_t r = 0; r < g.rules.size(); ++r) {
    const auto& body = g.rules[r];
    if (r != 0) ASSERT_GE(body.size(), 2u) << "rule " << r;
    if (r != 0 && balanced) ASSERT_GE(profile[r].low, 0) << "rule " << r << " closes below its start";
    for (size_t i = 0; i < body.size(); ++i) {
      if (isRuleRef(body[i])) ++uses[ruleIndex(body[i])];
      if (i + 1 == body.size()) continue;
      if (balanced && profileOf(body[i]).then(profileOf(body[i + 1])).low < 0) continue;
      auto& where = seen[{body[i], body[i + 1]}];
      // Overlapping occurrences ("aaa") are allowed.
      for (const auto& [rule, at] : where)
        ASSERT_TRUE(rule == r && at + 1 == i)
            << "digram repeated in rules " << rule << " and " << r;
      where.push_back({r, i});
    }
  }
  for (size_t r = 1; r < g.rules.size(); ++r)
    ASSERT_GE(uses[r], 2u) << "rule " << r << " used " << uses[r] << " times";
}

TEST(SequiturTest, InvariantsOnRandomSequences) {
  std::mt19937 rng(15);
  for (int trial = 0; trial < 4000; ++trial) {
    const size_t alphabet = 1 + rng() % (trial % 3 == 0 ? 2 : 6);
    const size_t length = rng() % 300;
    std::vector<uint32_t> input;
    // Some sequences repeat blocks, as traces do; others are uniform noise.
    while (input.size() < length) {
      if (rng() % 3 == 0 && input.size() > 4) {
        const size_t from = rng() % (input.size() - 2), n = 2 + rng() % std::min<size_t>(8, input.size() - from - 1);
        for (size_t i = 0; i < n; ++i)
          input.push_back(input[from + i]);
      } else {
        input.push_back(enterSymbol(static_cast<uint32_t>(rng() % alphabet)));
      }
    }
    SCOPED_TRACE("trial " + std::to_string(trial));
    expectInvariants(sequitur(input), input, false);
    if (HasFatalFailure()) return;
  }
}

TEST(SequiturTest, BalancedInvariantsOnRandomCallStrings) {
  std::mt19937 rng(16);
  for (int trial = 0; trial < 3000; ++trial) {
    std::vector<uint32_t> input;
    size_t depth = 0;
    const size_t length = rng() % 400;
    const uint32_t functions = 1 + rng() % 4;
    while (input.size() < length) {
      if (depth > 0 && rng() % 2 == 0) {
        input.push_back(kReturnSymbol);
        --depth;
      } else {
        input.push_back(enterSymbol(rng() % functions));
        ++depth;
      }
    }
    SCOPED_TRACE("trial " + std::to_string(trial));
    expectInvariants(sequitur(input, true), input, true);
    if (HasFatalFailure()) return;
    // The balanced post-processing keeps only well-nested rules, and expands to the input.
    GrammarTable table;
    table.add(sequitur(input, true));
    const ProcessedGrammar g = postProcess(table, {0, true});
    std::function<void(const std::vector<summaries::Run>&, std::vector<uint32_t>&)> unfold =
        [&](const std::vector<summaries::Run>& body, std::vector<uint32_t>& out) {
          for (const summaries::Run& run : body)
            for (uint64_t i = 0; i < run.count; ++i)
              if (isRuleRef(run.symbol)) unfold(g.rules[ruleIndex(run.symbol)].body, out);
              else out.push_back(run.symbol);
        };
    std::vector<uint32_t> back;
    unfold(g.sequences.at(0).body, back);
    ASSERT_EQ(back, input);
    for (size_t r = 1; r < g.rules.size(); ++r) {
      std::vector<uint32_t> body;
      unfold(g.rules[r].body, body);
      BracketProfile p;
      for (uint32_t t : body)
        p = p.then(BracketProfile::ofTerminal(t));
      ASSERT_TRUE(p.balanced()) << "rule " << r;
      ASSERT_EQ(body.size(), g.rules[r].length);
    }
  }
}

TEST(SequiturTest, PostProcessingExpandsToTheInput) {
  std::mt19937 rng(17);
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<uint32_t> input;
    const size_t length = rng() % 200;
    while (input.size() < length) {
      const uint32_t s = enterSymbol(rng() % 3);
      const size_t run = rng() % 4 == 0 ? 1 + rng() % 20 : 1;
      for (size_t i = 0; i < run; ++i)
        input.push_back(s);
    }
    GrammarTable table;
    table.add(sequitur(input));
    const ProcessedGrammar g = postProcess(table, {});
    std::function<void(const std::vector<summaries::Run>&, std::vector<uint32_t>&)> unfold =
        [&](const std::vector<summaries::Run>& body, std::vector<uint32_t>& out) {
          for (const summaries::Run& run : body) {
            ASSERT_TRUE(run.count >= 1);
            for (uint64_t i = 0; i < run.count; ++i)
              if (isRuleRef(run.symbol)) unfold(g.rules[ruleIndex(run.symbol)].body, out);
              else out.push_back(run.symbol);
          }
        };
    std::vector<uint32_t> back;
    unfold(g.sequences.at(0).body, back);
    ASSERT_EQ(back, input) << "trial " << trial;
    ASSERT_EQ(g.sequences[0].length, input.size());
    // No two adjacent items repeat the same symbol: run-length encoding is complete.
    for (size_t r = 1; r < g.rules.size(); ++r)
      for (size_t i = 1; i < g.rules[r].body.size(); ++i)
        ASSERT_NE(g.rules[r].body[i].symbol, g.rules[r].body[i - 1].symbol);
  }
}

TEST(SequiturTest, StopsAtTheSymbolBound) {
  Sequitur s(Sequitur::Options{false, 10});
  size_t taken = 0;
  std::mt19937 rng(3);
  for (int i = 0; i < 100; ++i)
    taken += s.push(enterSymbol(rng() % 50));
  EXPECT_LE(s.symbols(), 10u);
  EXPECT_EQ(s.length(), taken);
  EXPECT_LT(taken, 100u);
  s.clear();
  EXPECT_EQ(s.symbols(), 0u);
  EXPECT_TRUE(s.push(enterSymbol(1)));
}

} // namespace
} // namespace shapetrace::analyzer::summaries
