// The structure summaries as consumers of a scope's sequences (sequences.h): each encoding is a
// SequenceSink that turns the calls it is given into the form's symbols (symbols.h) or statistics,
// one sequence at a time, keeping only what its encoding keeps (docs/summaries.md):
//
//   rle        run-length encoding with cutoff k; identical sequences counted once
//   sequitur   Sequitur per sequence, rules merged in one table, then 002's post-processing
//              (run-length, cutoff k, balanced rules)
//   summary    the ThreadViewer proposal's phases of each distinct sequence
//   fsa        one k-tail automaton over every sequence
//   nlevel     N-level call compaction
//   intervals  interval compaction
#pragma once

#include "summaries/compaction.h"
#include "summaries/grammar.h"
#include "summaries/ktail.h"
#include "summaries/sequences.h"
#include "summaries/sequitur.h"
#include "summaries/symbols.h"

#include <nlohmann/json.hpp>

#include <memory>
#include <ostream>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace shapetrace::analyzer::summaries {

enum class Encoding : uint8_t { kRle, kSequitur, kSummary, kFsa, kNLevel, kIntervals };
std::string_view encodingName(Encoding encoding);
std::optional<Encoding> parseEncoding(std::string_view name);

struct EncoderOptions {
  SymbolForm form = SymbolForm::kString;
  uint64_t cutoff = 0;        // rle, sequitur: counts above it are "*" (0: none)
  bool balanced = false;      // sequitur: only well-nested rules
  uint32_t k = 3;             // fsa: tail length
  uint32_t levels = 3;        // nlevel: N
  uint32_t intervals = 32;    // intervals: at most this many
  // sequitur, summary: a sequence's grammar stops growing at this many symbols (the rest of the
  // sequence is counted in symbols_dropped).
  size_t max_grammar_symbols = size_t{1} << 24;
};

// A sink that writes the form's terminals of the calls it is given.
class SymbolSink : public SequenceSink {
public:
  explicit SymbolSink(SymbolForm form) : form_(form) {}
  void enter(uint32_t function, uint32_t, uint64_t) override { push(entrySymbol(form_, function)); }
  void exit(uint32_t function, uint32_t, uint64_t, uint64_t, bool) override {
    if (const auto symbol = returnSymbol(form_, function)) push(*symbol);
  }
  SymbolForm form() const { return form_; }
  uint64_t symbols() const { return symbols_; }

protected:
  virtual void push(uint32_t symbol) = 0;
  uint64_t symbols_ = 0;

private:
  SymbolForm form_;
};

// Distinct sequences of an encoding: how many sequences each stands for and the first of them.
struct DistinctSequence {
  uint64_t count = 0;
  SequenceInfo first;
  uint64_t length = 0; // symbols
};

class RunLengthSink final : public SymbolSink {
public:
  // A run as stored: 8 bytes (a longer run is stored as several).
  struct StoredRun {
    uint32_t symbol;
    uint32_t count;
  };
  RunLengthSink(SymbolForm form, uint64_t cutoff) : SymbolSink(form), cutoff_(cutoff) {}
  void begin(const SequenceInfo& info) override;
  void end(uint64_t time_ns) override;
  uint64_t cutoff() const { return cutoff_; }
  // Distinct sequences in order of first appearance, runs in order (consecutive stored runs of a
  // symbol are one run).
  const std::vector<std::vector<StoredRun>>& runs() const { return runs_; }
  const std::vector<DistinctSequence>& sequences() const { return distinct_; }
  // Calls `each` with every run of distinct sequence `i`, longer ones joined.
  void forEachRun(size_t i, const std::function<void(const Run&)>& each) const;

private:
  void push(uint32_t symbol) override {
    if (!current_.empty() && current_.back().symbol == symbol && current_.back().count != UINT32_MAX)
      ++current_.back().count;
    else
      current_.push_back({symbol, 1});
    ++symbols_;
    ++length_;
  }
  uint64_t cutoff_;
  std::vector<StoredRun> current_;
  uint64_t length_ = 0;
  SequenceInfo info_;
  std::vector<std::vector<StoredRun>> runs_;
  std::vector<DistinctSequence> distinct_;
  std::unordered_map<uint64_t, std::vector<uint32_t>> by_hash_; // runs' hash -> distinct ones
};

class GrammarSink final : public SymbolSink {
public:
  GrammarSink(SymbolForm form, bool balanced, size_t max_symbols);
  void begin(const SequenceInfo& info) override;
  void end(uint64_t time_ns) override;
  const GrammarTable& table() const { return table_; }
  // Per table sequence: the first sequence it stands for.
  const std::vector<SequenceInfo>& firstOf() const { return first_; }
  uint64_t symbolsDropped() const { return dropped_; }

private:
  void push(uint32_t symbol) override {
    ++symbols_;
    if (!sequitur_.push(symbol)) ++dropped_;
  }
  Sequitur sequitur_;
  GrammarTable table_;
  SequenceInfo info_;
  std::vector<SequenceInfo> first_;
  uint64_t dropped_ = 0;
};

class AutomatonSink final : public SymbolSink {
public:
  AutomatonSink(SymbolForm form, uint32_t k) : SymbolSink(form), builder_({k}) {}
  void begin(const SequenceInfo&) override { builder_.beginSequence(); }
  void end(uint64_t) override { builder_.endSequence(); }
  Automaton automaton() const { return builder_.automaton(); }

private:
  void push(uint32_t symbol) override {
    ++symbols_;
    builder_.push(symbol);
  }
  KTailBuilder builder_;
};

class NLevelSink final : public SequenceSink {
public:
  explicit NLevelSink(uint32_t levels) : compaction_(levels) {}
  void begin(const SequenceInfo&) override { compaction_.reset(); }
  void enter(uint32_t function, uint32_t, uint64_t) override { compaction_.enter(function); }
  void exit(uint32_t, uint32_t, uint64_t enter_ns, uint64_t exit_ns, bool measured) override {
    compaction_.exit(exit_ns - enter_ns, measured);
  }
  void gap(uint64_t) override { compaction_.reset(); }
  void end(uint64_t) override { compaction_.reset(); }
  const NLevelCompaction& compaction() const { return compaction_; }

private:
  NLevelCompaction compaction_;
};

class IntervalSink final : public SequenceSink {
public:
  explicit IntervalSink(uint32_t intervals) : compaction_(intervals) {}
  void begin(const SequenceInfo&) override {}
  void enter(uint32_t function, uint32_t, uint64_t time_ns) override {
    compaction_.enter(function, time_ns);
  }
  void exit(uint32_t function, uint32_t, uint64_t, uint64_t exit_ns, bool) override {
    compaction_.exit(function, exit_ns);
  }
  void gap(uint64_t time_ns) override { compaction_.reset(time_ns); }
  void end(uint64_t time_ns) override { compaction_.reset(time_ns); }
  const IntervalCompaction& compaction() const { return compaction_; }

private:
  IntervalCompaction compaction_;
};

// One encoding run over a scope: its sink and how its result is written.
class Encoder {
public:
  Encoder(Encoding encoding, const EncoderOptions& options);
  SequenceSink& sink() { return *sink_; }

  // What the text output writes for a person: at most `max_sequences` distinct sequences (nlevel:
  // tuples), at most `max_runs` runs per sequence, rule body or summary (0: all; what is left out
  // is counted and said), and functions by their short names (function_names.h) unless
  // `full_names`. A thread's sequence can be millions of runs of names thousands of characters
  // long: written whole, one line of it was 150 MB. The JSON keeps everything.
  struct TextLimits {
    size_t max_sequences = 20;
    uint64_t max_runs = 500;
    bool full_names = false;
  };
  // The papers' notation (fsa: its transitions, "0 -A-> 1"), lines wrapped, written as it is made.
  void writeText(std::ostream& out, const Analysis& analysis, const TextLimits& limits) const;
  // The JSON document (docs/summaries.md), functions as analysis indices.
  nlohmann::ordered_json json(const Analysis& analysis, size_t max_sequences) const;
  // fsa only: the automaton in Graphviz.
  std::string dot(const Analysis& analysis) const;

  Encoding encoding() const { return encoding_; }
  uint64_t symbols() const;

private:
  Encoding encoding_;
  EncoderOptions options_;
  std::unique_ptr<SequenceSink> sink_;
};

// A terminal of `form` with the analysis' function names.
std::string terminalText(const Analysis& analysis, SymbolForm form, uint32_t symbol);
// "worker-0 (4321) at 1234567 ns".
std::string describeSequence(const Analysis& analysis, const SequenceInfo& info);

} // namespace shapetrace::analyzer::summaries
