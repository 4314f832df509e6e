// Two call sequences aligned, and what the alignment says.
#include "summaries/comparison.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

namespace shapetrace::analyzer::summaries {
namespace {

using Json = nlohmann::ordered_json;
using Kind = AlignedSegment::Kind;

std::string runText(const ComparedSequence& s, size_t run, uint64_t count,
                    const FunctionNamer& name, SymbolForm form) {
  const std::string symbol = symbolText(s.runs[run].symbol, form, name);
  return count == 1 ? symbol : std::to_string(count) + " x " + symbol;
}

char kindMark(Kind kind) {
  switch (kind) {
  case Kind::kMatch: return '=';
  case Kind::kMismatch: return 'x';
  case Kind::kOnlyA: return '<';
  case Kind::kOnlyB: return '>';
  }
  return '?';
}

std::string duration(uint64_t ns) {
  char text[32];
  if (ns < 1000) std::snprintf(text, sizeof text, "%llu ns", static_cast<unsigned long long>(ns));
  else if (ns < 1000000) std::snprintf(text, sizeof text, "%.2f us", static_cast<double>(ns) / 1e3);
  else if (ns < 1000000000) std::snprintf(text, sizeof text, "%.2f ms", static_cast<double>(ns) / 1e6);
  else std::snprintf(text, sizeof text, "%.3f s", static_cast<double>(ns) / 1e9);
  return text;
}

} // namespace

uint64_t ComparedSequence::length() const {
  uint64_t n = 0;
  for (const Run& r : runs)
    n += r.count;
  return n;
}

void SequenceCollector::begin(const SequenceInfo& info) {
  if (sequences_++ == 0) sequence_.info = info;
}

void SequenceCollector::push(uint32_t symbol, uint32_t depth) {
  if (sequences_ != 1) return;
  auto& runs = sequence_.runs;
  if (!runs.empty() && runs.back().symbol == symbol) {
    ++runs.back().count;
    return;
  }
  runs.push_back({symbol, 1});
  sequence_.depths.push_back(depth);
}

void SequenceCollector::enter(uint32_t function, uint32_t depth, uint64_t) {
  if (sequences_ == 1) ++sequence_.calls;
  push(entrySymbol(form_, function), depth);
}

void SequenceCollector::exit(uint32_t function, uint32_t depth, uint64_t, uint64_t, bool) {
  if (const auto symbol = returnSymbol(form_, function)) push(*symbol, depth);
}

void SequenceCollector::end(uint64_t time_ns) {
  if (sequences_ == 1) sequence_.end_ns = time_ns;
}

ComparedSequence sequenceOfCalls(const std::vector<std::pair<uint32_t, uint32_t>>& calls) {
  ComparedSequence s;
  for (const auto& [function, depth] : calls) {
    ++s.calls;
    const uint32_t symbol = enterSymbol(function);
    if (!s.runs.empty() && s.runs.back().symbol == symbol) {
      ++s.runs.back().count;
    } else {
      s.runs.push_back({symbol, 1});
      s.depths.push_back(depth);
    }
  }
  return s;
}

Alignment alignSequences(const ComparedSequence& a, const ComparedSequence& b,
                         const ComparisonOptions& o) {
  if (o.algorithm == "auto") return align(a.runs, b.runs, o.scoring, o.limits);
  if (o.algorithm == "runs") return alignRuns(a.runs, b.runs, o.scoring);
  const auto ea = expandRuns(a.runs), eb = expandRuns(b.runs);
  if (o.algorithm == "full") return alignFull(ea, eb, o.scoring);
  if (o.algorithm == "hirschberg") return alignHirschberg(ea, eb, o.scoring);
  throw std::invalid_argument("unknown alignment algorithm '" + o.algorithm + "'");
}

std::vector<AlignedRow> alignedRows(const ComparedSequence& a, const ComparedSequence& b,
                                    const Alignment& alignment) {
  // Walks both sides' runs along the segments, cutting a row wherever a run or a segment ends.
  std::vector<AlignedRow> rows;
  size_t ai = 0, bi = 0;         // current runs
  uint64_t a_used = 0, b_used = 0; // symbols of them already placed
  uint64_t column = 0;
  for (const AlignedSegment& seg : alignment.segments) {
    const bool uses_a = seg.kind != Kind::kOnlyB, uses_b = seg.kind != Kind::kOnlyA;
    uint64_t left = seg.length;
    while (left > 0) {
      uint64_t n = left;
      if (uses_a) n = std::min(n, a.runs[ai].count - a_used);
      if (uses_b) n = std::min(n, b.runs[bi].count - b_used);
      AlignedRow row{seg.kind, n, column, std::nullopt, std::nullopt};
      if (uses_a) row.a_run = ai;
      if (uses_b) row.b_run = bi;
      // Pieces of the same runs and kind in a row (a run split only by the other side) join.
      if (!rows.empty() && rows.back().kind == row.kind && rows.back().a_run == row.a_run &&
          rows.back().b_run == row.b_run)
        rows.back().count += n;
      else
        rows.push_back(row);
      column += n;
      left -= n;
      if (uses_a && (a_used += n) == a.runs[ai].count) ++ai, a_used = 0;
      if (uses_b && (b_used += n) == b.runs[bi].count) ++bi, b_used = 0;
    }
  }
  return rows;
}

std::vector<std::string> divergences(const ComparedSequence& a, const ComparedSequence& b,
                                     const Alignment& alignment, const FunctionNamer& name,
                                     SymbolForm form, size_t max) {
  std::vector<std::string> out;
  const auto rows = alignedRows(a, b, alignment);
  for (size_t i = 0; i < rows.size() && out.size() < max;) {
    if (rows[i].kind == Kind::kMatch) {
      ++i;
      continue;
    }
    // A stretch of rows that are not matches: what each side has there.
    const uint64_t column = rows[i].column;
    std::string only_a, only_b;
    for (; i < rows.size() && rows[i].kind != Kind::kMatch; ++i) {
      if (rows[i].a_run)
        only_a += (only_a.empty() ? "" : ", ") +
                  runText(a, *rows[i].a_run, rows[i].count, name, form);
      if (rows[i].b_run)
        only_b += (only_b.empty() ? "" : ", ") +
                  runText(b, *rows[i].b_run, rows[i].count, name, form);
    }
    std::string text = "at column " + std::to_string(column) + ": ";
    if (!only_a.empty() && !only_b.empty())
      text += "A has " + only_a + " where B has " + only_b;
    else if (!only_a.empty())
      text += "only A has " + only_a;
    else
      text += "only B has " + only_b;
    out.push_back(std::move(text));
  }
  return out;
}

namespace {

Json sideJson(const ComparedSequence& s) {
  Json runs = Json::array();
  for (size_t i = 0; i < s.runs.size(); ++i)
    runs.push_back(Json::array({terminalCode(s.runs[i].symbol), s.runs[i].count, s.depths[i]}));
  return Json{{"label", s.label},
              {"process", s.info.thread.process},
              {"thread", s.info.thread.thread},
              {"start_ns", s.info.start_ns},
              {"duration_ns", s.end_ns >= s.info.start_ns ? s.end_ns - s.info.start_ns : 0},
              {"function", s.info.function == UINT32_MAX ? Json(nullptr) : Json(s.info.function)},
              {"calls", s.calls},
              {"symbols", s.length()},
              {"runs", std::move(runs)}};
}

} // namespace

Json comparisonJson(const ComparedSequence& a, const ComparedSequence& b,
                    const Alignment& alignment, const ComparisonOptions& o,
                    const FunctionNamer& name, SymbolForm form) {
  const auto rows = alignedRows(a, b, alignment);
  Json row_list = Json::array();
  for (size_t i = 0; i < rows.size() && i < o.max_rows; ++i) {
    const AlignedRow& r = rows[i];
    row_list.push_back(Json::array({alignedKindName(r.kind), r.count,
                                    r.a_run ? Json(*r.a_run) : Json(nullptr),
                                    r.b_run ? Json(*r.b_run) : Json(nullptr)}));
  }
  // Conservation along the alignment: the share of matched columns in each bin of columns.
  Json track = Json::array();
  const uint64_t bins =
      std::min<uint64_t>(o.conservation_bins, std::max<uint64_t>(1, alignment.columns));
  if (alignment.columns != 0) {
    std::vector<double> matched(bins, 0), width(bins, 0);
    uint64_t start = 0;
    for (const auto& seg : alignment.segments) {
      // Bin k holds columns [ceil(k C / bins), ceil((k + 1) C / bins)).
      for (uint64_t c = start; c < start + seg.length;) {
        const uint64_t bin = c * bins / alignment.columns;
        const uint64_t bin_end = ((bin + 1) * alignment.columns + bins - 1) / bins;
        const uint64_t n = std::min(start + seg.length, bin_end) - c;
        width[bin] += static_cast<double>(n);
        if (seg.kind == Kind::kMatch) matched[bin] += static_cast<double>(n);
        c += n;
      }
      start += seg.length;
    }
    for (uint64_t i = 0; i < bins; ++i)
      track.push_back(width[i] == 0 ? 0.0 : matched[i] / width[i]);
  }
  return Json{{"a", sideJson(a)},
              {"b", sideJson(b)},
              {"scoring",
               {{"match", o.scoring.match}, {"mismatch", o.scoring.mismatch}, {"gap", o.scoring.gap}}},
              {"algorithm", alignment.algorithm},
              {"score", alignment.score},
              {"columns", alignment.columns},
              {"matches", alignment.matches},
              {"mismatches", alignment.mismatches},
              {"only_a", alignment.only_a},
              {"only_b", alignment.only_b},
              {"conservation", alignment.columns == 0 ? 1.0
                                                      : static_cast<double>(alignment.matches) /
                                                            static_cast<double>(alignment.columns)},
              {"conservation_track", std::move(track)},
              {"rows", std::move(row_list)},
              {"more_rows", rows.size() > o.max_rows ? rows.size() - o.max_rows : 0},
              {"divergences", divergences(a, b, alignment, name, form, 20)}};
}

std::string comparisonText(const ComparedSequence& a, const ComparedSequence& b,
                           const Alignment& al, const ComparisonOptions& o,
                           const FunctionNamer& name, SymbolForm form) {
  std::string out;
  auto side = [&](const char* letter, const ComparedSequence& s) {
    out += std::string("# ") + letter + ": " + s.label + ": " + std::to_string(s.calls) +
           " calls, " + std::to_string(s.length()) + " symbols in " +
           std::to_string(s.runs.size()) + " runs" +
           (s.end_ns >= s.info.start_ns ? ", " + duration(s.end_ns - s.info.start_ns) : "") + "\n";
  };
  side("A", a);
  side("B", b);
  char line[512];
  std::snprintf(line, sizeof line,
                "score %lld (match %lld, mismatch %lld, gap %lld; %s): %llu columns, %llu "
                "matches, %llu mismatches, %llu only in A, %llu only in B; conservation %.1f%%\n",
                static_cast<long long>(al.score), static_cast<long long>(o.scoring.match),
                static_cast<long long>(o.scoring.mismatch), static_cast<long long>(o.scoring.gap),
                al.algorithm.c_str(), static_cast<unsigned long long>(al.columns),
                static_cast<unsigned long long>(al.matches),
                static_cast<unsigned long long>(al.mismatches),
                static_cast<unsigned long long>(al.only_a),
                static_cast<unsigned long long>(al.only_b),
                al.columns == 0 ? 100.0
                                : 100.0 * static_cast<double>(al.matches) /
                                      static_cast<double>(al.columns));
  out += line;
  const auto diverge = divergences(a, b, al, name, form, 10);
  if (diverge.empty())
    out += "the same calls in the same order: they differ in time, not in what they did\n";
  for (const std::string& d : diverge)
    out += "- " + d + "\n";
  out += "\n";
  const auto rows = alignedRows(a, b, al);
  auto cell = [&](const ComparedSequence& s, std::optional<size_t> run, uint64_t count) {
    if (!run) return std::string(".");
    return std::string(2 * std::min<uint32_t>(s.depths[*run], 20), ' ') +
           runText(s, *run, count, name, form);
  };
  for (size_t i = 0; i < rows.size() && i < o.max_rows; ++i) {
    const AlignedRow& r = rows[i];
    std::snprintf(line, sizeof line, "%c %-60.60s %s\n", kindMark(r.kind),
                  cell(a, r.a_run, r.count).c_str(), cell(b, r.b_run, r.count).c_str());
    out += line;
  }
  if (rows.size() > o.max_rows)
    out += "# " + std::to_string(rows.size() - o.max_rows) + " more rows (--max-rows)\n";
  return out;
}

} // namespace shapetrace::analyzer::summaries
