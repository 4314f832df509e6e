// The global rule table, 002's post-processing and 001's summary form.
#include "summaries/grammar.h"

#include <algorithm>
#include <limits>

namespace shapetrace::analyzer::summaries {
namespace {

constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();

uint64_t mix(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return h;
}

uint64_t addCapped(uint64_t a, uint64_t b, uint64_t cap) {
  const uint64_t sum = a > kMax - b ? kMax : a + b;
  return std::min(sum, cap);
}
uint64_t mulCapped(uint64_t a, uint64_t b, uint64_t cap) {
  const uint64_t product = b != 0 && a > kMax / b ? kMax : a * b;
  return std::min(product, cap);
}

} // namespace

size_t VectorHash::operator()(const std::vector<uint32_t>& v) const {
  uint64_t h = v.size();
  for (uint32_t x : v)
    h = mix(h ^ x) + 0x9E3779B97F4A7C15ull;
  return static_cast<size_t>(h);
}

size_t VectorHash::operator()(const std::vector<Run>& v) const {
  uint64_t h = v.size();
  for (const Run& r : v)
    h = mix(mix(h ^ r.symbol) ^ r.count) + 0x9E3779B97F4A7C15ull;
  return static_cast<size_t>(h);
}

uint32_t GrammarTable::add(const Grammar& grammar) {
  // Post-order: every rule's sub-rules have smaller numbers, so they are mapped first.
  std::vector<uint32_t> global(grammar.rules.size(), 0);
  auto mapped = [&](const std::vector<GrammarSymbol>& body) {
    std::vector<uint32_t> out;
    out.reserve(body.size());
    for (GrammarSymbol s : body)
      out.push_back(isRuleRef(s) ? (kRuleRef | global[ruleIndex(s)]) : s);
    return out;
  };
  for (size_t r = 1; r < grammar.rules.size(); ++r) {
    std::vector<uint32_t> body = mapped(grammar.rules[r]);
    const auto [it, added] =
        rule_of_body_.try_emplace(body, static_cast<uint32_t>(rules_.size()));
    if (added) {
      BracketProfile profile;
      for (GrammarSymbol s : body)
        profile = profile.then(isRuleRef(s) ? profiles_[ruleIndex(s)]
                                            : BracketProfile::ofTerminal(s));
      profiles_.push_back(profile);
      rules_.push_back(std::move(body));
    }
    global[r] = it->second;
  }
  std::vector<uint32_t> top = mapped(grammar.rules.empty() ? std::vector<GrammarSymbol>{}
                                                            : grammar.rules[0]);
  const auto [it, added] =
      sequence_of_body_.try_emplace(top, static_cast<uint32_t>(sequences_.size()));
  if (added) sequences_.push_back({std::move(top), 0, added_});
  ++sequences_[it->second].count;
  ++added_;
  return it->second;
}

namespace {

// Builds processed rules bottom-up and keeps only those reachable from a sequence.
class PostProcessor {
public:
  PostProcessor(const GrammarTable& table, const PostProcessing& options)
      : table_(table), options_(options),
        cap_(options.cutoff == 0 ? kMax : options.cutoff + 1) {}

  ProcessedGrammar run() {
    const auto& rules = table_.rules();
    done_.resize(rules.size());
    for (uint32_t r = 1; r < rules.size(); ++r) {
      std::vector<Run> body = process(rules[r]);
      Done& d = done_[r];
      if (body.size() == 1) {
        d.inline_run = body.front(); // k:X: replaced by its run wherever it is used
        d.is_inline = true;
        continue;
      }
      d.items = body;
      const auto [it, added] =
          rule_of_body_.try_emplace(body, static_cast<uint32_t>(bodies_.size()));
      if (added) {
        bodies_.push_back(std::move(body));
        names_.push_back(r);
      }
      d.processed = it->second;
    }
    ProcessedGrammar out;
    out.cutoff = options_.cutoff;
    std::unordered_map<std::vector<Run>, uint32_t, VectorHash> sequence_of_body;
    for (const GrammarTable::Sequence& s : table_.sequences()) {
      std::vector<Run> body = process(s.body);
      const auto [it, added] =
          sequence_of_body.try_emplace(body, static_cast<uint32_t>(out.sequences.size()));
      if (added) out.sequences.push_back({std::move(body), 0, s.first, 0});
      out.sequences[it->second].count += s.count;
    }
    renumberReachable(out);
    return out;
  }

private:
  struct Done {
    bool is_inline = false;
    Run inline_run;
    std::vector<Run> items;         // the processed body
    uint32_t processed = UINT32_MAX; // its index in bodies_
  };

  void append(std::vector<Run>& body, Run run) const {
    if (!body.empty() && body.back().symbol == run.symbol)
      body.back().count = addCapped(body.back().count, run.count, cap_);
    else
      body.push_back({run.symbol, std::min(run.count, cap_)});
  }

  std::vector<Run> process(const std::vector<GrammarSymbol>& raw) const {
    std::vector<Run> body;
    for (GrammarSymbol s : raw) {
      if (!isRuleRef(s)) {
        append(body, {s, 1});
        continue;
      }
      const uint32_t r = ruleIndex(s);
      const Done& d = done_[r];
      if (d.is_inline)
        append(body, d.inline_run);
      else if (options_.balanced && !table_.profile(r).balanced())
        for (const Run& item : d.items)
          append(body, item);
      else
        append(body, {kRuleRef | d.processed, 1});
    }
    return body;
  }

  // Keeps the processed rules reachable from the sequences, in order of their names, with their
  // lengths and uses.
  void renumberReachable(ProcessedGrammar& out) const {
    std::vector<bool> reachable(bodies_.size(), false);
    std::vector<uint32_t> work;
    auto visit = [&](const std::vector<Run>& body) {
      for (const Run& run : body)
        if (isRuleRef(run.symbol) && !reachable[ruleIndex(run.symbol)]) {
          reachable[ruleIndex(run.symbol)] = true;
          work.push_back(ruleIndex(run.symbol));
        }
    };
    for (const auto& s : out.sequences)
      visit(s.body);
    while (!work.empty()) {
      const uint32_t b = work.back();
      work.pop_back();
      visit(bodies_[b]);
    }
    // Processed bodies were created children first, so ids in creation order keep that property.
    std::vector<uint32_t> id(bodies_.size(), 0);
    out.rules.assign(1, {});
    for (uint32_t b = 0; b < bodies_.size(); ++b)
      if (reachable[b]) {
        id[b] = static_cast<uint32_t>(out.rules.size());
        out.rules.push_back({{}, names_[b], 0, 0});
      }
    auto renumbered = [&](const std::vector<Run>& body) {
      std::vector<Run> r = body;
      for (Run& run : r)
        if (isRuleRef(run.symbol)) run.symbol = kRuleRef | id[ruleIndex(run.symbol)];
      return r;
    };
    auto lengthOf = [&](const std::vector<Run>& body) {
      uint64_t length = 0;
      for (const Run& run : body) {
        const uint64_t one = isRuleRef(run.symbol) ? out.rules[ruleIndex(run.symbol)].length : 1;
        length = addCapped(length, mulCapped(one, run.count, kMax), kMax);
      }
      return length;
    };
    for (uint32_t b = 0; b < bodies_.size(); ++b)
      if (reachable[b]) {
        auto& rule = out.rules[id[b]];
        rule.body = renumbered(bodies_[b]);
        rule.length = lengthOf(rule.body);
      }
    for (auto& s : out.sequences) {
      s.body = renumbered(s.body);
      s.length = lengthOf(s.body);
    }
    auto countUses = [&](const std::vector<Run>& body) {
      for (const Run& run : body)
        if (isRuleRef(run.symbol)) ++out.rules[ruleIndex(run.symbol)].uses;
    };
    for (size_t r = 1; r < out.rules.size(); ++r)
      countUses(out.rules[r].body);
    for (const auto& s : out.sequences)
      countUses(s.body);
  }

  const GrammarTable& table_;
  PostProcessing options_;
  uint64_t cap_;
  std::vector<Done> done_;
  std::vector<std::vector<Run>> bodies_;
  std::vector<uint32_t> names_;
  std::unordered_map<std::vector<Run>, uint32_t, VectorHash> rule_of_body_;
};

} // namespace

ProcessedGrammar postProcess(const GrammarTable& table, const PostProcessing& options) {
  return PostProcessor(table, options).run();
}

ProcessedGrammar rawGrammar(const GrammarTable& table) {
  ProcessedGrammar out;
  auto runs = [](const std::vector<GrammarSymbol>& body) {
    std::vector<Run> r;
    for (GrammarSymbol s : body)
      r.push_back({s, 1});
    return r;
  };
  out.rules.assign(table.rules().size(), {});
  for (uint32_t r = 1; r < table.rules().size(); ++r) {
    auto& rule = out.rules[r];
    rule.body = runs(table.rules()[r]);
    rule.name = r;
    for (const Run& run : rule.body)
      rule.length += isRuleRef(run.symbol) ? out.rules[ruleIndex(run.symbol)].length : 1;
  }
  for (const auto& s : table.sequences()) {
    ProcessedGrammar::Sequence seq{runs(s.body), s.count, s.first, 0};
    for (const Run& run : seq.body)
      seq.length += isRuleRef(run.symbol) ? out.rules[ruleIndex(run.symbol)].length : 1;
    out.sequences.push_back(std::move(seq));
  }
  for (size_t r = 1; r < out.rules.size(); ++r)
    for (const Run& run : out.rules[r].body)
      if (isRuleRef(run.symbol)) ++out.rules[ruleIndex(run.symbol)].uses;
  for (const auto& s : out.sequences)
    for (const Run& run : s.body)
      if (isRuleRef(run.symbol)) ++out.rules[ruleIndex(run.symbol)].uses;
  return out;
}

void RunFormatter::append(const Run& run, std::string& out) {
  const bool is_rule = isRuleRef(run.symbol);
  const std::string name = is_rule ? (rule_ ? rule_(ruleIndex(run.symbol))
                                            : "R" + std::to_string(ruleIndex(run.symbol)))
                                   : terminal_(run.symbol);
  const bool letter = run.count == 1 && !is_rule &&
                      (name.size() == 1 || (joined_returns_ && run.symbol == kReturnSymbol));
  if (!first_ && !(letter && last_was_letter_)) out += ' ';
  if (run.count != 1)
    out += (cutoff_ != 0 && run.count > cutoff_ ? std::string("*") : std::to_string(run.count)) +
           ":";
  out += name;
  last_was_letter_ = letter;
  first_ = false;
}

std::string formatRuns(const std::vector<Run>& runs, uint64_t cutoff,
                       const std::function<std::string(uint32_t)>& terminal,
                       const std::function<std::string(uint32_t)>& rule, bool joined_returns) {
  std::string out;
  RunFormatter format(cutoff, terminal, rule, joined_returns);
  for (const Run& run : runs)
    format.append(run, out);
  return out;
}

std::string formatBody(const ProcessedGrammar& grammar, const std::vector<Run>& body,
                       const std::function<std::string(uint32_t)>& terminal) {
  return formatRuns(body, grammar.cutoff, terminal, [&](uint32_t r) {
    return "R" + std::to_string(grammar.rules[r].name);
  });
}

// ---- 001's summary form

namespace {

class Summarizer {
public:
  Summarizer(const ProcessedGrammar& grammar) : g_(grammar), number_(grammar.rules.size(), 0) {}

  Summary run(size_t sequence) {
    const auto& s = g_.sequences.at(sequence);
    out_.rules.push_back({0, {}, s.length, false});
    std::vector<Summary::Item> phases;
    for (const Run& run : s.body) {
      if (run.count > 1) {
        // A repetition is one phase, and a rule of its own.
        const uint32_t number = static_cast<uint32_t>(out_.rules.size());
        out_.rules.push_back({number, {}, 0, true});
        Summary::Item repeat = repeatItem(run);
        out_.rules[number].body = {repeat};
        out_.rules[number].length = lengthOf(run);
        phases.push_back({Summary::Item::Kind::kRule, 0, number, 1, 0});
      } else {
        appendItem(phases, run);
      }
    }
    out_.rules[0].body = std::move(phases);
    // Rules met inside others are numbered after the phases, in order of first appearance.
    for (size_t i = 0; i < pending_.size(); ++i)
      fill(pending_[i]);
    renumber();
    return std::move(out_);
  }

private:
  uint64_t lengthOf(const Run& run) const {
    const uint64_t one = isRuleRef(run.symbol) ? g_.rules[ruleIndex(run.symbol)].length : 1;
    return one * run.count;
  }

  // Rules used once (and not repeated) add nothing: their body takes their place.
  bool inlined(uint32_t rule) const { return g_.rules[rule].uses <= 1; }

  uint32_t numberOf(uint32_t rule) {
    if (number_[rule] == 0) {
      number_[rule] = static_cast<uint32_t>(out_.rules.size());
      out_.rules.push_back({number_[rule], {}, g_.rules[rule].length, false});
      pending_.push_back(rule);
    }
    return number_[rule];
  }

  void fill(uint32_t rule) {
    std::vector<Summary::Item> body;
    for (const Run& run : g_.rules[rule].body)
      appendItem(body, run);
    out_.rules[number_[rule]].body = std::move(body);
  }

  Summary::Item repeatItem(const Run& run) {
    Summary::Item item{Summary::Item::Kind::kRepeat, 0, 0, run.count, 0};
    if (isRuleRef(run.symbol)) {
      const uint32_t rule = ruleIndex(run.symbol);
      item.rule = numberOf(rule);
    } else {
      item.repeated_terminal = run.symbol;
    }
    return item;
  }

  void appendItem(std::vector<Summary::Item>& body, const Run& run) {
    if (run.count > 1) {
      body.push_back(repeatItem(run));
    } else if (!isRuleRef(run.symbol)) {
      body.push_back({Summary::Item::Kind::kTerminal, run.symbol, 0, 1, 0});
    } else if (inlined(ruleIndex(run.symbol))) {
      for (const Run& inner : g_.rules[ruleIndex(run.symbol)].body)
        appendItem(body, inner);
    } else {
      body.push_back({Summary::Item::Kind::kRule, 0, numberOf(ruleIndex(run.symbol)), 1, 0});
    }
  }

  // A rule used only by one repetition is written inside it, "2 x (...)", and has no line of its
  // own. The rules that have one are numbered in the order they appear when the lines are read
  // from rule 0 (a rule's first mention, written inside a repetition or not, numbers it), the ones
  // written inside repetitions after them: the lines have no gaps.
  void renumber() {
    auto& rules = out_.rules;
    std::vector<uint32_t> references(rules.size(), 0), repeats(rules.size(), 0);
    for (const auto& rule : rules)
      for (const auto& item : rule.body) {
        if (item.kind == Summary::Item::Kind::kTerminal || item.rule == 0) continue;
        ++references[item.rule];
        if (item.kind == Summary::Item::Kind::kRepeat) ++repeats[item.rule];
      }
    auto inside = [&](uint32_t r) { return references[r] == 1 && repeats[r] == 1; };
    std::vector<uint32_t> order{0}, inner; // old numbers: lines in reading order; the others
    std::vector<bool> met(rules.size(), false);
    met[0] = true;
    std::function<void(uint32_t)> read = [&](uint32_t r) {
      for (const auto& item : rules[r].body) {
        if (item.kind == Summary::Item::Kind::kTerminal || item.rule == 0 || met[item.rule])
          continue;
        met[item.rule] = true;
        if (inside(item.rule)) {
          inner.push_back(item.rule);
          read(item.rule); // written here
        } else {
          order.push_back(item.rule);
        }
      }
    };
    for (size_t i = 0; i < order.size(); ++i)
      read(order[i]);
    order.insert(order.end(), inner.begin(), inner.end());
    for (uint32_t r = 0; r < rules.size(); ++r)
      if (!met[r]) order.push_back(r); // not reached from rule 0 (none is, but keep every rule)
    std::vector<uint32_t> renamed(rules.size());
    for (uint32_t i = 0; i < order.size(); ++i)
      renamed[order[i]] = i;
    std::vector<Summary::Rule> reordered;
    for (uint32_t old : order) {
      reordered.push_back(std::move(rules[old]));
      reordered.back().number = renamed[old];
      for (auto& item : reordered.back().body)
        if (item.kind != Summary::Item::Kind::kTerminal && item.rule != 0)
          item.rule = renamed[item.rule];
    }
    rules = std::move(reordered);
  }

  const ProcessedGrammar& g_;
  std::vector<uint32_t> number_; // processed rule -> summary number (0: none yet)
  std::vector<uint32_t> pending_;
  Summary out_;
};

} // namespace

Summary summarize(const ProcessedGrammar& grammar, size_t sequence) {
  return Summarizer(grammar).run(sequence);
}

std::vector<std::string> formatSummary(const Summary& summary,
                                       const std::function<std::string(uint32_t)>& terminal) {
  std::vector<std::string> lines;
  std::vector<bool> shown_inline(summary.rules.size(), false);
  // A repeated rule used only by its repetition is written inside it: 64 x (+lock,-lock).
  std::vector<uint32_t> references(summary.rules.size(), 0);
  for (const auto& rule : summary.rules)
    for (const auto& item : rule.body)
      if (item.kind != Summary::Item::Kind::kTerminal && item.rule != 0) ++references[item.rule];
  std::function<std::string(const std::vector<Summary::Item>&)> items;
  auto item = [&](const Summary::Item& it) -> std::string {
    switch (it.kind) {
    case Summary::Item::Kind::kTerminal: return terminal(it.terminal);
    case Summary::Item::Kind::kRule: return std::to_string(it.rule);
    case Summary::Item::Kind::kRepeat: {
      std::string body;
      if (it.rule == 0) {
        body = terminal(it.repeated_terminal);
      } else if (references[it.rule] == 1) {
        body = items(summary.rules[it.rule].body);
        shown_inline[it.rule] = true;
      } else {
        body = std::to_string(it.rule);
      }
      return std::to_string(it.count) + " x (" + body + ")";
    }
    }
    return {};
  };
  items = [&](const std::vector<Summary::Item>& body) {
    std::string out;
    for (const auto& it : body)
      out += (out.empty() ? "" : ",") + item(it);
    return out;
  };
  std::vector<std::string> text(summary.rules.size());
  for (const auto& rule : summary.rules)
    text[rule.number] = items(rule.body);
  for (const auto& rule : summary.rules)
    if (!shown_inline[rule.number])
      lines.push_back(std::to_string(rule.number) + " -> " + text[rule.number]);
  return lines;
}

nlohmann::ordered_json summaryJson(const Summary& summary, size_t max_phases, size_t label_events) {
  using Json = nlohmann::ordered_json;
  // The first terminals of an item's expansion (its label), without expanding more than needed.
  std::function<void(const Summary::Item&, std::vector<uint32_t>&)> firstTerminals;
  auto ruleTerminals = [&](uint32_t rule, std::vector<uint32_t>& out) {
    for (const auto& it : summary.rules[rule].body) {
      if (out.size() >= label_events) return;
      firstTerminals(it, out);
    }
  };
  firstTerminals = [&](const Summary::Item& it, std::vector<uint32_t>& out) {
    switch (it.kind) {
    case Summary::Item::Kind::kTerminal: out.push_back(it.terminal); break;
    case Summary::Item::Kind::kRule: ruleTerminals(it.rule, out); break;
    case Summary::Item::Kind::kRepeat:
      // One pass of the body: the label is what repeats.
      if (it.rule == 0) out.push_back(it.repeated_terminal);
      else ruleTerminals(it.rule, out);
      break;
    }
  };
  Json phases = Json::array();
  const auto& top = summary.rules[0].body;
  for (size_t i = 0; i < top.size() && i < max_phases; ++i) {
    const auto& it = top[i];
    Json phase;
    std::vector<uint32_t> label;
    uint64_t length = 1, repeat = 1;
    uint32_t rule = 0;
    if (it.kind == Summary::Item::Kind::kRule) {
      rule = it.rule;
      const auto& r = summary.rules[it.rule];
      length = r.length;
      if (r.repetition) {
        repeat = r.body.front().count;
        firstTerminals(r.body.front(), label);
      } else {
        ruleTerminals(it.rule, label);
      }
    } else {
      firstTerminals(it, label);
    }
    phase["rule"] = rule;
    phase["repeat"] = repeat;
    phase["events"] = length;
    Json codes = Json::array();
    for (uint32_t terminal : label)
      codes.push_back(terminalCode(terminal));
    phase["label"] = std::move(codes);
    phases.push_back(std::move(phase));
  }
  return Json{{"events", summary.rules[0].length},
              {"phases", std::move(phases)},
              {"more_phases", top.size() > max_phases ? top.size() - max_phases : 0}};
}

} // namespace shapetrace::analyzer::summaries
