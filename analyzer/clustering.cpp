// Appendix A clustering, complete-linkage clustering and ribbons.
#include "clustering.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <unordered_map>

namespace shapetrace::analyzer {

const char* clusteringMethodName(ClusteringMethod method) {
  return method == ClusteringMethod::kAppendixA ? "appendix-a" : "complete-linkage";
}

ShapeRelations::ShapeRelations(const ShapeTable& shapes) : descendants_(shapes.size()) {
  // Children have smaller ids than their parents, so one pass in id order sees them ready.
  for (ShapeId id = 1; id < shapes.size(); ++id) {
    std::vector<ShapeId> all;
    for (ShapeId child : shapes.children(id)) {
      all.push_back(child);
      all.insert(all.end(), descendants_[child].begin(), descendants_[child].end());
    }
    std::sort(all.begin(), all.end());
    all.erase(std::unique(all.begin(), all.end()), all.end());
    descendants_[id] = std::move(all);
  }
}

bool ShapeRelations::isDescendant(ShapeId descendant, ShapeId ancestor) const {
  if (ancestor >= descendants_.size()) return false; // interned after the relations were built
  const auto& list = descendants_[ancestor];
  return std::binary_search(list.begin(), list.end(), descendant);
}

namespace {

bool relatedToAny(const std::vector<ShapeId>& a, const std::vector<ShapeId>& b,
                  const ShapeRelations& relations) {
  for (ShapeId x : a)
    for (ShapeId y : b)
      if (relations.related(x, y)) return true;
  return false;
}

// Depth ascending, ties by id (first appearance).
void sortByDepth(std::vector<ShapeId>& order, const ShapeTable& shapes) {
  std::sort(order.begin(), order.end(), [&](ShapeId a, ShapeId b) {
    if (shapes.depth(a) != shapes.depth(b)) return shapes.depth(a) < shapes.depth(b);
    return a < b;
  });
}

void finishCluster(Cluster& cluster, const ShapeTable& shapes, ShapeMetric& metric) {
  uint32_t deepest = 0;
  for (size_t i = 0; i < cluster.shapes.size(); ++i) {
    deepest = std::max(deepest, shapes.depth(cluster.shapes[i]));
    cluster.trivial = cluster.trivial || shapes.isLeaf(cluster.shapes[i]);
    for (size_t j = 0; j < i; ++j)
      cluster.max_distance =
          std::max(cluster.max_distance, metric.distance(cluster.shapes[i], cluster.shapes[j]));
  }
  cluster.depth = 1 + deepest;
}

// d(a, b) <= threshold, skipping the computation when the depths alone rule it out: d(s, null)
// is depth(s) / 2, so by the triangle inequality d(a, b) >= |depth(a) - depth(b)| / 2.
bool withinThreshold(const ShapeTable& shapes, ShapeMetric& metric, ShapeId a, ShapeId b,
                     double threshold) {
  const double depth_gap =
      std::abs(static_cast<double>(shapes.depth(a)) - static_cast<double>(shapes.depth(b))) / 2;
  if (depth_gap > threshold) return false;
  return metric.distance(a, b) <= threshold;
}

std::vector<Cluster> appendixA(const ShapeTable& shapes, ShapeMetric& metric,
                               const ShapeRelations& relations, double threshold) {
  std::vector<ShapeId> order(shapes.size() - 1);
  std::iota(order.begin(), order.end(), ShapeId{1});
  sortByDepth(order, shapes);
  std::vector<Cluster> clusters;
  // Only clusters of the shape's own base function can take it; visiting just those, in creation
  // order, is the same walk as Appendix A's over all clusters.
  std::unordered_map<uint32_t, std::vector<ClusterId>> clusters_of_function;
  for (ShapeId shape : order) {
    bool added = false;
    for (ClusterId id : clusters_of_function[shapes.function(shape)]) {
      Cluster& cluster = clusters[id];
      const bool close = std::all_of(cluster.shapes.begin(), cluster.shapes.end(), [&](ShapeId m) {
        return withinThreshold(shapes, metric, shape, m, threshold);
      });
      if (!close) continue;
      const bool unrelated = std::none_of(cluster.shapes.begin(), cluster.shapes.end(),
                                          [&](ShapeId m) { return relations.related(shape, m); });
      if (!unrelated) continue;
      cluster.shapes.push_back(shape);
      added = true;
      break;
    }
    if (!added) {
      clusters_of_function[shapes.function(shape)].push_back(static_cast<ClusterId>(clusters.size()));
      clusters.push_back(Cluster{shapes.function(shape), {shape}, 0, 0, false});
    }
  }
  return clusters;
}

// A structural rank of every shape, independent of the order the trace revealed them in:
// by depth, then function name, then the sorted ranks of the children.
std::vector<uint32_t> canonicalRanks(const ShapeTable& shapes,
                                     const std::vector<std::string>& function_names) {
  std::vector<uint32_t> rank(shapes.size(), 0);
  std::vector<std::vector<uint32_t>> child_ranks(shapes.size());
  std::vector<ShapeId> order(shapes.size() - 1);
  std::iota(order.begin(), order.end(), ShapeId{1});
  sortByDepth(order, shapes);
  // Ranks are assigned depth level by depth level; children (shallower) are ranked first.
  size_t begin = 0;
  uint32_t next_rank = 1;
  while (begin < order.size()) {
    size_t end = begin;
    while (end < order.size() && shapes.depth(order[end]) == shapes.depth(order[begin]))
      ++end;
    for (size_t i = begin; i < end; ++i) {
      auto& ranks = child_ranks[order[i]];
      for (ShapeId child : shapes.children(order[i]))
        ranks.push_back(rank[child]);
      std::sort(ranks.begin(), ranks.end());
    }
    std::sort(order.begin() + static_cast<ptrdiff_t>(begin),
              order.begin() + static_cast<ptrdiff_t>(end), [&](ShapeId a, ShapeId b) {
                const auto& na = function_names[shapes.function(a)];
                const auto& nb = function_names[shapes.function(b)];
                if (na != nb) return na < nb;
                return child_ranks[a] < child_ranks[b];
              });
    for (size_t i = begin; i < end; ++i)
      rank[order[i]] = next_rank++;
    begin = end;
  }
  return rank;
}

std::vector<Cluster> completeLinkage(const ShapeTable& shapes, ShapeMetric& metric,
                                     const ShapeRelations& relations, double threshold,
                                     const std::vector<std::string>& function_names) {
  const std::vector<uint32_t> rank = canonicalRanks(shapes, function_names);
  // Shapes per base function, in canonical order; functions in name order.
  std::vector<ShapeId> all(shapes.size() - 1);
  std::iota(all.begin(), all.end(), ShapeId{1});
  std::sort(all.begin(), all.end(), [&](ShapeId a, ShapeId b) {
    const auto& na = function_names[shapes.function(a)];
    const auto& nb = function_names[shapes.function(b)];
    if (na != nb) return na < nb;
    return rank[a] < rank[b];
  });

  std::vector<Cluster> clusters;
  size_t begin = 0;
  while (begin < all.size()) {
    size_t end = begin;
    while (end < all.size() && shapes.function(all[end]) == shapes.function(all[begin]))
      ++end;
    // Each group is a cluster; a merged group keeps the canonically first shape's position.
    std::vector<std::vector<ShapeId>> groups;
    for (size_t i = begin; i < end; ++i)
      groups.push_back({all[i]});
    const size_t n = groups.size();
    std::vector<double> linkage(n * n, 0.0);
    for (size_t i = 0; i < n; ++i)
      for (size_t j = 0; j < i; ++j)
        linkage[i * n + j] = linkage[j * n + i] = metric.distance(groups[i][0], groups[j][0]);
    std::vector<bool> alive(n, true);
    for (;;) {
      double best = std::numeric_limits<double>::infinity();
      size_t best_i = 0, best_j = 0;
      for (size_t i = 0; i < n; ++i) {
        if (!alive[i]) continue;
        for (size_t j = i + 1; j < n; ++j) {
          if (!alive[j] || linkage[i * n + j] > threshold || linkage[i * n + j] >= best) continue;
          if (relatedToAny(groups[i], groups[j], relations)) continue;
          best = linkage[i * n + j];
          best_i = i;
          best_j = j;
        }
      }
      if (best == std::numeric_limits<double>::infinity()) break;
      groups[best_i].insert(groups[best_i].end(), groups[best_j].begin(), groups[best_j].end());
      groups[best_j].clear();
      alive[best_j] = false;
      for (size_t k = 0; k < n; ++k) {
        const double merged = std::max(linkage[best_i * n + k], linkage[best_j * n + k]);
        linkage[best_i * n + k] = linkage[k * n + best_i] = merged;
      }
    }
    for (size_t i = 0; i < n; ++i)
      if (alive[i]) clusters.push_back(Cluster{shapes.function(groups[i][0]), groups[i], 0, 0, false});
    begin = end;
  }
  return clusters;
}

} // namespace

Clustering createClusters(const ShapeTable& shapes, ShapeMetric& metric,
                          const ShapeRelations& relations, double threshold,
                          ClusteringMethod method, const std::vector<std::string>& function_names) {
  Clustering result;
  result.clusters = method == ClusteringMethod::kAppendixA
                        ? appendixA(shapes, metric, relations, threshold)
                        : completeLinkage(shapes, metric, relations, threshold, function_names);
  result.cluster_of_shape.assign(shapes.size(), kNoCluster);
  for (ClusterId id = 0; id < result.clusters.size(); ++id) {
    finishCluster(result.clusters[id], shapes, metric);
    for (ShapeId shape : result.clusters[id].shapes)
      result.cluster_of_shape[shape] = id;
  }
  return result;
}

// A ribbon under construction: its shapes and their descendants as bitmaps over shape ids, so
// "is this cluster related to any shape of the ribbon" costs one look-up per shape and descendant.
struct RibbonMembers {
  std::vector<bool> shapes;
  std::vector<bool> descendants;
};

std::vector<std::vector<ClusterId>> createClusterGroups(const std::vector<Cluster>& clusters,
                                                        std::vector<ClusterId> selection,
                                                        const ShapeRelations& relations) {
  // Deepest clusters are grouped first.
  std::sort(selection.begin(), selection.end(), [&](ClusterId a, ClusterId b) {
    if (clusters[a].depth != clusters[b].depth) return clusters[a].depth > clusters[b].depth;
    return a < b;
  });
  const size_t shape_count = relations.size();
  std::vector<std::vector<ClusterId>> groups;
  std::vector<RibbonMembers> members;
  auto related = [&](const Cluster& cluster, const RibbonMembers& ribbon) {
    for (ShapeId x : cluster.shapes) {
      if (ribbon.descendants[x]) return true; // x is below a shape of the ribbon
      for (ShapeId d : relations.descendants(x))
        if (ribbon.shapes[d]) return true; // x is above a shape of the ribbon
    }
    return false;
  };
  for (ClusterId id : selection) {
    size_t g = 0;
    while (g < groups.size() && related(clusters[id], members[g]))
      ++g;
    if (g == groups.size()) {
      groups.emplace_back();
      members.push_back({std::vector<bool>(shape_count), std::vector<bool>(shape_count)});
    }
    groups[g].push_back(id);
    for (ShapeId x : clusters[id].shapes) {
      members[g].shapes[x] = true;
      for (ShapeId d : relations.descendants(x))
        members[g].descendants[d] = true;
    }
  }
  // The shallowest ribbons are drawn on top.
  auto deepest = [&](const std::vector<ClusterId>& group) {
    uint32_t depth = 0;
    for (ClusterId id : group)
      depth = std::max(depth, clusters[id].depth);
    return depth;
  };
  std::vector<size_t> order(groups.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const uint32_t da = deepest(groups[a]), db = deepest(groups[b]);
    return da != db ? da < db : a < b;
  });
  std::vector<std::vector<ClusterId>> sorted;
  for (size_t index : order)
    sorted.push_back(std::move(groups[index]));
  return sorted;
}

} // namespace shapetrace::analyzer
