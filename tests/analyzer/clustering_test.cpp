// Appendix A clustering and cluster groups (ribbons) on constructed examples, the order-invariant
// complete-linkage option, and the cluster property for both on random shapes.
#include "clustering.h"
#include "trace_builder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>

namespace shapetrace::analyzer {
namespace {

using ::testing::ElementsAre;
using testing::shape;

constexpr uint32_t f = 1, g = 2, h = 3;

std::vector<std::string> names(size_t n = 16) {
  std::vector<std::string> out;
  for (size_t i = 0; i < n; ++i)
    out.push_back("fn" + std::to_string(i));
  return out;
}

class ClusteringTest : public ::testing::Test {
protected:
  Clustering cluster(double threshold = 1.5,
                     ClusteringMethod method = ClusteringMethod::kAppendixA) {
    relations = std::make_unique<ShapeRelations>(table);
    return createClusters(table, metric, *relations, threshold, method, names());
  }
  ShapeTable table;
  ShapeMetric metric{table};
  std::unique_ptr<ShapeRelations> relations;
};

TEST_F(ClusteringTest, RelationsAreTransitive) {
  const ShapeId Lh = shape(table, h);
  const ShapeId gh = shape(table, g, {Lh});
  const ShapeId fgh = shape(table, f, {gh});
  const ShapeId Lf = shape(table, f);
  const ShapeRelations rel(table);
  EXPECT_TRUE(rel.isDescendant(Lh, fgh));
  EXPECT_TRUE(rel.isDescendant(gh, fgh));
  EXPECT_FALSE(rel.isDescendant(fgh, Lh));
  EXPECT_TRUE(rel.related(fgh, Lh));
  EXPECT_FALSE(rel.related(fgh, Lf));
  EXPECT_FALSE(rel.isDescendant(fgh, fgh));
}

// Lg, Lf (depth 1), R = [f,{null,Lf}] and A = [f,{null,Lg}] (depth 2), B = [f,{null,Lh}].
//  - R is within the threshold of Lf but is its ancestor: it starts its own cluster;
//  - A joins Lf's cluster; B could join Lf's or R's and takes the first created (Lf's).
TEST_F(ClusteringTest, AppendixAOnConstructedShapes) {
  const ShapeId Lg = shape(table, g);
  const ShapeId Lf = shape(table, f);
  const ShapeId R = shape(table, f, {Lf});
  const ShapeId A = shape(table, f, {Lg});
  const ShapeId Lh = shape(table, h);
  const ShapeId B = shape(table, f, {Lh});
  ASSERT_EQ(metric.distance(B, R), 0.5);
  const Clustering c = cluster();
  // Order: depth ascending, ties by id: Lg, Lf, Lh, then R, A, B.
  ASSERT_EQ(c.clusters.size(), 4u);
  EXPECT_THAT(c.clusters[0].shapes, ElementsAre(Lg));
  EXPECT_THAT(c.clusters[1].shapes, ElementsAre(Lf, A, B));
  EXPECT_THAT(c.clusters[2].shapes, ElementsAre(Lh));
  EXPECT_THAT(c.clusters[3].shapes, ElementsAre(R));
  EXPECT_EQ(c.clusters[1].function, f);
  EXPECT_EQ(c.clusters[1].depth, 3u); // Listing A.1: 1 + deepest member
  EXPECT_EQ(c.clusters[0].depth, 2u);
  EXPECT_EQ(c.clusters[1].max_distance, 0.5);
  EXPECT_TRUE(c.clusters[1].trivial);
  EXPECT_FALSE(c.clusters[3].trivial);
  EXPECT_EQ(c.cluster_of_shape[B], 1u);
  EXPECT_EQ(c.cluster_of_shape[kNullShape], kNoCluster);

  // Ribbons: by depth descending: cluster 1 (3), 3 (3), 0 (2), 2 (2).
  //  1 {Lf,A,B} -> ribbon 0; 3 {R}: ancestor of Lf -> ribbon 1; 0 {Lg}: A in ribbon 0 is its
  //  ancestor -> ribbon 1 (R is unrelated); 2 {Lh}: B is its ancestor -> ribbon 1.
  const auto ribbons = createClusterGroups(c.clusters, {0, 1, 2, 3}, *relations);
  EXPECT_THAT(ribbons, ElementsAre(ElementsAre(1u), ElementsAre(3u, 0u, 2u)));
}

TEST_F(ClusteringTest, ThresholdSeparatesShapes) {
  const ShapeId Lf = shape(table, f);
  const ShapeId A = shape(table, f, {shape(table, g)});
  Clustering c = cluster(0.4);
  EXPECT_NE(c.cluster_of_shape[Lf], c.cluster_of_shape[A]);
  c = cluster(0.5); // "less than or equal to"
  EXPECT_EQ(c.cluster_of_shape[Lf], c.cluster_of_shape[A]);
}

TEST_F(ClusteringTest, EveryMemberMustBeWithinThreshold) {
  // Chains away from [f,{null}]: d = 0.5 per level of the child. C1 is 1.0 from Lf, C2 1.5 from Lf
  // and 0.5 from C1, C3 2.0 from Lf: C3 is within 1.5 of C1 and C2 but not of Lf, so it cannot
  // join their cluster.
  const ShapeId Lf = shape(table, f);
  const ShapeId C1 = shape(table, f, {shape(table, g, {shape(table, h)})});
  const ShapeId C2 = shape(table, f, {shape(table, g, {shape(table, h, {shape(table, g)})})});
  const ShapeId C3 = shape(table, f, {shape(table, g, {shape(table, h, {shape(table, g, {shape(table, h)})})})});
  ASSERT_EQ(metric.distance(Lf, C3), 2.0);
  ASSERT_LE(metric.distance(C1, C3), 1.5);
  const Clustering c = cluster();
  EXPECT_EQ(c.cluster_of_shape[Lf], c.cluster_of_shape[C1]);
  EXPECT_EQ(c.cluster_of_shape[Lf], c.cluster_of_shape[C2]);
  EXPECT_NE(c.cluster_of_shape[Lf], c.cluster_of_shape[C3]);
  EXPECT_EQ(c.clusters[c.cluster_of_shape[Lf]].max_distance, 1.5);
}

TEST_F(ClusteringTest, RibbonsAreSortedByDeepestClusterAscending) {
  // Two unrelated families: a deep one (f over g over h) and a shallow leaf of another function.
  const ShapeId deep = shape(table, f, {shape(table, g, {shape(table, h)})});
  const ShapeId shallow = shape(table, 9);
  const Clustering c = cluster(0.0); // every shape alone
  const auto ribbons = createClusterGroups(
      c.clusters, {c.cluster_of_shape[deep], c.cluster_of_shape[shallow]}, ShapeRelations(table));
  // Unrelated: one ribbon, deepest first inside it.
  ASSERT_EQ(ribbons.size(), 1u);
  EXPECT_THAT(ribbons[0], ElementsAre(c.cluster_of_shape[deep], c.cluster_of_shape[shallow]));
  // The three clusters of the f-g-h chain: each is related to the others, one ribbon each, the
  // shallowest on top.
  std::vector<ClusterId> chain;
  for (ShapeId s = 1; s < table.size(); ++s)
    if (s != shallow) chain.push_back(c.cluster_of_shape[s]);
  const auto stacked = createClusterGroups(c.clusters, chain, ShapeRelations(table));
  ASSERT_EQ(stacked.size(), 3u);
  EXPECT_EQ(c.clusters[stacked[0][0]].depth, 2u);
  EXPECT_EQ(c.clusters[stacked[2][0]].depth, 4u);
}

// A structural spelling of a shape, independent of ids.
std::string spell(const ShapeTable& t, ShapeId id) {
  std::vector<std::string> children;
  for (ShapeId c : t.children(id))
    children.push_back(spell(t, c));
  std::sort(children.begin(), children.end());
  std::string out = "[" + std::to_string(t.function(id));
  for (const auto& c : children)
    out += " " + c;
  return out + "]";
}

std::set<std::set<std::string>> spelledClusters(const ShapeTable& t, const Clustering& c) {
  std::set<std::set<std::string>> out;
  for (const Cluster& cluster : c.clusters) {
    std::set<std::string> members;
    for (ShapeId s : cluster.shapes)
      members.insert(spell(t, s));
    out.insert(members);
  }
  return out;
}

testing::Call randomCall(std::mt19937_64& rng, int depth_left) {
  testing::Call c = testing::call(static_cast<uint32_t>(rng() % 3 + 1));
  const int n = depth_left > 0 ? static_cast<int>(rng() % 4) : 0;
  for (int i = 0; i < n; ++i)
    c.children.push_back(randomCall(rng, depth_left - 1));
  return c;
}

void checkClusterProperty(const ShapeTable& t, ShapeMetric& m, const Clustering& c, double threshold) {
  const ShapeRelations rel(t);
  size_t members = 0;
  for (const Cluster& cluster : c.clusters) {
    members += cluster.shapes.size();
    for (ShapeId a : cluster.shapes)
      for (ShapeId b : cluster.shapes) {
        ASSERT_EQ(t.function(a), cluster.function);
        ASSERT_LE(m.distance(a, b), threshold);
        ASSERT_FALSE(rel.related(a, b));
      }
  }
  EXPECT_EQ(members, t.size() - 1); // every shape in exactly one cluster
}

TEST(ClusteringPropertyTest, BothMethodsKeepTheClusterPropertyAndCompleteLinkageIsOrderInvariant) {
  std::mt19937_64 rng(9);
  std::vector<testing::Call> calls;
  for (int i = 0; i < 400; ++i)
    calls.push_back(randomCall(rng, 3));
  std::set<std::set<std::string>> first;
  for (int permutation = 0; permutation < 3; ++permutation) {
    std::shuffle(calls.begin(), calls.end(), rng);
    ShapeTable t;
    for (const auto& c : calls)
      testing::shapeOf(t, c);
    ShapeMetric m(t);
    const ShapeRelations rel(t);
    for (auto method : {ClusteringMethod::kAppendixA, ClusteringMethod::kCompleteLinkage}) {
      const Clustering c = createClusters(t, m, rel, 1.5, method, names());
      checkClusterProperty(t, m, c, 1.5);
    }
    const auto spelled =
        spelledClusters(t, createClusters(t, m, rel, 1.5, ClusteringMethod::kCompleteLinkage, names()));
    if (permutation == 0)
      first = spelled;
    else
      EXPECT_EQ(spelled, first) << "permutation " << permutation;
  }
}

} // namespace
} // namespace shapetrace::analyzer
