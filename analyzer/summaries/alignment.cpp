// Needleman-Wunsch: full table, Hirschberg, and over runs.
#include "summaries/alignment.h"

#include <algorithm>
#include <deque>
#include <limits>
#include <stdexcept>

namespace shapetrace::analyzer::summaries {
namespace {

using Kind = AlignedSegment::Kind;
constexpr int64_t kMinus = std::numeric_limits<int64_t>::min() / 4;

// Segments appended in column order; adjacent ones of a kind are merged.
class Segments {
public:
  void add(Kind kind, uint64_t length, uint64_t a_begin, uint64_t b_begin) {
    if (length == 0) return;
    if (!out_.empty()) {
      AlignedSegment& last = out_.back();
      const uint64_t a_next = last.a_begin + (last.kind == Kind::kOnlyB ? 0 : last.length);
      const uint64_t b_next = last.b_begin + (last.kind == Kind::kOnlyA ? 0 : last.length);
      if (last.kind == kind && a_next == a_begin && b_next == b_begin) {
        last.length += length;
        return;
      }
    }
    out_.push_back({kind, length, a_begin, b_begin});
  }
  void append(const std::vector<AlignedSegment>& segments, uint64_t a_offset, uint64_t b_offset) {
    for (const auto& s : segments)
      add(s.kind, s.length, s.a_begin + a_offset, s.b_begin + b_offset);
  }
  std::vector<AlignedSegment> take() { return std::move(out_); }

private:
  std::vector<AlignedSegment> out_;
};

Alignment finish(std::vector<AlignedSegment> segments, const Scoring& s, const char* algorithm) {
  Alignment a;
  a.algorithm = algorithm;
  for (const auto& seg : segments) {
    a.columns += seg.length;
    const auto n = static_cast<int64_t>(seg.length);
    switch (seg.kind) {
    case Kind::kMatch:
      a.matches += seg.length;
      a.score += n * s.match;
      break;
    case Kind::kMismatch:
      a.mismatches += seg.length;
      a.score += n * s.mismatch;
      break;
    case Kind::kOnlyA:
      a.only_a += seg.length;
      a.score += n * s.gap;
      break;
    case Kind::kOnlyB:
      a.only_b += seg.length;
      a.score += n * s.gap;
      break;
    }
  }
  a.segments = std::move(segments);
  return a;
}

// The full table's traceback, as segments (offsets added by the caller).
std::vector<AlignedSegment> fullSegments(std::span<const uint32_t> a, std::span<const uint32_t> b,
                                         const Scoring& s) {
  const size_t n = a.size(), m = b.size();
  enum : uint8_t { kDiag, kUp, kLeft };
  std::vector<uint8_t> dir((n + 1) * (m + 1));
  std::vector<int64_t> prev(m + 1), cur(m + 1);
  for (size_t x = 0; x <= m; ++x) {
    prev[x] = static_cast<int64_t>(x) * s.gap;
    dir[x] = kLeft;
  }
  for (size_t y = 1; y <= n; ++y) {
    cur[0] = static_cast<int64_t>(y) * s.gap;
    dir[y * (m + 1)] = kUp;
    for (size_t x = 1; x <= m; ++x) {
      const int64_t diag = prev[x - 1] + (a[y - 1] == b[x - 1] ? s.match : s.mismatch);
      const int64_t up = prev[x] + s.gap, left = cur[x - 1] + s.gap;
      // On a tie a gap wins: traced back from the end, gaps go last and matches first.
      uint8_t d = kUp;
      int64_t best = up;
      if (left > best) best = left, d = kLeft;
      if (diag > best) best = diag, d = kDiag;
      cur[x] = best;
      dir[y * (m + 1) + x] = d;
    }
    std::swap(prev, cur);
  }
  std::vector<AlignedSegment> reversed;
  size_t y = n, x = m;
  while (y > 0 || x > 0) {
    const uint8_t d = y == 0 ? kLeft : x == 0 ? kUp : dir[y * (m + 1) + x];
    if (d == kDiag) {
      --y, --x;
      reversed.push_back({a[y] == b[x] ? Kind::kMatch : Kind::kMismatch, 1, y, x});
    } else if (d == kUp) {
      --y;
      reversed.push_back({Kind::kOnlyA, 1, y, x});
    } else {
      --x;
      reversed.push_back({Kind::kOnlyB, 1, y, x});
    }
  }
  Segments out;
  for (auto it = reversed.rbegin(); it != reversed.rend(); ++it)
    out.add(it->kind, it->length, it->a_begin, it->b_begin);
  return out.take();
}

// The last row of the table for a against b, forwards or (reversed) from the ends.
std::vector<int64_t> lastRow(std::span<const uint32_t> a, std::span<const uint32_t> b,
                             bool reversed, const Scoring& s) {
  const size_t n = a.size(), m = b.size();
  std::vector<int64_t> prev(m + 1), cur(m + 1);
  for (size_t x = 0; x <= m; ++x)
    prev[x] = static_cast<int64_t>(x) * s.gap;
  for (size_t y = 1; y <= n; ++y) {
    const uint32_t ay = reversed ? a[n - y] : a[y - 1];
    cur[0] = static_cast<int64_t>(y) * s.gap;
    for (size_t x = 1; x <= m; ++x) {
      const uint32_t bx = reversed ? b[m - x] : b[x - 1];
      cur[x] = std::max({prev[x - 1] + (ay == bx ? s.match : s.mismatch), prev[x] + s.gap,
                         cur[x - 1] + s.gap});
    }
    std::swap(prev, cur);
  }
  return prev;
}

void hirschberg(std::span<const uint32_t> a, std::span<const uint32_t> b, uint64_t a_off,
                uint64_t b_off, const Scoring& s, Segments& out) {
  if (a.empty()) {
    out.add(Kind::kOnlyB, b.size(), a_off, b_off);
    return;
  }
  if (b.empty()) {
    out.add(Kind::kOnlyA, a.size(), a_off, b_off);
    return;
  }
  if (a.size() == 1 || b.size() == 1) {
    out.append(fullSegments(a, b, s), a_off, b_off);
    return;
  }
  const size_t mid = a.size() / 2;
  const auto left = lastRow(a.first(mid), b, false, s);
  const auto right = lastRow(a.subspan(mid), b, true, s);
  size_t split = 0;
  int64_t best = kMinus;
  for (size_t j = 0; j <= b.size(); ++j)
    if (left[j] + right[b.size() - j] > best) {
      best = left[j] + right[b.size() - j];
      split = j;
    }
  hirschberg(a.first(mid), b.first(split), a_off, b_off, s, out);
  hirschberg(a.subspan(mid), b.subspan(split), a_off + mid, b_off + split, s, out);
}

// ---- over runs

// The best score of a path that moves dy rows down and dx columns right inside a block whose
// cells all score `c` on the diagonal: as many diagonals as pay (c - 2 gap > 0), the rest gaps.
struct BlockCost {
  int64_t gap;
  int64_t gain; // max(0, c - 2 gap): what a diagonal saves over two gaps
  int64_t operator()(uint64_t dy, uint64_t dx) const {
    return static_cast<int64_t>(dy + dx) * gap + gain * static_cast<int64_t>(std::min(dy, dx));
  }
};

// Out[t] for t in 1..len: the best value of reaching, from the input edge In[0..len] along the
// same side (a top row to the bottom row, or a left column to the right column), the cell t steps
// along, `depth` steps across: max over t0 <= t of In[t0] + cost(depth, t - t0).
void alongEdge(const int64_t* in, size_t len, uint64_t depth, const BlockCost& cost,
               int64_t* out) {
  const int64_t g = cost.gap, e = cost.gain;
  const auto D = static_cast<int64_t>(depth);
  // t - t0 <= depth: In[t0] - t0 (g + e) + t (g + e) + D g, a sliding window over [t - D, t].
  // t - t0 >= depth: In[t0] - t0 g + t g + D (g + e), a prefix up to t - D.
  std::deque<size_t> window;
  int64_t prefix = kMinus;
  for (size_t t = 0; t <= len; ++t) {
    const auto ti = static_cast<int64_t>(t);
    const int64_t u = in[t] - ti * (g + e);
    while (!window.empty() && in[window.back()] - static_cast<int64_t>(window.back()) * (g + e) <= u)
      window.pop_back();
    window.push_back(t);
    while (window.front() + depth < t)
      window.pop_front();
    if (t >= depth) prefix = std::max(prefix, in[t - depth] - (ti - D) * g);
    if (t == 0) continue;
    const size_t w0 = window.front();
    int64_t best = in[w0] - static_cast<int64_t>(w0) * (g + e) + ti * (g + e) + D * g;
    if (t >= depth) best = std::max(best, prefix + ti * g + D * (g + e));
    out[t] = best;
  }
}

// Out[t] for t in 1..len from the other input edge In[0..depth] (the left column to the bottom
// row, or the top row to the right column): max over s of In[s] + cost(depth - s, t).
void acrossEdge(const int64_t* in, uint64_t depth, size_t len, const BlockCost& cost,
                int64_t* out) {
  const int64_t g = cost.gap, e = cost.gain;
  const auto D = static_cast<int64_t>(depth);
  // depth - s <= t: In[s] + (D - s)(g + e) + t g, over s >= D - t (a suffix).
  // depth - s >= t: In[s] + (D - s) g + t (g + e), over s <= D - t (a prefix).
  std::vector<int64_t> suffix(depth + 2, kMinus), prefix(depth + 1, kMinus);
  for (size_t s = depth + 1; s-- > 0;)
    suffix[s] = std::max(suffix[s + 1], in[s] + (D - static_cast<int64_t>(s)) * (g + e));
  for (size_t s = 0; s <= depth; ++s)
    prefix[s] = std::max(s == 0 ? kMinus : prefix[s - 1],
                         in[s] + (D - static_cast<int64_t>(s)) * g);
  for (size_t t = 1; t <= len; ++t) {
    const auto ti = static_cast<int64_t>(t);
    const size_t from = t >= depth ? 0 : depth - t;
    int64_t best = suffix[from] + ti * g;
    if (t <= depth) best = std::max(best, prefix[depth - t] + ti * (g + e));
    out[t] = std::max(out[t], best);
  }
}

} // namespace

const char* alignedKindName(AlignedSegment::Kind kind) {
  switch (kind) {
  case Kind::kMatch: return "match";
  case Kind::kMismatch: return "mismatch";
  case Kind::kOnlyA: return "only_a";
  case Kind::kOnlyB: return "only_b";
  }
  return "?";
}

Alignment alignFull(std::span<const uint32_t> a, std::span<const uint32_t> b, const Scoring& s) {
  return finish(fullSegments(a, b, s), s, "full");
}

Alignment alignHirschberg(std::span<const uint32_t> a, std::span<const uint32_t> b,
                          const Scoring& s) {
  Segments out;
  hirschberg(a, b, 0, 0, s, out);
  return finish(out.take(), s, "hirschberg");
}

Alignment alignRuns(const std::vector<Run>& a, const std::vector<Run>& b, const Scoring& s) {
  const size_t p = a.size(), q = b.size();
  std::vector<uint64_t> NA(p + 1, 0), MB(q + 1, 0);
  for (size_t i = 0; i < p; ++i)
    NA[i + 1] = NA[i] + a[i].count;
  for (size_t j = 0; j < q; ++j)
    MB[j + 1] = MB[j] + b[j].count;
  const uint64_t N = NA[p], M = MB[q];
  // rows[i][x]: the table's row NA[i]; cols[j][y]: its column MB[j] (the blocks' edges).
  std::vector<std::vector<int64_t>> rows(p + 1, std::vector<int64_t>(M + 1, kMinus));
  std::vector<std::vector<int64_t>> cols(q + 1, std::vector<int64_t>(N + 1, kMinus));
  for (uint64_t x = 0; x <= M; ++x)
    rows[0][x] = static_cast<int64_t>(x) * s.gap;
  for (uint64_t y = 0; y <= N; ++y)
    cols[0][y] = static_cast<int64_t>(y) * s.gap;
  for (size_t i = 1; i <= p; ++i)
    rows[i][0] = static_cast<int64_t>(NA[i]) * s.gap;
  for (size_t j = 1; j <= q; ++j)
    cols[j][0] = static_cast<int64_t>(MB[j]) * s.gap;
  auto costOf = [&](size_t i, size_t j) {
    const int64_t c = a[i - 1].symbol == b[j - 1].symbol ? s.match : s.mismatch;
    return BlockCost{s.gap, std::max<int64_t>(0, c - 2 * s.gap)};
  };
  for (size_t i = 1; i <= p; ++i)
    for (size_t j = 1; j <= q; ++j) {
      const uint64_t h = a[i - 1].count, w = b[j - 1].count;
      const int64_t* top = &rows[i - 1][MB[j - 1]];
      const int64_t* left = &cols[j - 1][NA[i - 1]];
      int64_t* bottom = &rows[i][MB[j - 1]];
      int64_t* right = &cols[j][NA[i - 1]];
      const BlockCost cost = costOf(i, j);
      alongEdge(top, w, h, cost, bottom);
      acrossEdge(left, h, w, cost, bottom);
      alongEdge(left, h, w, cost, right);
      acrossEdge(top, w, h, cost, right);
    }
  // Traceback from edge to edge.
  std::vector<AlignedSegment> reversed;
  uint64_t Y = N, X = M;
  while (Y > 0 && X > 0) {
    const size_t i = static_cast<size_t>(std::lower_bound(NA.begin(), NA.end(), Y) - NA.begin());
    const size_t j = static_cast<size_t>(std::lower_bound(MB.begin(), MB.end(), X) - MB.begin());
    const uint64_t y = Y - NA[i - 1], x = X - MB[j - 1];
    const int64_t value = Y == NA[i] ? rows[i][X] : cols[j][Y];
    const int64_t* top = &rows[i - 1][MB[j - 1]];
    const int64_t* left = &cols[j - 1][NA[i - 1]];
    const BlockCost cost = costOf(i, j);
    uint64_t ey = 0, ex = 0; // the entry cell, in block coordinates
    bool found = false;
    for (uint64_t x0 = x + 1; x0-- > 0 && !found;)
      if (top[x0] + cost(y, x - x0) == value) ey = 0, ex = x0, found = true;
    for (uint64_t y0 = y + 1; y0-- > 1 && !found;)
      if (left[y0] + cost(y - y0, x) == value) ey = y0, ex = 0, found = true;
    if (!found) throw std::logic_error("alignRuns: no traceback from a block edge");
    const uint64_t dy = y - ey, dx = x - ex;
    // As many diagonals as pay; on a tie, matches are shown as matches, mismatches as gaps.
    const bool same = a[i - 1].symbol == b[j - 1].symbol;
    const int64_t saving = (same ? s.match : s.mismatch) - 2 * s.gap;
    const uint64_t diagonals = saving > 0 || (saving == 0 && same) ? std::min(dy, dx) : 0;
    const uint64_t Ye = NA[i - 1] + ey, Xe = MB[j - 1] + ex;
    // Forwards: diagonals, then the rest of A, then the rest of B; pushed in reverse.
    reversed.push_back({Kind::kOnlyB, dx - diagonals, Ye + dy, Xe + diagonals});
    reversed.push_back({Kind::kOnlyA, dy - diagonals, Ye + diagonals, Xe + diagonals});
    reversed.push_back({same ? Kind::kMatch : Kind::kMismatch, diagonals, Ye, Xe});
    Y = Ye;
    X = Xe;
  }
  if (Y > 0) reversed.push_back({Kind::kOnlyA, Y, 0, 0});
  if (X > 0) reversed.push_back({Kind::kOnlyB, X, 0, 0});
  Segments out;
  for (auto it = reversed.rbegin(); it != reversed.rend(); ++it)
    out.add(it->kind, it->length, it->a_begin, it->b_begin);
  Alignment result = finish(out.take(), s, "runs");
  if (result.score != rows[p][M]) throw std::logic_error("alignRuns: traceback lost the score");
  return result;
}

std::vector<uint32_t> expandRuns(const std::vector<Run>& runs) {
  std::vector<uint32_t> out;
  for (const Run& r : runs)
    out.insert(out.end(), r.count, r.symbol);
  return out;
}

Alignment align(const std::vector<Run>& a, const std::vector<Run>& b, const Scoring& s,
                const AlignmentLimits& limits) {
  uint64_t n = 0, m = 0;
  for (const Run& r : a)
    n += r.count;
  for (const Run& r : b)
    m += r.count;
  const long double cells = static_cast<long double>(n) * static_cast<long double>(m);
  const long double run_values = static_cast<long double>(a.size() + 1) * (m + 1) +
                                 static_cast<long double>(b.size() + 1) * (n + 1);
  // Blocks cost their perimeter: about runs(A) |B| + runs(B) |A| steps against |A| |B| cells.
  if (run_values <= limits.max_run_values && run_values < cells) return alignRuns(a, b, s);
  const auto ea = expandRuns(a), eb = expandRuns(b);
  if (cells <= limits.max_full_cells) return alignFull(ea, eb, s);
  if (cells <= limits.max_hirschberg_cells) return alignHirschberg(ea, eb, s);
  throw std::runtime_error("the two sequences are too long to align (" + std::to_string(n) +
                           " and " + std::to_string(m) + " symbols, " + std::to_string(a.size()) +
                           " and " + std::to_string(b.size()) + " runs); narrow them");
}

int64_t scoreOf(const Alignment& alignment, std::span<const uint32_t> a,
                std::span<const uint32_t> b, const Scoring& s) {
  uint64_t ai = 0, bi = 0;
  int64_t score = 0;
  for (const auto& seg : alignment.segments) {
    if (seg.a_begin != ai || seg.b_begin != bi) return kMinus;
    for (uint64_t k = 0; k < seg.length; ++k)
      switch (seg.kind) {
      case Kind::kMatch:
        if (ai >= a.size() || bi >= b.size() || a[ai] != b[bi]) return kMinus;
        score += s.match, ++ai, ++bi;
        break;
      case Kind::kMismatch:
        if (ai >= a.size() || bi >= b.size() || a[ai] == b[bi]) return kMinus;
        score += s.mismatch, ++ai, ++bi;
        break;
      case Kind::kOnlyA:
        if (ai >= a.size()) return kMinus;
        score += s.gap, ++ai;
        break;
      case Kind::kOnlyB:
        if (bi >= b.size()) return kMinus;
        score += s.gap, ++bi;
        break;
      }
  }
  return ai == a.size() && bi == b.size() ? score : kMinus;
}

} // namespace shapetrace::analyzer::summaries
