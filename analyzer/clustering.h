// Clusters of shapes and their grouping into ribbons: Appendix A of the Shapes paper, plus an
// order-invariant alternative.
//
// Appendix A (createClusters): shapes sorted by depth ascending, ties by first appearance (id
// order); a shape joins the first cluster, in creation order, whose base function is its own, whose
// every member is within `threshold` of it and none of whose members is its ancestor or descendant;
// otherwise it starts a new cluster. (The listing's loop has no `break` after adding, which would
// put a shape into several clusters; the text and the cluster property say one, so we stop at the
// first.) The result depends on the order shapes are visited, as Sec. 8.1 admits.
//
// Complete linkage (order-invariant): per base function, start from singletons and repeatedly merge
// the two clusters whose largest pairwise distance is smallest, as long as it is within `threshold`
// and no member of one is an ancestor or descendant of a member of the other; ties go to the pair
// that comes first in a canonical, structural order of shapes (depth, function name, children). The
// clusters satisfy the same cluster property, but do not depend on the order the trace revealed the
// shapes in; they can differ from Appendix A's where a shape is within the threshold of two
// candidate clusters (Appendix A takes the older one, complete linkage the closer one).
//
// createClusterGroups: clusters sorted by depth descending (ties by cluster id); a cluster joins the
// first group none of whose shapes is an ancestor or descendant of its shapes; the groups (ribbons)
// are then sorted by the depth of their deepest cluster, ascending. Cluster depth is Listing A.1's:
// 1 + the deepest member shape.
#pragma once

#include "shape_metric.h"
#include "shape_table.h"

#include <cstdint>
#include <string>
#include <vector>

namespace shapetrace::analyzer {

enum class ClusteringMethod : uint8_t { kAppendixA, kCompleteLinkage };
const char* clusteringMethodName(ClusteringMethod method);

using ClusterId = uint32_t;
inline constexpr ClusterId kNoCluster = UINT32_MAX;

struct Cluster {
  uint32_t function = 0;
  std::vector<ShapeId> shapes; // in the order they joined
  uint32_t depth = 0;          // 1 + max depth of its shapes (Listing A.1)
  double max_distance = 0;     // largest distance between two of its shapes
  bool trivial = false;        // holds a shape [f, {null}] (left out of Table 2)
};

// Ancestor/descendant relation between the shapes of one table: the transitive closure of
// "is a child of", as sorted id lists. Shapes cannot contain themselves, so this is a strict order.
class ShapeRelations {
public:
  explicit ShapeRelations(const ShapeTable& shapes);
  bool isDescendant(ShapeId descendant, ShapeId ancestor) const;
  bool related(ShapeId a, ShapeId b) const { return isDescendant(a, b) || isDescendant(b, a); }
  const std::vector<ShapeId>& descendants(ShapeId id) const { return descendants_[id]; }
  size_t size() const { return descendants_.size(); }

private:
  std::vector<std::vector<ShapeId>> descendants_;
};

struct Clustering {
  std::vector<Cluster> clusters;          // ids are indices, in creation order
  std::vector<ClusterId> cluster_of_shape; // per shape id; kNoCluster for null
};

// `function_names` (per function index) orders functions in complete linkage's canonical order.
Clustering createClusters(const ShapeTable& shapes, ShapeMetric& metric,
                          const ShapeRelations& relations, double threshold,
                          ClusteringMethod method, const std::vector<std::string>& function_names);

// Ribbons over the given clusters (ids into `clusters`): each ribbon lists cluster ids in the order
// they joined it; ribbons are in drawing order (shallowest deepest-cluster first).
std::vector<std::vector<ClusterId>> createClusterGroups(const std::vector<Cluster>& clusters,
                                                        std::vector<ClusterId> selection,
                                                        const ShapeRelations& relations);

} // namespace shapetrace::analyzer
