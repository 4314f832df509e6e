// Discriminant regression trees (explain/drt.h): K-linear against a brute-force search, the
// alignment kernel's values on a worked example, spectral clustering on separable data, CART on
// data whose separating predicate is known, and the paper's micro-benchmarks (Tables 1 and 2,
// regenerated as explain/microbenchmarks.h says).
#include "explain/drt.h"
#include "explain/microbenchmarks.h"

#include <cmath>
#include <gtest/gtest.h>
#include <random>

namespace shapetrace::analyzer::drt {
namespace {

Points pointsOf(const std::vector<std::pair<double, double>>& xy) {
  Points p;
  p.inputs.resize(static_cast<Eigen::Index>(xy.size()), 1);
  p.times.resize(static_cast<Eigen::Index>(xy.size()));
  for (size_t i = 0; i < xy.size(); ++i) {
    p.inputs(static_cast<Eigen::Index>(i), 0) = xy[i].first;
    p.times(static_cast<Eigen::Index>(i)) = xy[i].second;
  }
  return p;
}

// Points on `lines` (slope, intercept) at random inputs in [1, 100], noise of 1% plus 0.5.
Points onLines(const std::vector<std::pair<double, double>>& lines, size_t per_line,
               std::vector<uint32_t>& truth, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> input(1, 100);
  std::normal_distribution<double> noise;
  std::vector<std::pair<double, double>> xy;
  for (size_t i = 0; i < per_line * lines.size(); ++i) {
    const auto c = static_cast<uint32_t>(i % lines.size());
    const double x = input(rng), y = lines[c].first * x + lines[c].second;
    xy.emplace_back(x, y + noise(rng) * (0.01 * y + 0.5));
    truth.push_back(c);
  }
  return pointsOf(xy);
}

TEST(DrtTest, FitLineIsLeastSquares) {
  const Points p = pointsOf({{1, 3}, {2, 5}, {3, 7}, {4, 9}});
  const Line line = fitLine(p, {0, 1, 2, 3});
  EXPECT_NEAR(line.slope(0), 2.0, 1e-12);
  EXPECT_NEAR(line.intercept, 1.0, 1e-12);
  // Equal inputs: slope 0 through the mean, not a failure.
  const Line flat = fitLine(pointsOf({{5, 1}, {5, 3}}), {0, 1});
  EXPECT_NEAR(flat.slope(0), 0.0, 1e-12);
  EXPECT_NEAR(flat.intercept, 2.0, 1e-12);
}

// Every labelling of a few points: the least RSS. K-linear with restarts must reach it.
double bruteForceRss(const Points& p, uint32_t k) {
  const size_t n = p.size();
  double best = INFINITY;
  std::vector<uint32_t> labels(n, 0);
  while (true) {
    best = std::min(best, fitLabels(p, labels, k).rss);
    size_t i = 0;
    while (i < n && ++labels[i] == k)
      labels[i++] = 0;
    if (i == n)
      break;
  }
  return best;
}

TEST(DrtTest, KLinearReachesTheBruteForceOptimumOnSmallInputs) {
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    std::vector<uint32_t> truth;
    const Points p = onLines({{1, 0}, {4, 10}}, 5, truth, seed); // 10 points, 2^10 labellings
    const double optimum = bruteForceRss(p, 2);
    EXPECT_NEAR(kLinear(p, 2).rss, optimum, 1e-9 * (1 + optimum)) << "seed " << seed;
  }
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    std::vector<uint32_t> truth;
    const Points p = onLines({{1, 0}, {3, 5}, {8, -5}}, 3, truth, seed); // 9 points, 3^9
    const double optimum = bruteForceRss(p, 3);
    // Three lines through three points each have many local optima: more restarts.
    KLinearOptions options;
    options.restarts = 200;
    EXPECT_NEAR(kLinear(p, 3, options).rss, optimum, 1e-9 * (1 + optimum)) << "seed " << seed;
  }
}

TEST(DrtTest, KLinearMovesPointsOnlyOnStrictImprovement) {
  // Two identical lines of points: every residual ties between the clusters' lines once both fit
  // the same points, so no point moves and the initial partition is kept (condition (1)).
  const Points p = pointsOf({{1, 1}, {2, 2}, {3, 3}, {4, 4}, {5, 5}, {6, 6}});
  const LinearClusters c = kLinearFrom(p, {0, 1, 0, 1, 0, 1}, 2);
  EXPECT_EQ(c.labels, (std::vector<uint32_t>{0, 1, 0, 1, 0, 1}));
  EXPECT_NEAR(c.rss, 0.0, 1e-18);
}

TEST(DrtTest, KLinearSeparatesLines) {
  std::vector<uint32_t> truth;
  const Points p = onLines({{1, 0}, {5, 0}, {12, 40}}, 200, truth, 7);
  const LinearClusters c = kLinear(p, 3);
  EXPECT_GE(agreementWithTruth(c.labels, truth, 3), 0.97);
}

// The worked example: four points on y = x and one far off it.
TEST(DrtTest, ExactAlignmentKernelValues) {
  const Points p = pointsOf({{1, 1}, {2, 2}, {3, 3}, {4, 4}, {2, 10}});
  AlignmentOptions options;
  options.delta = 0.01;
  options.scale = 1; // the paper's e^-alpha
  const Eigen::MatrixXd w = alignmentSimilarityExact(p, options);
  EXPECT_DOUBLE_EQ(w(0, 0), 1.0);             // alpha 0
  EXPECT_DOUBLE_EQ(w(0, 1), std::exp(-0.25)); // R = {2, 3}: alpha 2^-2
  EXPECT_DOUBLE_EQ(w(1, 3), std::exp(-0.25));
  EXPECT_DOUBLE_EQ(w(0, 4), 0.0); // R empty: alpha infinite
  EXPECT_DOUBLE_EQ(w(4, 0), 0.0);
  // A wider tube: the line y = x still holds the same two.
  options.delta = 0.2;
  const Eigen::MatrixXd wide = alignmentSimilarityExact(p, options);
  EXPECT_DOUBLE_EQ(wide(0, 1), std::exp(-0.25));
  // The scale divides alpha: e^(-alpha / sigma).
  options.scale = 0.5;
  EXPECT_DOUBLE_EQ(alignmentSimilarityExact(p, options)(0, 1), std::exp(-0.5));
}

TEST(DrtTest, ApproximateAlignmentKernelFollowsAlgorithm3) {
  const Points p = pointsOf({{1, 1}, {2, 2}, {3, 3}, {4, 4}, {2, 10}});
  AlignmentOptions options;
  options.delta = 0.01;
  options.scale = 1;
  options.neighbors = 4;
  options.draws = 200; // every pair is drawn
  const Eigen::MatrixXd w = alignmentSimilarityApprox(p, options);
  EXPECT_DOUBLE_EQ(w(0, 0), 1.0);             // W[i][i] = 0
  EXPECT_DOUBLE_EQ(w(0, 1), std::exp(-0.25)); // 1 / (2 |R|), |R| = 2
  EXPECT_DOUBLE_EQ(w(0, 4), 0.0);             // |R| = 0: Max_Int
  EXPECT_TRUE(w.isApprox(w.transpose()));
  // One draw per point from one neighbour: unvisited pairs keep 2.0, e^-2.
  options.neighbors = 1;
  options.draws = 1;
  const Eigen::MatrixXd sparse = alignmentSimilarityApprox(p, options);
  int unvisited = 0;
  for (Eigen::Index i = 0; i < 5; ++i)
    for (Eigen::Index j = 0; j < 5; ++j)
      unvisited += std::abs(sparse(i, j) - std::exp(-2.0)) < 1e-12 ? 1 : 0;
  EXPECT_GT(unvisited, 0);
}

TEST(DrtTest, SpectralSeparatesLinesWithBothKernels) {
  std::vector<uint32_t> truth;
  const Points p = onLines({{1, 0}, {6, 0}}, 150, truth, 3);
  SpectralOptions exact;
  exact.kernel = Kernel::kExact;
  EXPECT_GE(agreementWithTruth(spectral(p, 2, exact).labels, truth, 2), 0.95);
  SpectralOptions approximate;
  EXPECT_GE(agreementWithTruth(spectral(p, 2, approximate).labels, truth, 2), 0.95);
}

TEST(DrtTest, SpectralOnASampleAssignsTheRestToTheNearestLine) {
  std::vector<uint32_t> truth;
  const Points p = onLines({{1, 0}, {6, 0}, {15, 0}}, 400, truth, 5);
  SpectralOptions options;
  options.max_points = 300;
  const LinearClusters c = spectral(p, 3, options);
  EXPECT_EQ(c.labels.size(), p.size());
  EXPECT_GE(agreementWithTruth(c.labels, truth, 3), 0.95);
}

TEST(DrtTest, FewerPointsThanClustersIsAnError) {
  const Points p = pointsOf({{1, 1}, {2, 2}});
  EXPECT_THROW(kLinear(p, 3), std::invalid_argument);
  EXPECT_THROW(spectral(p, 3), std::invalid_argument);
}

TEST(DrtTest, SmallestKStopsAtTheFirstKWithinTheBound) {
  std::vector<uint32_t> truth;
  const Points p = onLines({{1, 0}, {5, 0}, {12, 40}}, 100, truth, 11);
  ClusterSearch search;
  const SmallestK s = smallestK(p, 6, std::pow(0.1 * p.times.mean(), 2), search);
  ASSERT_TRUE(s.found);
  EXPECT_EQ(s.clusters.lines.size(), 3u);
  EXPECT_EQ(s.mse_by_k.size(), 3u);
  EXPECT_GT(s.mse_by_k[1], s.mse_by_k[2]);
  const SmallestK none = smallestK(p, 2, 1e-9, search);
  EXPECT_FALSE(none.found);
  EXPECT_EQ(none.mse_by_k.size(), 2u);
}

// Two flat lines (100 and 1000) with noise of 30% of the larger: no K is within 10% of the mean
// time, and the second line cuts the error most (by more than half; a third line only splits noise).
TEST(DrtTest, WithNoKWithinTheBoundTheElbowIsTheLineThatCutTheErrorMost) {
  std::mt19937_64 rng(3);
  std::normal_distribution<double> noise(0, 300);
  std::vector<std::pair<double, double>> xy;
  for (int i = 0; i < 400; ++i)
    xy.emplace_back(1 + i % 50, (i % 2 ? 1000 : 100) + (i % 2 ? noise(rng) : noise(rng) / 10));
  const Points p = pointsOf(xy);
  ClusterSearch search;
  search.klinear.trim = 0;
  const SmallestK s = smallestK(p, 4, std::pow(0.1 * p.times.mean(), 2), search);
  EXPECT_FALSE(s.found);
  ASSERT_EQ(s.mse_by_k.size(), 4u);
  ASSERT_EQ(s.elbow.lines.size(), 2u);
  EXPECT_GT(s.elbow_cut, 0.5);
  EXPECT_DOUBLE_EQ(s.elbow_cut, 1 - std::sqrt(s.mse_by_k[1] / s.mse_by_k[0]));
  for (uint32_t k = 2; k < 4; ++k)
    EXPECT_LT(1 - std::sqrt(s.mse_by_k[k] / s.mse_by_k[k - 1]), s.elbow_cut);
  const double low = std::min(s.elbow.lines[0].intercept, s.elbow.lines[1].intercept);
  const double high = std::max(s.elbow.lines[0].intercept, s.elbow.lines[1].intercept);
  EXPECT_NEAR(low, 100, 60);
  EXPECT_NEAR(high, 1000, 150);
}

// Times that are one line plus normal noise: two lines split the noise and cut the error by about
// 1 - sqrt(1 - 2/pi) = 40%, not by half.
TEST(DrtTest, NoiseAloneCutsTheErrorByLessThanHalf) {
  std::mt19937_64 rng(9);
  std::normal_distribution<double> noise(0, 100);
  std::vector<std::pair<double, double>> xy;
  for (int i = 0; i < 2000; ++i)
    xy.emplace_back(1 + i % 50, 1000 + noise(rng));
  ClusterSearch search;
  search.klinear.trim = 0;
  const SmallestK s = smallestK(pointsOf(xy), 3, 1e-9, search);
  EXPECT_FALSE(s.found);
  EXPECT_NEAR(s.elbow_cut, 0.40, 0.06);
}

// Labels decided by "f2 > 3" (f1, f3: noise): the root says exactly that.
TEST(DrtTest, CartFindsAKnownPredicate) {
  std::mt19937_64 rng(5);
  Features features;
  for (const char* name : {"calls of f1", "calls of f2", "calls of f3"})
    features.add(name);
  std::vector<uint32_t> labels;
  for (uint32_t p = 0; p < 300; ++p) {
    const auto f2 = static_cast<double>(rng() % 8);
    features.set(0, p, static_cast<double>(rng() % 8));
    features.set(1, p, f2);
    features.set(2, p, static_cast<double>(rng() % 8));
    labels.push_back(f2 > 3 ? 1 : 0);
  }
  const Explanation e = explainClusters(features, labels, 2, {});
  ASSERT_FALSE(e.tree.nodes[0].leaf);
  EXPECT_EQ(e.tree.nodes[0].feature, 1u);
  EXPECT_EQ(e.tree.nodes[0].threshold, 3.0);
  EXPECT_EQ(e.tree.height, 1u);
  EXPECT_EQ(e.tree.leaves(), 2u);
  EXPECT_DOUBLE_EQ(e.accuracy, 1.0);
}

// A tree that sends every point to the large cluster is right on 95 points of 100 and wrong on
// every point of the small one: the per-cluster accuracy says so, and their mean is 50%. A cluster
// without points counts in neither.
TEST(DrtTest, AccuracyCountsEachCluster) {
  Features features;
  features.add("calls of f"); // never called: nothing separates the clusters
  std::vector<uint32_t> labels(100, 0);
  for (uint32_t p = 0; p < 5; ++p)
    labels[p * 20] = 1;
  features.points = labels.size();
  const Explanation e = explainClusters(features, labels, 3, {});
  EXPECT_EQ(e.tree.leaves(), 1u);
  EXPECT_DOUBLE_EQ(e.accuracy, 0.95);
  EXPECT_EQ(e.cluster_points, (std::vector<uint64_t>{95, 5, 0}));
  EXPECT_EQ(e.cluster_accuracy, (std::vector<double>{1.0, 0.0, 1.0}));
  EXPECT_DOUBLE_EQ(e.meanClusterAccuracy(), 0.5);
}

// A conjunction "f1 > 0 and f3 > 1" needs two levels.
TEST(DrtTest, CartLearnsAConjunction) {
  std::mt19937_64 rng(9);
  Features features;
  for (const char* name : {"calls of f1", "calls of f2", "calls of f3"})
    features.add(name);
  std::vector<uint32_t> labels;
  for (uint32_t p = 0; p < 400; ++p) {
    const auto f1 = static_cast<double>(rng() % 2), f3 = static_cast<double>(rng() % 4);
    features.set(0, p, f1);
    features.set(1, p, static_cast<double>(rng() % 5));
    features.set(2, p, f3);
    labels.push_back(f1 > 0 && f3 > 1 ? 1 : 0);
  }
  const Explanation e = explainClusters(features, labels, 2, {});
  EXPECT_EQ(e.tree.height, 2u);
  EXPECT_EQ(e.tree.leaves(), 3u);
  EXPECT_DOUBLE_EQ(e.accuracy, 1.0);
  for (uint32_t p = 0; p < 400; ++p)
    EXPECT_EQ(e.tree.predict(features, p), labels[p]);
}

TEST(DrtTest, CartRespectsMinLeafAndMaxDepth) {
  Features features;
  features.add("calls of f");
  std::vector<uint32_t> labels;
  for (uint32_t p = 0; p < 100; ++p) {
    features.set(0, p, p);
    labels.push_back(p < 3 ? 1 : 0); // 3 points on one side
  }
  // With 5 points a side at least, the best split keeps 0..4 below (3 of class 1, 2 of class 0);
  // its 5 points cannot be split again.
  TreeOptions options;
  options.min_leaf = 5;
  Tree tree = explainClusters(features, labels, 2, options).tree;
  EXPECT_EQ(tree.nodes[0].threshold, 4.0);
  EXPECT_EQ(tree.height, 1u);
  options.min_leaf = 1;
  tree = explainClusters(features, labels, 2, options).tree;
  EXPECT_EQ(tree.nodes[0].threshold, 2.0);
  EXPECT_EQ(tree.leaves(), 2u);
  options.max_depth = 0;
  EXPECT_EQ(explainClusters(features, labels, 2, options).tree.height, 0u);
}

TEST(DrtTest, SameInputSameResult) {
  const GeneratedBenchmark b = generateMicroBenchmark(paperMicroBenchmarks()[4]);
  const LinearClusters one = kLinear(b.points, 3), two = kLinear(b.points, 3);
  EXPECT_EQ(one.labels, two.labels);
  EXPECT_EQ(explainClusters(b.features, one.labels, 3, {}).accuracy,
            explainClusters(b.features, two.labels, 3, {}).accuracy);
}

// The paper's bound on error for Algorithm 1 is not given; ours: RMS error within 10% of the mean
// time (docs/explain.md), the command's default.
double defaultBound(const Points& p) {
  return std::pow(0.1 * p.times.mean(), 2);
}

// Table 1 and Table 2 with K-linear: Algorithm 1 finds the benchmark's number of lines, the
// clusters are the generator's (up to labels), the tree is as accurate as the paper's (95% to
// 100%) and about n predicates high (the paper's H).
TEST(DrtTest, PaperMicroBenchmarksWithKLinear) {
  for (const MicroBenchmark& bench : paperMicroBenchmarks()) {
    if (bench.all_functions >= 3200)
      continue; // R_3200, R_6400: tests/bench/drt_bench.cpp
    SCOPED_TRACE(bench.name);
    const GeneratedBenchmark b = generateMicroBenchmark(bench);
    ClusterSearch search;
    const SmallestK found = smallestK(b.points, 6, defaultBound(b.points), search);
    ASSERT_TRUE(found.found);
    ASSERT_EQ(found.clusters.lines.size(), bench.lines);
    EXPECT_GE(agreementWithTruth(found.clusters.labels, b.truth, bench.lines), 0.95);
    const Explanation e = explainClusters(b.features, found.clusters.labels, bench.lines, {});
    EXPECT_GE(e.accuracy, 0.95);
    EXPECT_GE(e.tree.height, bench.functions - 1);
    EXPECT_LE(e.tree.height, bench.functions + 2);
    // No predicate names a dummy function.
    for (const TreeNode& node : e.tree.nodes)
      if (!node.leaf)
        EXPECT_LT(node.feature, bench.functions) << b.features.names[node.feature];
  }
}

// Table 1 with spectral clustering (the approximate kernel and its default scales): the paper's
// accuracy is 95.5% to 100%, its heights n.
TEST(DrtTest, PaperMicroBenchmarksWithSpectral) {
  for (const MicroBenchmark& bench : paperMicroBenchmarks()) {
    if (bench.all_functions != bench.functions)
      continue;
    SCOPED_TRACE(bench.name);
    const GeneratedBenchmark b = generateMicroBenchmark(bench);
    SpectralOptions options; // the default kernel and scale, on fewer points (a unit test's time)
    options.max_points = 800;
    const LinearClusters c = spectral(b.points, bench.lines, options);
    EXPECT_GE(agreementWithTruth(c.labels, b.truth, bench.lines), 0.97);
    const Explanation e = explainClusters(b.features, c.labels, bench.lines, {});
    EXPECT_GE(e.accuracy, 0.95);
    EXPECT_GE(e.tree.height, bench.functions - 1);
    EXPECT_LE(e.tree.height, bench.functions + 2);
  }
}

} // namespace
} // namespace shapetrace::analyzer::drt
