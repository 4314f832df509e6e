// Discriminant regression trees (Tizpaz-Niari, Cerny, Chang, Trivedi: "Differential Performance
// Debugging with Discriminant Regression Trees"): data points with input variables X, a
// performance variable y (a duration) and auxiliary variables Z (call counts, shape counts) are
// clustered into K linear functional clusters over (X, y); a decision tree over Z then says which
// internals separate the clusters.
//
// - K-linear clustering: Algorithm 2 (lines as centroids, a point changes cluster only on a strict
//   improvement), with restarts keeping the least residual sum of squares (Sec. 4.1).
// - Spectral clustering with the alignment kernel (Sec. 4.2): the exact kernel (cubic) and the
//   quadratic approximation of Algorithm 3 (Appendix A); the similarity matrix's normalized
//   eigenvectors (Ng, Jordan, Weiss) are clustered by K-means.
// - Algorithm 1: the smallest K whose clustering's mean squared error is within a bound.
// - CART (Gini impurity, binary splits "Z_v > t") with k-fold cross-validated accuracy.
// Every random choice draws from a seeded generator: the same input gives the same result.
// Where the paper is silent, the choice is written in docs/explain.md.
#pragma once

#include <Eigen/Dense>
#include <cstdint>
#include <string>
#include <vector>

namespace shapetrace::analyzer::drt {

// The (X, y) part of the data points: one row of `inputs` per point.
struct Points {
  Eigen::MatrixXd inputs; // N x n
  Eigen::VectorXd times;  // N
  size_t size() const { return static_cast<size_t>(times.size()); }
};

// f(x) = slope . x + intercept
struct Line {
  Eigen::VectorXd slope;
  double intercept = 0;
  // x: a row of inputs (any Eigen vector expression of the inputs' size).
  template <typename Row> double at(const Eigen::MatrixBase<Row>& x) const {
    return x.dot(slope) + intercept;
  }
};

struct LinearClusters {
  std::vector<uint32_t> labels; // per point, in [0, lines.size())
  std::vector<Line> lines;
  // Points left out of the fits (trimmed K-linear; empty: none). They keep their nearest line's
  // label.
  std::vector<bool> trimmed;
  double rss = 0; // residual sum of squares of every fitted point to its own cluster's line
  double mse() const; // rss per fitted point
  size_t points = 0;
  size_t fitted = 0; // points not trimmed
  bool isTrimmed(size_t p) const { return !trimmed.empty() && trimmed[p]; }
};

// The least-squares line of the points `members` (QR with column pivoting, so that a cluster whose
// inputs are all equal gets the line of slope 0 through their mean instead of a failure).
Line fitLine(const Points& points, const std::vector<uint32_t>& members);
// Lines refitted to a labelling (a cluster without points keeps `previous`'s line when given, else
// the line through the overall mean), with the RSS.
LinearClusters fitLabels(const Points& points, std::vector<uint32_t> labels, uint32_t k,
                         const std::vector<Line>* previous = nullptr,
                         std::vector<bool> trimmed = {});
// The `count` points farthest from their own cluster's line.
std::vector<bool> worstFitted(const Points& points, const std::vector<uint32_t>& labels,
                              const std::vector<Line>& lines, size_t count);

struct KLinearOptions {
  uint32_t restarts = 20;
  uint64_t seed = 1;
  uint32_t max_iterations = 1000; // a safeguard: Algorithm 2 terminates anyway (strict improvement)
  // Beyond the paper: the fraction of points farthest from their line left out of each refit
  // (trimmed K-means, Cuesta-Albertos et al.), so that a few calls slowed by the scheduler do not
  // pull a line to themselves. 0: Algorithm 2 exactly.
  double trim = 0;
};

// Algorithm 2 from `initial` (labels in [0, k)): fit, reassign with the strict-improvement rule
// (1), until the partition no longer changes.
LinearClusters kLinearFrom(const Points& points, std::vector<uint32_t> initial, uint32_t k,
                           uint32_t max_iterations = 1000, double trim = 0);
// Algorithm 2 with `restarts` initial partitions, each the assignment of the points to the nearest
// of k lines through random pairs of points (the seeding Sec. 4.1 suggests); the least RSS wins.
LinearClusters kLinear(const Points& points, uint32_t k, const KLinearOptions& options = {});

// The alignment kernel's parameters. Inputs and times are compared after scaling each so that its
// 1st percentile is 0 and its 99th is 1, so that `delta` is a fraction of the data's extent.
struct AlignmentOptions {
  // Defaults chosen on the paper's micro-benchmarks (docs/explain.md): they cluster every row of
  // Table 1 with both kernels.
  double delta = 0.005;    // the tube's half-width around a line, in the scaled time
  double scale = 0.01;     // sigma: the similarity is e^(-alpha / sigma) (the paper's text: 1)
  uint32_t neighbors = 40; // Algorithm 3's a: the nearest points a pair is drawn from...
  uint32_t draws = 40;     // ...and how many draws per point (repeats are skipped)
  uint64_t seed = 1;
};

// Dense similarity matrices e^(-alpha) (Sec. 4.2). Exact: alpha(i, j) = 0 when i == j, 2^-|R_ij|
// when the tube of the line through i and j holds |R_ij| >= 1 other points, infinity (similarity
// 0) otherwise: O(N^3). Approximate: Algorithm 3 line by line: O(N * draws * N).
Eigen::MatrixXd alignmentSimilarityExact(const Points& points, const AlignmentOptions& options);
Eigen::MatrixXd alignmentSimilarityApprox(const Points& points, const AlignmentOptions& options);

enum class Kernel : uint8_t { kExact, kApproximate };

struct SpectralOptions {
  Kernel kernel = Kernel::kApproximate;
  AlignmentOptions alignment;
  // Points the eigenvectors are computed on (a seeded random sample beyond): the dense
  // eigendecomposition is cubic. The other points join the cluster whose fitted line is nearest.
  uint32_t max_points = 1500;
  uint32_t kmeans_restarts = 10;
  double trim = 0; // the final lines leave out this fraction of points farthest from them
  uint64_t seed = 1;
};

// Spectral clustering of the similarity matrix W: the k leading eigenvectors of
// D^-1/2 W D^-1/2, rows normalized to unit length, clustered by K-means (k-means++ seeding,
// restarts, least within-cluster sum of squares).
std::vector<uint32_t> spectralLabels(const Eigen::MatrixXd& similarity, uint32_t k,
                                     uint32_t kmeans_restarts, uint64_t seed);
// The pipeline on points: kernel, labels, a line fitted per cluster.
LinearClusters spectral(const Points& points, uint32_t k, const SpectralOptions& options = {});

enum class Method : uint8_t { kKLinear, kSpectral };
const char* methodName(Method method);

struct ClusterSearch {
  Method method = Method::kKLinear;
  KLinearOptions klinear;
  SpectralOptions spectral;
};
LinearClusters clusterPoints(const Points& points, uint32_t k, const ClusterSearch& search);

// Algorithm 1, step 2-3: the clustering with the smallest K in [1, max_k] whose mean squared error
// is at most `max_mse`; `found` is false (and the result the max_k clustering) when none is.
// Beside it, the "elbow": the clustering whose K cut the RMS error the most relative to K - 1 (a
// real program's calls vary around every line, preempted ones most, so that often no K is within
// the bound while one more line still explains most of what the last left: docs/explain.md).
struct SmallestK {
  LinearClusters clusters;
  bool found = false;
  std::vector<double> mse_by_k; // the error of each K tried, from 1
  LinearClusters elbow;         // when K > 1 was tried: the K whose line cut the RMS error most
  double elbow_cut = 0;         // by this fraction of the RMS error at K - 1
};
SmallestK smallestK(const Points& points, uint32_t max_k, double max_mse,
                    const ClusterSearch& search);

// The auxiliary variables, stored by column and sparsely (most functions are not called under most
// data points): a value not listed is 0.
struct Features {
  std::vector<std::string> names; // per feature: what a predicate prints ("calls of parseHeader")
  struct Entry {
    uint32_t point;
    double value;
  };
  std::vector<std::vector<Entry>> columns; // per feature, points ascending
  size_t points = 0;

  uint32_t add(std::string name);                           // a new, all-zero feature
  void set(uint32_t feature, uint32_t point, double value); // points in ascending order per feature
  double value(uint32_t feature, uint32_t point) const;
};

struct TreeOptions {
  uint32_t max_depth = 8;
  uint32_t min_leaf = 5; // points in each side of a split
  // A split must lower the tree's impurity (each node's Gini impurity weighted by its share of the
  // points) by this fraction of the root's impurity at least, like rpart's complexity parameter cp
  // (whose default, 0.01, stops R_7's tree before its seventh predicate). It keeps the tree from
  // chasing the few points a clustering misplaced (docs/explain.md).
  double min_gain = 0.001;
  uint32_t folds = 10;
  uint64_t seed = 1;
};

// A binary tree: an inner node sends a point to `above` when feature > threshold, else `below`.
struct TreeNode {
  bool leaf = true;
  uint32_t feature = 0;
  double threshold = 0;
  uint32_t below = 0, above = 0;      // node indices
  std::vector<uint32_t> class_counts; // training points per class in this node
  uint32_t label = 0;                 // the majority class (ties: the smallest)
};

struct Tree {
  std::vector<TreeNode> nodes; // nodes[0] is the root
  uint32_t height = 0;         // predicates on the longest root-to-leaf path (a lone leaf: 0)
  uint32_t predict(const Features& features, uint32_t point) const;
  size_t leaves() const;
};

// CART's greedy growth on the points `rows`: the split of least weighted Gini impurity over every
// feature and every threshold between consecutive distinct values, while it lowers the impurity by
// min_gain at least, the node is less deep than max_depth, and each side keeps min_leaf points.
Tree growTree(const Features& features, const std::vector<uint32_t>& labels, uint32_t classes,
              const std::vector<uint32_t>& rows, const TreeOptions& options);

struct Explanation {
  Tree tree;       // grown on every point
  double accuracy; // k-fold cross-validated (folds from a seeded shuffle); 1 with fewer points
  // Per cluster, the fraction of its points predicted right, cross-validated as `accuracy` (1 for
  // a cluster without points). A tree that puts every point in a cluster holding 99.9% of them is
  // 99.9% accurate, and 0% on the others: this says so.
  std::vector<double> cluster_accuracy;
  std::vector<uint64_t> cluster_points; // per cluster, its points
  // The mean of cluster_accuracy over the clusters with points: every cluster counts alike.
  double meanClusterAccuracy() const;
};
Explanation explainClusters(const Features& features, const std::vector<uint32_t>& labels,
                            uint32_t classes, const TreeOptions& options);

} // namespace shapetrace::analyzer::drt
