// The micro-benchmarks of the DRT paper (Sec. 5, Tables 1 and 2), regenerated: R_2 ... R_7 and
// their versions with dummy functions, R_200 ... R_6400. The paper describes them only in words;
// docs/explain.md "The paper's micro-benchmarks" says how these are built:
//
// - R_n has n functions f1..fn and `lines` clusters; each trace has an input size x (an integer in
//   [1, 100]), calls a set S of the functions (each 1 to 3 times) and runs in a time on its
//   cluster's line (slopes 1, 3, 6, 10, 15, 21; intercept 10 per cluster index), with Gaussian
//   noise of standard deviation 2% of the time plus 1.
// - The cluster depends on |S| only: cluster 0 calls none, the last cluster calls all n ("a cluster
//   which consists of inputs where all the functions were called"), the clusters between share
//   |S| in [1, n-1] in contiguous ranges (version #3 reverses their order). Separating "all called"
//   from the rest takes n predicates: the tree's height is about n, as in the paper's tables.
// - Versions of one R_n differ in their seed too (the generator's seed plus the version).
// - A trace first draws its cluster uniformly, then |S| uniformly in the cluster's range, then S.
// - R_M (M = 200 ... 6400) is the R_n of the same row of Table 2 plus M - n dummy functions that
//   do not influence the time: each called (1 to 3 times) in a trace with probability 5%.
// Used by tests/analyzer/drt_test.cpp and tests/bench/drt_bench.cpp.
#pragma once

#include "explain/drt.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace shapetrace::analyzer::drt {

struct MicroBenchmark {
  std::string name;
  uint32_t functions;     // n: functions that decide the cluster
  uint32_t lines;         // clusters (Table 1's L for DPDEBUGGER)
  uint32_t traces;        // #N
  uint32_t version;       // 1, 2, 3 (Table 1's #v)
  uint32_t all_functions; // #M: with the dummies
};

// Table 1's rows, then Table 2's.
inline const std::vector<MicroBenchmark>& paperMicroBenchmarks() {
  static const std::vector<MicroBenchmark> list = {
      {"R_2", 2, 3, 400, 1, 2},        {"R_3#1", 3, 2, 800, 1, 3},
      {"R_3#2", 3, 3, 800, 2, 3},      {"R_4#2", 4, 4, 1200, 2, 4},
      {"R_4#1", 4, 3, 1600, 1, 4},     {"R_4#3", 4, 3, 1600, 3, 4},
      {"R_5", 5, 3, 3200, 1, 5},       {"R_6", 6, 4, 6400, 1, 6},
      {"R_7", 7, 4, 12800, 1, 7},      {"R_200", 2, 3, 400, 1, 200},
      {"R_400#1", 3, 2, 800, 1, 400},  {"R_400#2", 3, 3, 800, 2, 400},
      {"R_600", 4, 4, 1200, 2, 600},   {"R_800#1", 4, 3, 1600, 1, 800},
      {"R_800#2", 4, 3, 1600, 3, 800}, {"R_1600", 5, 3, 3200, 1, 1600},
      {"R_3200", 6, 4, 6400, 1, 3200}, {"R_6400", 7, 4, 12800, 1, 6400},
  };
  return list;
}

struct GeneratedBenchmark {
  Points points;
  Features features;
  std::vector<uint32_t> truth; // each trace's cluster
};

// The range of |S| of cluster c: [first, last].
inline std::pair<uint32_t, uint32_t> calledRange(const MicroBenchmark& b, uint32_t c) {
  const uint32_t n = b.functions, lines = b.lines;
  if (c + 1 == lines)
    return {n, n};
  if (lines == 2)
    return {0, n - 1};
  if (c == 0)
    return {0, 0};
  // Clusters 1 .. lines-2 share [1, n-1].
  const uint32_t middle = lines - 2, span = n - 1;
  const uint32_t index = b.version == 3 ? middle - c : c - 1;
  const uint32_t first = 1 + span * index / middle, last = span * (index + 1) / middle;
  return {first, std::max(first, last)};
}

inline GeneratedBenchmark generateMicroBenchmark(const MicroBenchmark& b, uint64_t seed = 1) {
  static constexpr double kSlopes[] = {1, 3, 6, 10, 15, 21};
  std::mt19937_64 rng(seed + b.version);
  const auto below = [&rng](uint64_t n) { return static_cast<uint32_t>(rng() % n); };
  std::normal_distribution<double> noise(0.0, 1.0);
  GeneratedBenchmark out;
  out.points.inputs.resize(b.traces, 1);
  out.points.times.resize(b.traces);
  out.features.points = b.traces;
  for (uint32_t f = 0; f < b.all_functions; ++f)
    out.features.add("calls of " + std::string(f < b.functions ? "f" : "dummy") +
                     std::to_string(f < b.functions ? f + 1 : f + 1 - b.functions));
  std::vector<uint32_t> order(b.functions);
  for (uint32_t t = 0; t < b.traces; ++t) {
    const uint32_t c = below(b.lines);
    const auto [first, last] = calledRange(b, c);
    const uint32_t called = first + below(last - first + 1);
    std::iota(order.begin(), order.end(), 0u);
    for (uint32_t i = 0; i < called; ++i)
      std::swap(order[i], order[i + below(b.functions - i)]);
    std::sort(order.begin(), order.begin() + called);
    for (uint32_t i = 0; i < called; ++i)
      out.features.set(order[i], t, 1 + below(3));
    const double x = 1 + below(100);
    const double time = kSlopes[c] * x + 10.0 * c;
    out.points.inputs(t, 0) = x;
    out.points.times(t) = time + noise(rng) * (0.02 * time + 1);
    out.truth.push_back(c);
  }
  for (uint32_t f = b.functions; f < b.all_functions; ++f)
    for (uint32_t t = 0; t < b.traces; ++t)
      if (below(100) < 5)
        out.features.set(f, t, 1 + below(3));
  return out;
}

// The fraction of points whose cluster matches the truth under the best matching of cluster
// labels (every permutation: K is small).
inline double agreementWithTruth(const std::vector<uint32_t>& labels,
                                 const std::vector<uint32_t>& truth, uint32_t k) {
  std::vector<uint32_t> perm(k);
  std::iota(perm.begin(), perm.end(), 0u);
  size_t best = 0;
  do {
    size_t same = 0;
    for (size_t p = 0; p < labels.size(); ++p)
      same += labels[p] < k && perm[labels[p]] == truth[p] ? 1 : 0;
    best = std::max(best, same);
  } while (std::next_permutation(perm.begin(), perm.end()));
  return labels.empty() ? 1.0 : static_cast<double>(best) / static_cast<double>(labels.size());
}

} // namespace shapetrace::analyzer::drt
