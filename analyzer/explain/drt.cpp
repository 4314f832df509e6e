// Discriminant regression trees: linear functional clustering and CART (drt.h).
#include "explain/drt.h"

#include <Eigen/Eigenvalues>
#include <Eigen/QR>
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <stdexcept>

namespace shapetrace::analyzer::drt {
namespace {

// Uniform integer in [0, n) from the generator (std::uniform_int_distribution's output is not
// specified across standard libraries; this one is, so results are the same everywhere).
uint32_t uniformBelow(std::mt19937_64& rng, uint64_t n) {
  return static_cast<uint32_t>(rng() % n);
}

// The constant line through the mean time: what a cluster with no points gets.
Line meanLine(const Points& points) {
  Line line;
  line.slope = Eigen::VectorXd::Zero(points.inputs.cols());
  line.intercept = points.size() == 0 ? 0.0 : points.times.mean();
  return line;
}

} // namespace

double LinearClusters::mse() const {
  return fitted == 0 ? 0.0 : rss / static_cast<double>(fitted);
}

// Centred least squares with the minimum-norm solution: equal inputs give slope 0 through the mean.
Line fitLine(const Points& points, const std::vector<uint32_t>& members) {
  if (members.empty())
    return meanLine(points);
  const Eigen::Index n = points.inputs.cols();
  const auto m = static_cast<Eigen::Index>(members.size());
  Eigen::MatrixXd x(m, n);
  Eigen::VectorXd y(m);
  for (Eigen::Index r = 0; r < m; ++r) {
    x.row(r) = points.inputs.row(members[r]);
    y(r) = points.times(members[r]);
  }
  const Eigen::RowVectorXd x_mean = x.colwise().mean();
  const double y_mean = y.mean();
  x.rowwise() -= x_mean;
  y.array() -= y_mean;
  Line line;
  line.slope = x.completeOrthogonalDecomposition().solve(y);
  line.intercept = y_mean - x_mean.dot(line.slope);
  return line;
}

LinearClusters fitLabels(const Points& points, std::vector<uint32_t> labels, uint32_t k,
                         const std::vector<Line>* previous, std::vector<bool> trimmed) {
  std::vector<std::vector<uint32_t>> members(k);
  for (uint32_t p = 0; p < labels.size(); ++p)
    if (trimmed.empty() || !trimmed[p])
      members[labels[p]].push_back(p);
  LinearClusters out;
  out.points = points.size();
  for (uint32_t c = 0; c < k; ++c) {
    if (members[c].empty() && previous != nullptr)
      out.lines.push_back((*previous)[c]);
    else
      out.lines.push_back(fitLine(points, members[c]));
  }
  out.fitted = 0;
  for (uint32_t p = 0; p < labels.size(); ++p) {
    if (!trimmed.empty() && trimmed[p])
      continue;
    const double r = points.times(p) - out.lines[labels[p]].at(points.inputs.row(p));
    out.rss += r * r;
    ++out.fitted;
  }
  out.labels = std::move(labels);
  out.trimmed = std::move(trimmed);
  return out;
}

std::vector<bool> worstFitted(const Points& points, const std::vector<uint32_t>& labels,
                              const std::vector<Line>& lines, size_t count) {
  std::vector<bool> out(points.size(), false);
  if (count == 0)
    return out;
  std::vector<std::pair<double, uint32_t>> residuals;
  for (uint32_t p = 0; p < labels.size(); ++p) {
    const double r = points.times(p) - lines[labels[p]].at(points.inputs.row(p));
    residuals.emplace_back(r * r, p);
  }
  count = std::min(count, residuals.size());
  // The largest first; ties by the point's index, so the choice is the same everywhere.
  std::nth_element(residuals.begin(), residuals.begin() + static_cast<std::ptrdiff_t>(count - 1),
                   residuals.end(), std::greater<>());
  for (size_t i = 0; i < count; ++i)
    out[residuals[i].second] = true;
  return out;
}

LinearClusters kLinearFrom(const Points& points, std::vector<uint32_t> initial, uint32_t k,
                           uint32_t max_iterations, double trim) {
  const auto trim_count = static_cast<size_t>(trim * static_cast<double>(points.size()));
  LinearClusters current = fitLabels(points, std::move(initial), k);
  if (trim_count > 0)
    current = fitLabels(points, current.labels, k, &current.lines,
                        worstFitted(points, current.labels, current.lines, trim_count));
  for (uint32_t iteration = 0; iteration < max_iterations; ++iteration) {
    std::vector<uint32_t> next = current.labels;
    bool changed = false;
    for (size_t p = 0; p < points.size(); ++p) {
      const auto x = points.inputs.row(static_cast<Eigen::Index>(p));
      const auto squared = [&](uint32_t c) {
        const double r = points.times(p) - current.lines[c].at(x);
        return r * r;
      };
      // Condition (1): a point leaves its cluster only for a strictly smaller residual.
      uint32_t best = current.labels[p];
      double best_value = squared(best);
      for (uint32_t h = 0; h < k; ++h) {
        const double value = squared(h);
        if (value < best_value) {
          best = h;
          best_value = value;
        }
      }
      if (best != next[p]) {
        next[p] = best;
        changed = true;
      }
    }
    std::vector<bool> trimmed;
    if (trim_count > 0)
      trimmed = worstFitted(points, next, current.lines, trim_count);
    if (!changed && trimmed == current.trimmed)
      break;
    current = fitLabels(points, std::move(next), k, &current.lines, std::move(trimmed));
  }
  return current;
}

LinearClusters kLinear(const Points& points, uint32_t k, const KLinearOptions& options) {
  const size_t n = points.size();
  if (k == 0 || n < k)
    throw std::invalid_argument("fewer points than clusters");
  LinearClusters best;
  bool have_best = false;
  for (uint32_t restart = 0; restart < std::max(options.restarts, 1u); ++restart) {
    std::mt19937_64 rng(options.seed + restart);
    std::vector<Line> seeds;
    for (uint32_t c = 0; c < k; ++c) {
      const uint32_t i = uniformBelow(rng, n);
      uint32_t j = uniformBelow(rng, n);
      if (n > 1)
        while (j == i)
          j = uniformBelow(rng, n);
      seeds.push_back(fitLine(points, {i, j}));
    }
    std::vector<uint32_t> labels(n, 0);
    for (size_t p = 0; p < n; ++p) {
      double nearest = std::numeric_limits<double>::infinity();
      for (uint32_t c = 0; c < k; ++c) {
        const double r = std::abs(points.times(p) - seeds[c].at(points.inputs.row(p)));
        if (r < nearest) {
          nearest = r;
          labels[p] = c;
        }
      }
    }
    LinearClusters result =
        kLinearFrom(points, std::move(labels), k, options.max_iterations, options.trim);
    if (!have_best || result.rss < best.rss) {
      best = std::move(result);
      have_best = true;
    }
  }
  return best;
}

namespace {

// Inputs and times scaled to [0, 1] by their range over the points (a constant column stays 0).
struct Scaled {
  Eigen::MatrixXd x;
  Eigen::VectorXd y;
};
// A column mapped so that its 1st percentile is 0 and its 99th is 1 (its min and max when those
// are equal): a few calls slowed a hundredfold do not squeeze every other point into a sliver.
void scaleRobustly(Eigen::Ref<Eigen::VectorXd> column) {
  if (column.size() == 0)
    return;
  std::vector<double> sorted(column.data(), column.data() + column.size());
  std::sort(sorted.begin(), sorted.end());
  const auto at = [&](double q) {
    return sorted[static_cast<size_t>(q * static_cast<double>(sorted.size() - 1))];
  };
  double low = at(0.01), high = at(0.99);
  if (!(high > low)) {
    low = sorted.front();
    high = sorted.back();
  }
  column.array() -= low;
  if (high > low)
    column /= high - low;
}

Scaled scaled(const Points& points) {
  Scaled s{points.inputs, points.times};
  for (Eigen::Index c = 0; c < s.x.cols(); ++c)
    scaleRobustly(s.x.col(c));
  scaleRobustly(s.y);
  return s;
}

// The line through two points (the minimum-norm one when there are several input variables; slope
// 0 through their mean when their inputs are equal), and the points within delta of it.
struct PairLine {
  Eigen::VectorXd slope;
  double intercept;
};
PairLine lineThrough(const Scaled& s, Eigen::Index i, Eigen::Index j) {
  const Eigen::VectorXd d = (s.x.row(j) - s.x.row(i)).transpose();
  const double dy = s.y(j) - s.y(i);
  const double norm = d.squaredNorm();
  PairLine line;
  line.slope = norm > 0 ? Eigen::VectorXd(d * (dy / norm))
                        : Eigen::VectorXd(Eigen::VectorXd::Zero(d.size()));
  const Eigen::VectorXd mid = (s.x.row(i) + s.x.row(j)).transpose() / 2;
  line.intercept = (s.y(i) + s.y(j)) / 2 - mid.dot(line.slope);
  return line;
}
// |R_ij| with R_ij's members appended to `members` when given.
uint32_t pointsInTube(const Scaled& s, const PairLine& line, Eigen::Index i, Eigen::Index j,
                      double delta, std::vector<Eigen::Index>* members) {
  const Eigen::VectorXd fitted = (s.x * line.slope).array() + line.intercept;
  uint32_t count = 0;
  for (Eigen::Index r = 0; r < s.y.size(); ++r) {
    if (r == i || r == j || !(std::abs(s.y(r) - fitted(r)) < delta))
      continue;
    ++count;
    if (members != nullptr)
      members->push_back(r);
  }
  return count;
}

} // namespace

Eigen::MatrixXd alignmentSimilarityExact(const Points& points, const AlignmentOptions& options) {
  const Scaled s = scaled(points);
  const auto n = static_cast<Eigen::Index>(points.size());
  Eigen::MatrixXd w = Eigen::MatrixXd::Identity(n, n); // e^-0 on the diagonal
  for (Eigen::Index i = 0; i < n; ++i)
    for (Eigen::Index j = i + 1; j < n; ++j) {
      const uint32_t r = pointsInTube(s, lineThrough(s, i, j), i, j, options.delta, nullptr);
      // alpha = 2^-|R| (|R| >= 1), infinity otherwise: similarity e^-alpha, or 0.
      const double alpha = std::ldexp(1.0, -static_cast<int>(std::min(r, 1000u)));
      const double similarity = r == 0 ? 0.0 : std::exp(-alpha / options.scale);
      w(i, j) = w(j, i) = similarity;
    }
  return w;
}

Eigen::MatrixXd alignmentSimilarityApprox(const Points& points, const AlignmentOptions& options) {
  const Scaled s = scaled(points);
  const auto n = static_cast<Eigen::Index>(points.size());
  constexpr double kUnvisited = 2.0;
  constexpr double kNoneInTube = std::numeric_limits<double>::infinity(); // the listing's Max_Int
  Eigen::MatrixXd w = Eigen::MatrixXd::Constant(n, n, kUnvisited);
  // The neighbours of a point: its `neighbors` nearest in the scaled plane.
  const auto nearest = [&](Eigen::Index i) {
    std::vector<std::pair<double, Eigen::Index>> by_distance;
    by_distance.reserve(static_cast<size_t>(n));
    for (Eigen::Index j = 0; j < n; ++j)
      if (j != i)
        by_distance.emplace_back(
            (s.x.row(j) - s.x.row(i)).squaredNorm() + (s.y(j) - s.y(i)) * (s.y(j) - s.y(i)), j);
    const size_t keep = std::min<size_t>(options.neighbors, by_distance.size());
    std::partial_sort(by_distance.begin(), by_distance.begin() + static_cast<std::ptrdiff_t>(keep),
                      by_distance.end());
    by_distance.resize(keep);
    return by_distance;
  };
  std::mt19937_64 rng(options.seed);
  std::vector<Eigen::Index> tube;
  for (Eigen::Index i = 0; i < n; ++i) {
    const auto neighbours = nearest(i);
    if (neighbours.empty())
      break;
    for (uint32_t draw = 0; draw < options.draws; ++draw) {
      const Eigen::Index j = neighbours[uniformBelow(rng, neighbours.size())].second;
      if (w(i, j) != kUnvisited)
        continue;
      tube.clear();
      const uint32_t r = pointsInTube(s, lineThrough(s, i, j), i, j, options.delta, &tube);
      if (r == 0) {
        w(i, j) = w(j, i) = kNoneInTube;
        continue;
      }
      const double value = 1.0 / (2.0 * r);
      w(i, j) = w(j, i) = value;
      // Every point on the line is at least as close to both ends as they are to each other.
      for (const Eigen::Index m : tube) {
        if (value < w(i, m))
          w(i, m) = w(m, i) = value;
        if (value < w(m, j))
          w(j, m) = w(m, j) = value;
      }
    }
  }
  w.diagonal().setZero();
  // e^-inf is 0 exactly (Eigen's vectorized exp would give a denormal).
  return w.unaryExpr([&](double alpha) {
    return std::isinf(alpha) ? 0.0 : std::exp(-alpha / options.scale);
  });
}

namespace {

// K-means on the rows of `data`: k-means++ seeding, Lloyd's iterations, the least within-cluster
// sum of squares over the restarts.
std::vector<uint32_t> kMeans(const Eigen::MatrixXd& data, uint32_t k, uint32_t restarts,
                             uint64_t seed) {
  const auto n = static_cast<Eigen::Index>(data.rows());
  std::vector<uint32_t> best_labels(static_cast<size_t>(n), 0);
  double best_inertia = std::numeric_limits<double>::infinity();
  for (uint32_t restart = 0; restart < std::max(restarts, 1u); ++restart) {
    std::mt19937_64 rng(seed + restart);
    Eigen::MatrixXd centres(k, data.cols());
    centres.row(0) = data.row(uniformBelow(rng, static_cast<uint64_t>(n)));
    Eigen::VectorXd nearest = (data.rowwise() - centres.row(0)).rowwise().squaredNorm();
    for (uint32_t c = 1; c < k; ++c) {
      const double total = nearest.sum();
      Eigen::Index chosen = 0;
      if (total > 0) {
        double target = std::ldexp(static_cast<double>(rng() >> 11), -53) * total;
        while (chosen + 1 < n && target >= nearest(chosen)) {
          target -= nearest(chosen);
          ++chosen;
        }
      } else {
        chosen = uniformBelow(rng, static_cast<uint64_t>(n));
      }
      centres.row(c) = data.row(chosen);
      nearest = nearest.cwiseMin((data.rowwise() - centres.row(c)).rowwise().squaredNorm());
    }
    std::vector<uint32_t> labels(static_cast<size_t>(n), UINT32_MAX);
    double inertia = 0;
    for (int iteration = 0; iteration < 300; ++iteration) {
      bool changed = false;
      inertia = 0;
      for (Eigen::Index p = 0; p < n; ++p) {
        Eigen::Index c;
        inertia += (centres.rowwise() - data.row(p)).rowwise().squaredNorm().minCoeff(&c);
        if (labels[p] != static_cast<uint32_t>(c)) {
          labels[p] = static_cast<uint32_t>(c);
          changed = true;
        }
      }
      if (!changed)
        break;
      Eigen::MatrixXd sums = Eigen::MatrixXd::Zero(k, data.cols());
      std::vector<double> counts(k, 0);
      for (Eigen::Index p = 0; p < n; ++p) {
        sums.row(labels[p]) += data.row(p);
        ++counts[labels[p]];
      }
      for (uint32_t c = 0; c < k; ++c)
        if (counts[c] > 0)
          centres.row(c) = sums.row(c) / counts[c];
    }
    if (inertia < best_inertia) {
      best_inertia = inertia;
      best_labels = std::move(labels);
    }
  }
  return best_labels;
}

} // namespace

std::vector<uint32_t> spectralLabels(const Eigen::MatrixXd& similarity, uint32_t k,
                                     uint32_t kmeans_restarts, uint64_t seed) {
  const Eigen::Index n = similarity.rows();
  if (k <= 1 || n <= 1)
    return std::vector<uint32_t>(static_cast<size_t>(n), 0);
  const Eigen::VectorXd degree = similarity.rowwise().sum();
  const Eigen::VectorXd inv_sqrt =
      degree.unaryExpr([](double d) { return d > 0 ? 1.0 / std::sqrt(d) : 0.0; });
  const Eigen::MatrixXd normalized = inv_sqrt.asDiagonal() * similarity * inv_sqrt.asDiagonal();
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> solver(normalized);
  if (solver.info() != Eigen::Success)
    throw std::runtime_error("eigendecomposition failed");
  // Eigenvalues ascending: the k largest are the last columns.
  Eigen::MatrixXd embedding = solver.eigenvectors().rightCols(k);
  for (Eigen::Index p = 0; p < n; ++p) {
    const double norm = embedding.row(p).norm();
    if (norm > 0)
      embedding.row(p) /= norm;
  }
  return kMeans(embedding, k, kmeans_restarts, seed);
}

LinearClusters spectral(const Points& points, uint32_t k, const SpectralOptions& options) {
  const size_t n = points.size();
  if (k == 0 || n < k)
    throw std::invalid_argument("fewer points than clusters");
  // The points the kernel is computed on: all, or a seeded sample.
  std::vector<uint32_t> sample(n);
  std::iota(sample.begin(), sample.end(), 0u);
  if (n > options.max_points) {
    std::mt19937_64 rng(options.seed);
    for (size_t i = 0; i < options.max_points; ++i)
      std::swap(sample[i], sample[i + uniformBelow(rng, n - i)]);
    sample.resize(options.max_points);
    std::sort(sample.begin(), sample.end());
  }
  Points subset;
  subset.inputs.resize(static_cast<Eigen::Index>(sample.size()), points.inputs.cols());
  subset.times.resize(static_cast<Eigen::Index>(sample.size()));
  for (size_t i = 0; i < sample.size(); ++i) {
    subset.inputs.row(static_cast<Eigen::Index>(i)) = points.inputs.row(sample[i]);
    subset.times(static_cast<Eigen::Index>(i)) = points.times(sample[i]);
  }
  const Eigen::MatrixXd w = options.kernel == Kernel::kExact
                                ? alignmentSimilarityExact(subset, options.alignment)
                                : alignmentSimilarityApprox(subset, options.alignment);
  // A point whose every line holds (almost) no other point is all but disconnected from the graph:
  // spectral clustering would give it a cluster of its own (a call preempted for milliseconds). The
  // embedding is computed on the connected points; the others join the nearest line, as the points
  // outside the sample do.
  const Eigen::VectorXd degree = w.rowwise().sum() - w.diagonal();
  std::vector<double> sorted_degree(degree.data(), degree.data() + degree.size());
  std::nth_element(sorted_degree.begin(),
                   sorted_degree.begin() + static_cast<std::ptrdiff_t>(sorted_degree.size() / 2),
                   sorted_degree.end());
  const double isolated_below = 1e-3 * sorted_degree[sorted_degree.size() / 2];
  std::vector<Eigen::Index> connected;
  for (Eigen::Index i = 0; i < degree.size(); ++i)
    if (degree(i) > isolated_below)
      connected.push_back(i);
  if (connected.size() < k) // nothing to leave out
    for (Eigen::Index i = static_cast<Eigen::Index>(connected.size()); i < degree.size(); ++i)
      connected.push_back(i);
  std::sort(connected.begin(), connected.end());
  connected.erase(std::unique(connected.begin(), connected.end()), connected.end());
  const auto m = static_cast<Eigen::Index>(connected.size());
  Eigen::MatrixXd w_connected(m, m);
  for (Eigen::Index a = 0; a < m; ++a)
    for (Eigen::Index b = 0; b < m; ++b)
      w_connected(a, b) = w(connected[static_cast<size_t>(a)], connected[static_cast<size_t>(b)]);
  const std::vector<uint32_t> connected_labels =
      spectralLabels(w_connected, k, options.kmeans_restarts, options.seed);
  // Lines fitted to the connected sample points; every other point joins the nearest.
  std::vector<uint32_t> in_sample(sample.size(), UINT32_MAX);
  for (size_t a = 0; a < connected.size(); ++a)
    in_sample[static_cast<size_t>(connected[a])] = connected_labels[a];
  std::vector<bool> unlabelled(sample.size());
  std::vector<uint32_t> fit_labels(sample.size(), 0);
  for (size_t i = 0; i < sample.size(); ++i) {
    unlabelled[i] = in_sample[i] == UINT32_MAX;
    fit_labels[i] = unlabelled[i] ? 0 : in_sample[i];
  }
  const LinearClusters on_sample = fitLabels(subset, fit_labels, k, nullptr, unlabelled);
  std::vector<uint32_t> labels(n, 0);
  for (size_t p = 0, s = 0; p < n; ++p) {
    if (s < sample.size() && sample[s] == p) {
      const uint32_t label = in_sample[s++];
      if (label != UINT32_MAX) {
        labels[p] = label;
        continue;
      }
    }
    double nearest = std::numeric_limits<double>::infinity();
    for (uint32_t c = 0; c < k; ++c) {
      const double r = std::abs(points.times(p) - on_sample.lines[c].at(points.inputs.row(p)));
      if (r < nearest) {
        nearest = r;
        labels[p] = c;
      }
    }
  }
  LinearClusters out = fitLabels(points, std::move(labels), k, &on_sample.lines);
  // As trimmed K-linear does: the lines are refitted without the points farthest from them.
  const auto trim_count = static_cast<size_t>(options.trim * static_cast<double>(n));
  if (trim_count > 0)
    out = fitLabels(points, out.labels, k, &out.lines,
                    worstFitted(points, out.labels, out.lines, trim_count));
  return out;
}

const char* methodName(Method method) {
  return method == Method::kKLinear ? "klinear" : "spectral";
}

LinearClusters clusterPoints(const Points& points, uint32_t k, const ClusterSearch& search) {
  return search.method == Method::kKLinear ? kLinear(points, k, search.klinear)
                                           : spectral(points, k, search.spectral);
}

SmallestK smallestK(const Points& points, uint32_t max_k, double max_mse,
                    const ClusterSearch& search) {
  SmallestK out;
  for (uint32_t k = 1; k <= max_k && k <= points.size(); ++k) {
    out.clusters = clusterPoints(points, k, search);
    out.mse_by_k.push_back(out.clusters.mse());
    if (out.clusters.mse() <= max_mse) {
      out.found = true;
      break;
    }
    if (k > 1 && out.mse_by_k[k - 2] > 0) {
      const double cut = 1 - std::sqrt(out.mse_by_k[k - 1] / out.mse_by_k[k - 2]);
      if (cut > out.elbow_cut) {
        out.elbow_cut = cut;
        out.elbow = out.clusters;
      }
    }
  }
  return out;
}

uint32_t Features::add(std::string name) {
  names.push_back(std::move(name));
  columns.emplace_back();
  return static_cast<uint32_t>(names.size() - 1);
}

void Features::set(uint32_t feature, uint32_t point, double value) {
  if (value == 0)
    return;
  auto& column = columns[feature];
  if (!column.empty() && column.back().point >= point)
    throw std::logic_error("Features::set: points out of order");
  column.push_back({point, value});
  points = std::max<size_t>(points, point + 1);
}

double Features::value(uint32_t feature, uint32_t point) const {
  const auto& column = columns[feature];
  const auto it = std::lower_bound(column.begin(), column.end(), point,
                                   [](const Entry& e, uint32_t p) { return e.point < p; });
  return it != column.end() && it->point == point ? it->value : 0.0;
}

uint32_t Tree::predict(const Features& features, uint32_t point) const {
  uint32_t node = 0;
  while (!nodes[node].leaf)
    node = features.value(nodes[node].feature, point) > nodes[node].threshold ? nodes[node].above
                                                                              : nodes[node].below;
  return nodes[node].label;
}

size_t Tree::leaves() const {
  return static_cast<size_t>(
      std::count_if(nodes.begin(), nodes.end(), [](const TreeNode& n) { return n.leaf; }));
}

namespace {

double gini(const std::vector<double>& counts, double total) {
  if (total <= 0)
    return 0;
  double sum = 0;
  for (const double c : counts)
    sum += (c / total) * (c / total);
  return 1 - sum;
}

class TreeGrower {
public:
  TreeGrower(const Features& features, const std::vector<uint32_t>& labels, uint32_t classes,
             const TreeOptions& options)
      : features_(features), labels_(labels), classes_(classes), options_(options),
        by_feature_(features.columns.size()) {
    // The values by point too (compressed rows), so that a node reads only its own points'.
    row_begin_.assign(labels.size() + 1, 0);
    for (const auto& column : features.columns)
      for (const Features::Entry& e : column)
        if (e.point < labels.size())
          ++row_begin_[e.point + 1];
    for (size_t p = 0; p < labels.size(); ++p)
      row_begin_[p + 1] += row_begin_[p];
    row_entries_.resize(row_begin_.back());
    std::vector<size_t> next(row_begin_.begin(), row_begin_.end() - 1);
    for (uint32_t f = 0; f < features.columns.size(); ++f)
      for (const Features::Entry& e : features.columns[f])
        if (e.point < labels.size())
          row_entries_[next[e.point]++] = {f, e.value};
  }

  Tree grow(const std::vector<uint32_t>& rows) {
    tree_ = Tree{};
    root_points_ = static_cast<double>(rows.size());
    std::vector<double> counts(classes_, 0);
    for (const uint32_t r : rows)
      ++counts[labels_[r]];
    root_impurity_ = gini(counts, root_points_);
    grow(rows, 0);
    return std::move(tree_);
  }

private:
  struct Split {
    double impurity = std::numeric_limits<double>::infinity();
    uint32_t feature = 0;
    double threshold = 0;
  };

  uint32_t grow(const std::vector<uint32_t>& rows, uint32_t depth) {
    const auto index = static_cast<uint32_t>(tree_.nodes.size());
    tree_.nodes.emplace_back();
    std::vector<double> counts(classes_, 0);
    for (const uint32_t r : rows)
      ++counts[labels_[r]];
    TreeNode& node = tree_.nodes[index];
    for (const double c : counts)
      node.class_counts.push_back(static_cast<uint32_t>(c));
    node.label =
        static_cast<uint32_t>(std::max_element(counts.begin(), counts.end()) - counts.begin());
    tree_.height = std::max(tree_.height, depth);
    const double total = static_cast<double>(rows.size());
    const double impurity = gini(counts, total);
    if (depth >= options_.max_depth || impurity == 0 ||
        rows.size() < 2 * static_cast<size_t>(std::max(options_.min_leaf, 1u)))
      return index;
    const Split split = bestSplit(rows, counts);
    // A split must lower the impurity (equal impurity would only grow the tree), and by enough.
    const double gain = (impurity - split.impurity) * total / root_points_;
    if (!(split.impurity < impurity - 1e-12) || gain < options_.min_gain * root_impurity_)
      return index;
    std::vector<uint32_t> below, above;
    for (const uint32_t r : rows)
      (features_.value(split.feature, r) > split.threshold ? above : below).push_back(r);
    const uint32_t below_index = grow(below, depth + 1);
    const uint32_t above_index = grow(above, depth + 1);
    TreeNode& inner = tree_.nodes[index];
    inner.leaf = false;
    inner.feature = split.feature;
    inner.threshold = split.threshold;
    inner.below = below_index;
    inner.above = above_index;
    return index;
  }

  // The least weighted Gini impurity over every feature and threshold; ties keep the first found
  // (the lowest feature, the lowest threshold), so the tree does not depend on anything else.
  Split bestSplit(const std::vector<uint32_t>& rows, const std::vector<double>& counts) {
    // The node's non-zero values, by feature (a feature without any is all zero here: no threshold
    // separates anything).
    std::vector<uint32_t> touched;
    for (const uint32_t r : rows)
      for (size_t k = row_begin_[r]; k < row_begin_[r + 1]; ++k) {
        auto& values = by_feature_[row_entries_[k].first];
        if (values.empty())
          touched.push_back(row_entries_[k].first);
        values.emplace_back(row_entries_[k].second, labels_[r]);
      }
    std::sort(touched.begin(), touched.end());
    const double total = static_cast<double>(rows.size());
    const double min_leaf = std::max(options_.min_leaf, 1u);
    Split best;
    std::vector<double> left(classes_), right(classes_), zeros(classes_);
    for (const uint32_t f : touched) {
      auto& entries = by_feature_[f]; // (value, class)
      std::sort(entries.begin(), entries.end());
      zeros = counts;
      for (const auto& [value, label] : entries)
        --zeros[label];
      const double zero_total = total - static_cast<double>(entries.size());
      bool zero_pending = zero_total > 0;
      std::fill(left.begin(), left.end(), 0.0);
      double left_total = 0;
      size_t e = 0;
      const auto zeroIsNext = [&] {
        return zero_pending && (e == entries.size() || entries[e].first > 0);
      };
      while (true) {
        double value;
        if (zeroIsNext()) {
          value = 0;
          for (uint32_t c = 0; c < classes_; ++c)
            left[c] += zeros[c];
          left_total += zero_total;
          zero_pending = false;
        } else if (e < entries.size()) {
          value = entries[e].first;
          while (e < entries.size() && entries[e].first == value) {
            ++left[entries[e].second];
            ++left_total;
            ++e;
          }
        } else {
          break;
        }
        if (!zeroIsNext() && e == entries.size())
          break; // nothing above: no split here
        const double right_total = total - left_total;
        if (left_total < min_leaf || right_total < min_leaf)
          continue;
        for (uint32_t c = 0; c < classes_; ++c)
          right[c] = counts[c] - left[c];
        const double impurity =
            (left_total * gini(left, left_total) + right_total * gini(right, right_total)) / total;
        if (impurity < best.impurity) {
          best.impurity = impurity;
          best.feature = f;
          // The largest value below: "calls of f > 3" reads as more than 3 calls.
          best.threshold = value;
        }
      }
      entries.clear();
    }
    return best;
  }

  const Features& features_;
  const std::vector<uint32_t>& labels_;
  uint32_t classes_;
  TreeOptions options_;
  double root_points_ = 0, root_impurity_ = 0;
  std::vector<size_t> row_begin_;                                    // per point, into row_entries_
  std::vector<std::pair<uint32_t, double>> row_entries_;             // (feature, value)
  std::vector<std::vector<std::pair<double, uint32_t>>> by_feature_; // a node's, reused
  Tree tree_;
};

} // namespace

Tree growTree(const Features& features, const std::vector<uint32_t>& labels, uint32_t classes,
              const std::vector<uint32_t>& rows, const TreeOptions& options) {
  return TreeGrower(features, labels, classes, options).grow(rows);
}

double Explanation::meanClusterAccuracy() const {
  double sum = 0;
  size_t counted = 0;
  for (size_t c = 0; c < cluster_accuracy.size(); ++c)
    if (cluster_points[c] > 0) {
      sum += cluster_accuracy[c];
      ++counted;
    }
  return counted == 0 ? 1.0 : sum / static_cast<double>(counted);
}

namespace {

// Predictions tallied per cluster: the overall and the per-cluster accuracy.
struct Tally {
  explicit Tally(uint32_t classes) : points(classes, 0), correct(classes, 0) {}
  void add(uint32_t label, bool right) {
    ++points[label];
    correct[label] += right ? 1 : 0;
  }
  void into(Explanation& out) const {
    const uint64_t n = std::accumulate(points.begin(), points.end(), uint64_t{0});
    const uint64_t right = std::accumulate(correct.begin(), correct.end(), uint64_t{0});
    out.accuracy = n == 0 ? 1.0 : static_cast<double>(right) / static_cast<double>(n);
    out.cluster_points = points;
    out.cluster_accuracy.clear();
    for (size_t c = 0; c < points.size(); ++c)
      out.cluster_accuracy.push_back(points[c] == 0 ? 1.0
                                                    : static_cast<double>(correct[c]) /
                                                          static_cast<double>(points[c]));
  }
  std::vector<uint64_t> points, correct;
};

} // namespace

Explanation explainClusters(const Features& features, const std::vector<uint32_t>& labels,
                            uint32_t classes, const TreeOptions& options) {
  const auto n = static_cast<uint32_t>(labels.size());
  std::vector<uint32_t> all(n);
  std::iota(all.begin(), all.end(), 0u);
  Explanation out;
  TreeGrower grower(features, labels, classes, options);
  out.tree = grower.grow(all);
  Tally tally(classes);
  const uint32_t folds = std::min(options.folds, n);
  if (folds < 2) {
    for (uint32_t p = 0; p < n; ++p)
      tally.add(labels[p], out.tree.predict(features, p) == labels[p]);
    tally.into(out);
    return out;
  }
  std::vector<uint32_t> order = all;
  std::mt19937_64 rng(options.seed);
  for (uint32_t i = n; i > 1; --i)
    std::swap(order[i - 1], order[uniformBelow(rng, i)]);
  for (uint32_t fold = 0; fold < folds; ++fold) {
    std::vector<uint32_t> train, test;
    for (uint32_t i = 0; i < n; ++i)
      (i % folds == fold ? test : train).push_back(order[i]);
    std::sort(train.begin(), train.end());
    const Tree tree = grower.grow(train);
    for (const uint32_t p : test)
      tally.add(labels[p], tree.predict(features, p) == labels[p]);
  }
  tally.into(out);
  return out;
}

} // namespace shapetrace::analyzer::drt
