// The encodings as sequence sinks, and how their results are written.
#include "summaries/encoders.h"

#include "function_names.h"

#include "scope.h"

#include <algorithm>
#include <cstdio>
#include <set>
#include <stdexcept>

namespace shapetrace::analyzer::summaries {
namespace {

using Json = nlohmann::ordered_json;

// Runs written per sequence in JSON.
constexpr size_t kMaxJsonRuns = size_t{1} << 20;

std::string ns(double value) {
  char text[32];
  if (value < 1e3) std::snprintf(text, sizeof text, "%.0f ns", value);
  else if (value < 1e6) std::snprintf(text, sizeof text, "%.2f us", value / 1e3);
  else if (value < 1e9) std::snprintf(text, sizeof text, "%.2f ms", value / 1e6);
  else std::snprintf(text, sizeof text, "%.3f s", value / 1e9);
  return text;
}

std::string functionName(const Analysis& a, uint32_t f) {
  return f < a.functions.size() ? a.functions[f].name : "fn#" + std::to_string(f);
}

Json infoJson(const SequenceInfo& info) {
  return Json{{"process", info.thread.process},
              {"thread", info.thread.thread},
              {"start_ns", info.start_ns},
              {"function", info.function == UINT32_MAX ? Json(nullptr) : Json(info.function)}};
}

// The functions a document names, listed once at its end.
class UsedFunctions {
public:
  void terminal(uint32_t symbol) {
    if (symbol != kReturnSymbol && symbol != kEndSymbol) used_.insert(symbolFunction(symbol));
  }
  void function(uint32_t f) { used_.insert(f); }
  Json json(const Analysis& a) const {
    Json out = Json::array();
    for (uint32_t f : used_)
      out.push_back({{"id", f}, {"name", functionName(a, f)}});
    return out;
  }

private:
  std::set<uint32_t> used_;
};

Json runsJson(const std::vector<Run>& runs, UsedFunctions& used,
              const std::function<uint32_t(uint32_t)>& rule_name) {
  Json out = Json::array();
  for (const Run& r : runs) {
    if (isRuleRef(r.symbol)) {
      out.push_back({{"rule", rule_name(ruleIndex(r.symbol))}, {"count", r.count}});
    } else {
      used.terminal(r.symbol);
      out.push_back({{"symbol", terminalCode(r.symbol)}, {"count", r.count}});
    }
  }
  return out;
}

// Sequences by how many they stand for, then first appearance.
std::vector<size_t> byCount(const std::vector<DistinctSequence>& sequences) {
  std::vector<size_t> order(sequences.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return sequences[a].count != sequences[b].count ? sequences[a].count > sequences[b].count
                                                    : a < b;
  });
  return order;
}

std::string header(const DistinctSequence& s, const Analysis& a, const std::string& name) {
  return "# " + name + ": " + std::to_string(s.count) +
         (s.count == 1 ? " sequence" : " sequences") + " like it, " + std::to_string(s.length) +
         " symbols, first: " + describeSequence(a, s.first);
}

} // namespace

std::string_view encodingName(Encoding encoding) {
  switch (encoding) {
  case Encoding::kRle: return "rle";
  case Encoding::kSequitur: return "sequitur";
  case Encoding::kSummary: return "summary";
  case Encoding::kFsa: return "fsa";
  case Encoding::kNLevel: return "nlevel";
  case Encoding::kIntervals: return "intervals";
  }
  return "?";
}

std::optional<Encoding> parseEncoding(std::string_view name) {
  for (Encoding e : {Encoding::kRle, Encoding::kSequitur, Encoding::kSummary, Encoding::kFsa,
                     Encoding::kNLevel, Encoding::kIntervals})
    if (encodingName(e) == name) return e;
  return std::nullopt;
}

std::string terminalText(const Analysis& a, SymbolForm form, uint32_t symbol) {
  return symbolText(symbol, form, [&](uint32_t f) { return functionName(a, f); });
}

std::string describeSequence(const Analysis& a, const SequenceInfo& info) {
  std::string out = info.function == UINT32_MAX ? "thread " : functionName(a, info.function) + " on ";
  return out + threadLabel(a, info.thread) + " at " + std::to_string(info.start_ns) + " ns";
}

// ---- the sinks

void RunLengthSink::begin(const SequenceInfo& info) {
  current_.clear();
  length_ = 0;
  info_ = info;
}

void RunLengthSink::end(uint64_t) {
  uint64_t h = current_.size();
  for (const StoredRun& r : current_) {
    h = (h ^ (uint64_t{r.symbol} << 32 | r.count)) * 0x9E3779B97F4A7C15ull;
    h ^= h >> 29;
  }
  auto& candidates = by_hash_[h];
  auto same = [&](uint32_t i) {
    const auto& other = runs_[i];
    return other.size() == current_.size() &&
           std::equal(other.begin(), other.end(), current_.begin(),
                      [](const StoredRun& x, const StoredRun& y) {
                        return x.symbol == y.symbol && x.count == y.count;
                      });
  };
  for (uint32_t i : candidates)
    if (same(i)) {
      ++distinct_[i].count;
      return;
    }
  candidates.push_back(static_cast<uint32_t>(runs_.size()));
  runs_.push_back(std::move(current_));
  current_ = {};
  distinct_.push_back({1, info_, length_});
}

void RunLengthSink::forEachRun(size_t i, const std::function<void(const Run&)>& each) const {
  Run pending{0, 0};
  for (const StoredRun& r : runs_[i]) {
    if (pending.count != 0 && pending.symbol == r.symbol) {
      pending.count += r.count;
      continue;
    }
    if (pending.count != 0) each(pending);
    pending = {r.symbol, r.count};
  }
  if (pending.count != 0) each(pending);
}

GrammarSink::GrammarSink(SymbolForm form, bool balanced, size_t max_symbols)
    : SymbolSink(form), sequitur_(Sequitur::Options{balanced, max_symbols}) {}

void GrammarSink::begin(const SequenceInfo& info) {
  sequitur_.clear();
  info_ = info;
}

void GrammarSink::end(uint64_t) {
  const uint32_t index = table_.add(sequitur_.grammar());
  if (index == first_.size()) first_.push_back(info_);
}

// ---- the encoder

Encoder::Encoder(Encoding encoding, const EncoderOptions& options)
    : encoding_(encoding), options_(options) {
  if (options.balanced && options.form == SymbolForm::kCalls)
    throw std::invalid_argument(
        "balanced rules need returns: use the string or enter-exit form with --balanced");
  switch (encoding) {
  case Encoding::kRle:
    sink_ = std::make_unique<RunLengthSink>(options.form, options.cutoff);
    break;
  case Encoding::kSequitur:
  case Encoding::kSummary:
    sink_ = std::make_unique<GrammarSink>(options.form, options.balanced,
                                          options.max_grammar_symbols);
    break;
  case Encoding::kFsa: sink_ = std::make_unique<AutomatonSink>(options.form, options.k); break;
  case Encoding::kNLevel: sink_ = std::make_unique<NLevelSink>(options.levels); break;
  case Encoding::kIntervals: sink_ = std::make_unique<IntervalSink>(options.intervals); break;
  }
}

uint64_t Encoder::symbols() const {
  if (const auto* s = dynamic_cast<const SymbolSink*>(sink_.get())) return s->symbols();
  return 0;
}

namespace {

// The post-processed grammar's sequences as DistinctSequences (for ordering and headers).
std::vector<DistinctSequence> distinctOf(const ProcessedGrammar& g, const GrammarSink& sink) {
  std::vector<DistinctSequence> out;
  // `first` is the index of a sequence in the order they were added: its table entry's.
  std::unordered_map<uint64_t, size_t> entry_of_first;
  const auto& table = sink.table().sequences();
  for (size_t i = 0; i < table.size(); ++i)
    entry_of_first[table[i].first] = i;
  for (const auto& s : g.sequences)
    out.push_back({s.count, sink.firstOf()[entry_of_first.at(s.first)], s.length});
  return out;
}

} // namespace

namespace {

// How a person is told what the text left out, and where to get it.
constexpr const char* kElidedHint =
    " left out (--max-runs 0 writes them all; --json FILE has everything)";

// Runs written for a person: lines wrapped near kTextWidth characters (between runs), at most
// `max_runs` of them (0: all), and a line saying how many more there were.
class WrappedRuns {
public:
  static constexpr size_t kTextWidth = 120;
  WrappedRuns(RunFormatter format, uint64_t max_runs, std::string& out)
      : format_(std::move(format)), max_runs_(max_runs), out_(out), line_start_(out.size()) {}
  void append(const Run& run) {
    if (max_runs_ != 0 && written_ >= max_runs_) {
      ++elided_;
      return;
    }
    if (out_.size() - line_start_ > kTextWidth) {
      out_ += "\n   ";
      line_start_ = out_.size() - 3;
    }
    format_.append(run, out_);
    ++written_;
  }
  // `out` was written out and emptied: the current line goes on from its start.
  void flushed() { line_start_ = 0; }
  void finish() {
    out_ += "\n";
    if (elided_ != 0) out_ += "# " + std::to_string(elided_) + " more runs" + kElidedHint + "\n";
  }

private:
  RunFormatter format_;
  uint64_t max_runs_;
  std::string& out_;
  size_t line_start_;
  uint64_t written_ = 0, elided_ = 0;
};

} // namespace

void Encoder::writeText(std::ostream& stream, const Analysis& a, const TextLimits& limits) const {
  const SymbolForm form = options_.form;
  const size_t max_sequences = limits.max_sequences;
  ShortNames short_names;
  auto name = [&](uint32_t f) -> std::string {
    return limits.full_names ? functionName(a, f) : short_names.of(functionName(a, f));
  };
  auto terminal = [&](uint32_t s) { return symbolText(s, form, name); };
  std::string out;
  switch (encoding_) {
  case Encoding::kRle: {
    const auto& sink = static_cast<const RunLengthSink&>(*sink_);
    const auto order = byCount(sink.sequences());
    for (size_t n = 0; n < order.size() && n < max_sequences; ++n) {
      const size_t i = order[n];
      out += header(sink.sequences()[i], a, "S" + std::to_string(n + 1)) + "\n";
      // A thread's encoding can be gigabytes: written as it is made, and bounded.
      WrappedRuns runs(RunFormatter(sink.cutoff(), terminal, {}, true), limits.max_runs, out);
      sink.forEachRun(i, [&](const Run& run) {
        runs.append(run);
        if (out.size() >= (size_t{1} << 16)) {
          stream << out;
          out.clear();
          runs.flushed();
        }
      });
      runs.finish();
    }
    if (order.size() > max_sequences)
      out += "# " + std::to_string(order.size() - max_sequences) + " more distinct sequences\n";
    break;
  }
  case Encoding::kSequitur: {
    const auto& sink = static_cast<const GrammarSink&>(*sink_);
    const ProcessedGrammar g = postProcess(sink.table(), {options_.cutoff, options_.balanced});
    auto body = [&](const std::vector<Run>& runs) {
      WrappedRuns wrapped(RunFormatter(g.cutoff, terminal,
                                       [&](uint32_t r) { return "R" + std::to_string(g.rules[r].name); }),
                          limits.max_runs, out);
      for (const Run& run : runs)
        wrapped.append(run);
      wrapped.finish();
    };
    for (size_t r = 1; r < g.rules.size(); ++r) {
      out += "R" + std::to_string(g.rules[r].name) + " ::= ";
      body(g.rules[r].body);
    }
    const auto distinct = distinctOf(g, sink);
    const auto order = byCount(distinct);
    for (size_t n = 0; n < order.size() && n < max_sequences; ++n) {
      const std::string sequence = order.size() == 1 ? "S" : "S" + std::to_string(n + 1);
      out += header(distinct[order[n]], a, sequence) + "\n" + sequence + " ::= ";
      body(g.sequences[order[n]].body);
    }
    if (order.size() > max_sequences)
      out += "# " + std::to_string(order.size() - max_sequences) + " more distinct sequences\n";
    if (sink.symbolsDropped() != 0)
      out += "# " + std::to_string(sink.symbolsDropped()) +
             " symbols past the grammar's bound are not encoded\n";
    break;
  }
  case Encoding::kSummary: {
    const auto& sink = static_cast<const GrammarSink&>(*sink_);
    const ProcessedGrammar g = postProcess(sink.table(), {});
    const auto distinct = distinctOf(g, sink);
    const auto order = byCount(distinct);
    for (size_t n = 0; n < order.size() && n < max_sequences; ++n) {
      out += header(distinct[order[n]], a, "sequence " + std::to_string(n + 1)) + "\n";
      const auto lines = formatSummary(summarize(g, order[n]), terminal);
      const size_t kept = limits.max_runs == 0 ? lines.size()
                                               : std::min<size_t>(lines.size(), limits.max_runs);
      for (size_t l = 0; l < kept; ++l)
        out += lines[l] + "\n";
      if (kept < lines.size())
        out += "# " + std::to_string(lines.size() - kept) + " more lines of this summary" +
               kElidedHint + "\n";
    }
    if (order.size() > max_sequences)
      out += "# " + std::to_string(order.size() - max_sequences) + " more distinct sequences\n";
    break;
  }
  case Encoding::kFsa: {
    const Automaton fsa = static_cast<const AutomatonSink&>(*sink_).automaton();
    out += "# k = " + std::to_string(fsa.k) + ": " + std::to_string(fsa.states) + " states, " +
           std::to_string(fsa.transitions.size()) + " transitions, start " +
           std::to_string(fsa.start) + ", final " + std::to_string(fsa.final) + ", " +
           std::to_string(fsa.sequences) + " sequences\n";
    for (const auto& t : fsa.transitions)
      out += std::to_string(t.from) + " -" +
             (t.symbol == kEndSymbol ? std::string("$") : terminal(t.symbol)) + "-> " +
             std::to_string(t.to) + "\n";
    if (fsa.tails_truncated) out += "# post-processing compared only part of the k-tails\n";
    break;
  }
  case Encoding::kNLevel: {
    const auto& c = static_cast<const NLevelSink&>(*sink_).compaction();
    char line[160];
    std::snprintf(line, sizeof line, "%12s %12s %12s %14s  %s\n", "calls", "mean", "sd", "total",
                  "call (innermost last)");
    out += line;
    const auto entries = c.entries();
    for (size_t i = 0; i < entries.size() && i < max_sequences; ++i) {
      const auto& e = entries[i];
      std::string tuple;
      for (uint32_t f : e.tuple)
        tuple += (tuple.empty() ? "" : " > ") + name(f);
      std::snprintf(line, sizeof line, "%12llu %12s %12s %14s  ",
                    static_cast<unsigned long long>(e.count), ns(e.mean()).c_str(),
                    ns(e.sd()).c_str(), ns(static_cast<double>(e.sum_ns)).c_str());
      out += line + tuple + "\n";
    }
    if (entries.size() > max_sequences)
      out += "# " + std::to_string(entries.size() - max_sequences) + " more tuples\n";
    break;
  }
  case Encoding::kIntervals: {
    const auto& c = static_cast<const IntervalSink&>(*sink_).compaction();
    out += "# " + std::to_string(c.count()) + " intervals of " +
           ns(static_cast<double>(c.widthNs())) + " from " + std::to_string(c.startNs()) +
           " ns; per interval the functions with the most inclusive time (exclusive in brackets)\n";
    for (size_t i = 0; i < c.count(); ++i) {
      std::vector<std::pair<uint32_t, IntervalCompaction::Cell>> cells(c.interval(i).begin(),
                                                                       c.interval(i).end());
      std::sort(cells.begin(), cells.end(), [](const auto& x, const auto& y) {
        return x.second.inclusive_ns != y.second.inclusive_ns
                   ? x.second.inclusive_ns > y.second.inclusive_ns
                   : x.first < y.first;
      });
      out += "+" + ns(static_cast<double>(i * c.widthNs())) + ":";
      for (size_t j = 0; j < cells.size() && j < 4; ++j)
        out += (j == 0 ? " " : ", ") + name(cells[j].first) + " " +
               ns(static_cast<double>(cells[j].second.inclusive_ns)) + " (" +
               ns(static_cast<double>(cells[j].second.exclusive_ns)) + ")";
      if (cells.size() > 4) out += ", +" + std::to_string(cells.size() - 4) + " more";
      out += "\n";
    }
    break;
  }
  }
  stream << out;
}

nlohmann::ordered_json Encoder::json(const Analysis& a, size_t max_sequences) const {
  const SymbolForm form = options_.form;
  auto terminal = [&](uint32_t s) { return terminalText(a, form, s); };
  UsedFunctions used;
  Json out{{"format", "shapetrace-summary"},
           {"version", 1},
           {"encoding", encodingName(encoding_)},
           {"form", symbolFormName(form)}};
  auto sequencesJson = [&](const std::vector<DistinctSequence>& distinct, auto&& body) {
    Json list = Json::array();
    const auto order = byCount(distinct);
    for (size_t n = 0; n < order.size() && n < max_sequences; ++n) {
      const auto& d = distinct[order[n]];
      Json s{{"count", d.count}, {"length", d.length}, {"first", infoJson(d.first)}};
      if (d.first.function != UINT32_MAX) used.function(d.first.function);
      body(s, order[n]);
      list.push_back(std::move(s));
    }
    out["distinct_sequences"] = distinct.size();
    out["sequences"] = std::move(list);
  };
  switch (encoding_) {
  case Encoding::kRle: {
    const auto& sink = static_cast<const RunLengthSink&>(*sink_);
    out["cutoff"] = sink.cutoff();
    sequencesJson(sink.sequences(), [&](Json& s, size_t i) {
      // At most kMaxJsonRuns runs a sequence: the text is what the JSON is for.
      std::vector<Run> runs;
      bool truncated = false;
      sink.forEachRun(i, [&](const Run& run) {
        if (runs.size() < kMaxJsonRuns) runs.push_back(run);
        else truncated = true;
      });
      s["runs"] = runsJson(runs, used, {});
      s["runs_truncated"] = truncated;
      if (!truncated) s["text"] = formatRuns(runs, sink.cutoff(), terminal, {}, true);
    });
    break;
  }
  case Encoding::kSequitur: {
    const auto& sink = static_cast<const GrammarSink&>(*sink_);
    const ProcessedGrammar g = postProcess(sink.table(), {options_.cutoff, options_.balanced});
    auto name = [&](uint32_t r) { return g.rules[r].name; };
    out["cutoff"] = options_.cutoff;
    out["balanced"] = options_.balanced;
    out["symbols_dropped"] = sink.symbolsDropped();
    Json rules = Json::array();
    for (size_t r = 1; r < g.rules.size(); ++r)
      rules.push_back({{"name", g.rules[r].name},
                       {"length", g.rules[r].length},
                       {"body", runsJson(g.rules[r].body, used, name)},
                       {"text", formatBody(g, g.rules[r].body, terminal)}});
    out["rules"] = std::move(rules);
    sequencesJson(distinctOf(g, sink), [&](Json& s, size_t i) {
      s["body"] = runsJson(g.sequences[i].body, used, name);
      s["text"] = formatBody(g, g.sequences[i].body, terminal);
    });
    break;
  }
  case Encoding::kSummary: {
    const auto& sink = static_cast<const GrammarSink&>(*sink_);
    const ProcessedGrammar g = postProcess(sink.table(), {});
    sequencesJson(distinctOf(g, sink), [&](Json& s, size_t i) {
      const Summary summary = summarize(g, i);
      Json j = summaryJson(summary, 1000, 12);
      for (const auto& phase : j["phases"])
        for (const auto& code : phase["label"]) {
          const int64_t c = code.get<int64_t>();
          used.function(static_cast<uint32_t>(c >= 0 ? c : -1 - c));
        }
      s["phases"] = std::move(j["phases"]);
      s["more_phases"] = j["more_phases"];
      s["lines"] = formatSummary(summary, terminal);
    });
    break;
  }
  case Encoding::kFsa: {
    const Automaton fsa = static_cast<const AutomatonSink&>(*sink_).automaton();
    for (const auto& t : fsa.transitions)
      used.terminal(t.symbol);
    out["automaton"] = automatonJson(fsa, terminal);
    break;
  }
  case Encoding::kNLevel: {
    const auto& c = static_cast<const NLevelSink&>(*sink_).compaction();
    Json j = nlevelJson(c, max_sequences);
    for (const auto& t : j["tuples"])
      for (const auto& f : t["tuple"])
        used.function(f.get<uint32_t>());
    out["nlevel"] = std::move(j);
    break;
  }
  case Encoding::kIntervals: {
    const auto& c = static_cast<const IntervalSink&>(*sink_).compaction();
    Json j = intervalsJson(c);
    for (const auto& interval : j["intervals"])
      for (const auto& f : interval["functions"])
        used.function(f["function"].get<uint32_t>());
    out["intervals"] = std::move(j);
    break;
  }
  }
  out["functions"] = used.json(a);
  return out;
}

std::string Encoder::dot(const Analysis& a) const {
  if (encoding_ != Encoding::kFsa) throw std::logic_error("only the fsa encoding is a graph");
  return automatonDot(static_cast<const AutomatonSink&>(*sink_).automaton(),
                      [&](uint32_t s) { return terminalText(a, options_.form, s); });
}

} // namespace shapetrace::analyzer::summaries
