// The Shape metric against the paper: hand-computed distances (null cases included), Fig. 4.1's
// pairs, the metric axioms and Theorem 6.1 over thousands of random shapes, and a literal
// re-implementation of Listing 5.4 on explicit shape trees as an independent reference.
#include "shape_metric.h"
#include "trace_builder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <set>

namespace shapetrace::analyzer {
namespace {

using testing::call;
using testing::Call;
using testing::shape;
using testing::shapeOf;

constexpr uint32_t f = 1, g = 2, h = 3, k = 4;

class ShapeMetricTest : public ::testing::Test {
protected:
  ShapeTable table;
  ShapeMetric metric{table};
  ShapeId leaf(uint32_t function) { return shape(table, function); }
};

TEST_F(ShapeMetricTest, FunctionDistanceIsZeroHalfOrOne) {
  EXPECT_EQ(functionDistance(f, f), 0.0);
  EXPECT_EQ(functionDistance(kNullFunction, kNullFunction), 0.0);
  EXPECT_EQ(functionDistance(kNullFunction, f), 0.5);
  EXPECT_EQ(functionDistance(g, kNullFunction), 0.5);
  EXPECT_EQ(functionDistance(f, g), 1.0);
}

TEST_F(ShapeMetricTest, NullCases) {
  EXPECT_EQ(metric.distance(kNullShape, kNullShape), 0.0);
  // [f,{null}] against null = [-1,{null}]: r(f,-1) + H({null},{null}) = 0.5.
  EXPECT_EQ(metric.distance(leaf(f), kNullShape), 0.5);
  EXPECT_EQ(metric.distance(kNullShape, leaf(f)), 0.5);
  // [f,{null,[g,{null}]}] against null: 0.5 + max(d([g,{null}], null), d(null,null)) = 1.0.
  EXPECT_EQ(metric.distance(shape(table, f, {leaf(g)}), kNullShape), 1.0);
  // A chain of depth 3 is 0.5 per level away from null.
  const ShapeId chain = shape(table, f, {shape(table, g, {leaf(h)})});
  EXPECT_EQ(table.depth(chain), 3u);
  EXPECT_EQ(metric.distance(chain, kNullShape), 1.5);
}

TEST_F(ShapeMetricTest, HandComputedDistances) {
  const ShapeId Lf = leaf(f), Lg = leaf(g), Lh = leaf(h), Lk = leaf(k);
  EXPECT_EQ(metric.distance(Lf, Lg), 1.0);
  EXPECT_EQ(metric.distance(Lf, Lf), 0.0);
  const ShapeId A = shape(table, f, {Lg});     // [f,{null,[g,{null}]}]
  const ShapeId B = shape(table, f, {Lh});     // [f,{null,[h,{null}]}]
  const ShapeId C = shape(table, g, {Lg});     // [g,{null,[g,{null}]}]
  const ShapeId E = shape(table, f, {Lg, Lh}); // [f,{null,[g],[h]}]
  EXPECT_EQ(metric.distance(A, Lf), 0.5); // one missing leaf
  EXPECT_EQ(metric.distance(A, B), 0.5);  // a leaf against another: nearest is null, 0.5 away
  EXPECT_EQ(metric.distance(A, C), 1.0);  // same children, other base function
  EXPECT_EQ(metric.distance(E, A), 0.5);
  EXPECT_EQ(metric.distance(E, shape(table, f, {Lk})), 0.5);
  // [f,{null,[g,{null,[h]}]}] against [f,{null,[g]}]: 0 + H = 0.5 (g(h) is nearest to g).
  const ShapeId gh = shape(table, g, {Lh});
  const ShapeId D = shape(table, f, {gh});
  EXPECT_EQ(metric.distance(D, A), 0.5);
  // [f,{null,[g]}] against [h,{null,[g,{null,[k]}]}]: r = 1, H = 0.5.
  EXPECT_EQ(metric.distance(A, shape(table, h, {shape(table, g, {Lk})})), 1.5);
  // [f,{null,[g,{null,[h]}]}] against [f,{null,[k]}]: g(h) is 1.0 from null, 1.5 from [k].
  EXPECT_EQ(metric.distance(D, shape(table, f, {Lk})), 1.0);
}

// Fig. 4.1a/b: a different number of repetitions of the same sub-calls gives the same shape.
TEST_F(ShapeMetricTest, RepetitionInvarianceFigure41ab) {
  const uint32_t pink = 10, lavender = 11, dark_pink = 12, blue = 13, brown = 14;
  auto body = [&](int repeats) {
    std::vector<Call> children;
    for (int i = 0; i < repeats; ++i) {
      children.push_back(call(lavender));
      children.push_back(call(dark_pink, {call(blue)}));
      children.push_back(call(blue));
    }
    return call(pink, std::move(children));
  };
  EXPECT_EQ(metric.distance(shapeOf(table, body(2)), shapeOf(table, body(3))), 0.0);
  EXPECT_EQ(shapeOf(table, body(2)), shapeOf(table, body(7)));

  auto browns = [&](int repeats) {
    return call(pink, std::vector<Call>(static_cast<size_t>(repeats), call(brown)));
  };
  EXPECT_EQ(metric.distance(shapeOf(table, browns(2)), shapeOf(table, browns(5))), 0.0);
}

// Fig. 4.1c: one inconspicuous extra call to peach gives a small distance.
TEST_F(ShapeMetricTest, MissingCallGivesSmallDistanceFigure41c) {
  const uint32_t top = 20, a = 21, b = 22, peach = 23;
  const Call with = call(top, {call(a, {call(b), call(peach)}), call(b)});
  const Call without = call(top, {call(a, {call(b)}), call(b)});
  EXPECT_EQ(metric.distance(shapeOf(table, with), shapeOf(table, without)), 0.5);
  const Call other = call(top, {call(30, {call(31, {call(32)})})});
  EXPECT_GT(metric.distance(shapeOf(table, with), shapeOf(table, other)), 0.5);
}

// ---- Listing 5.4 written literally on explicit trees, as an independent reference. ----

struct TreeShape {
  int64_t function; // -1 for the null replacement
  std::vector<std::shared_ptr<const TreeShape>> children; // nullptr is null
};
using TreePtr = std::shared_ptr<const TreeShape>;

double treeDistance(const TreePtr& a, const TreePtr& b);

double treeHausdorff(const std::vector<TreePtr>& c1, const std::vector<TreePtr>& c2) {
  auto half = [](const std::vector<TreePtr>& from, const std::vector<TreePtr>& to) {
    double furthest = 0;
    for (const auto& x : from) {
      double nearest = INFINITY;
      for (const auto& y : to)
        nearest = std::min(nearest, treeDistance(x, y));
      furthest = std::max(furthest, nearest);
    }
    return furthest;
  };
  return std::max(half(c1, c2), half(c2, c1));
}

double treeDistance(const TreePtr& a0, const TreePtr& b0) {
  if (!a0 && !b0) return 0;
  static const TreePtr kNullReplacement =
      std::make_shared<TreeShape>(TreeShape{kNullFunction, {nullptr}});
  const TreePtr a = a0 ? a0 : kNullReplacement;
  const TreePtr b = b0 ? b0 : kNullReplacement;
  return functionDistance(a->function, b->function) + treeHausdorff(a->children, b->children);
}

TreePtr treeOf(const ShapeTable& table, ShapeId id) {
  if (id == kNullShape) return nullptr;
  auto node = std::make_shared<TreeShape>();
  node->function = table.function(id);
  node->children.push_back(nullptr); // children always contain null
  for (ShapeId child : table.children(id))
    node->children.push_back(treeOf(table, child));
  return node;
}

// Random Function Call Instances over a small alphabet so that shapes collide and differ a little.
Call randomCall(std::mt19937_64& rng, int depth_left) {
  std::uniform_int_distribution<uint32_t> function(1, 4);
  std::uniform_int_distribution<int> children(0, depth_left > 0 ? 3 : 0);
  Call c = call(function(rng));
  const int n = children(rng);
  for (int i = 0; i < n; ++i)
    c.children.push_back(randomCall(rng, depth_left - 1));
  return c;
}

std::vector<ShapeId> randomShapes(ShapeTable& table, std::mt19937_64& rng, size_t count) {
  std::vector<ShapeId> out{kNullShape};
  while (out.size() < count)
    out.push_back(shapeOf(table, randomCall(rng, 4)));
  return out;
}

TEST_F(ShapeMetricTest, AgreesWithLiteralListing54OnRandomShapes) {
  std::mt19937_64 rng(1);
  const auto shapes = randomShapes(table, rng, 300);
  std::uniform_int_distribution<size_t> pick(0, shapes.size() - 1);
  for (int i = 0; i < 2000; ++i) {
    const ShapeId a = shapes[pick(rng)], b = shapes[pick(rng)];
    ASSERT_EQ(metric.distance(a, b), treeDistance(treeOf(table, a), treeOf(table, b)))
        << "shapes " << a << " and " << b;
  }
}

TEST_F(ShapeMetricTest, MetricAxiomsOnThousandsOfRandomShapes) {
  std::mt19937_64 rng(2);
  const auto shapes = randomShapes(table, rng, 3000);
  std::uniform_int_distribution<size_t> pick(0, shapes.size() - 1);
  for (int i = 0; i < 20000; ++i) {
    const ShapeId x = shapes[pick(rng)], y = shapes[pick(rng)], z = shapes[pick(rng)];
    const double xy = metric.distance(x, y);
    ASSERT_EQ(metric.distance(x, x), 0.0);
    // Interning is canonical, so distinct ids are distinct shapes and must be apart.
    ASSERT_EQ(xy == 0.0, x == y) << x << " " << y;
    ASSERT_EQ(xy, metric.distance(y, x));
    ASSERT_LE(metric.distance(x, z), xy + metric.distance(y, z));
    ASSERT_EQ(std::fmod(xy * 2, 1.0), 0.0) << "distances are multiples of 1/2";
  }
}

// Replaces the descendant at `path` of `c` by `replacement`; returns the instance replaced.
Call replaceAt(Call& c, const std::vector<size_t>& path, size_t level, const Call& replacement) {
  Call& child = c.children[path[level]];
  if (level + 1 == path.size()) {
    Call old = child;
    child = replacement;
    return old;
  }
  return replaceAt(child, path, level + 1, replacement);
}

// Theorem 6.1: exchanging one descendant for another at difference p changes the whole by <= p.
TEST_F(ShapeMetricTest, Theorem61OnRandomInstances) {
  std::mt19937_64 rng(3);
  int checked = 0;
  for (int trial = 0; trial < 5000; ++trial) {
    Call k1 = randomCall(rng, 4);
    if (k1.children.empty()) continue;
    std::vector<size_t> path;
    const Call* at = &k1;
    do {
      path.push_back(std::uniform_int_distribution<size_t>(0, at->children.size() - 1)(rng));
      at = &at->children[path.back()];
    } while (!at->children.empty() && rng() % 2 == 0);
    Call k2 = k1;
    const Call replacement = randomCall(rng, 2);
    const Call old = replaceAt(k2, path, 0, replacement);
    const double p = metric.distance(shapeOf(table, old), shapeOf(table, replacement));
    ASSERT_LE(metric.distance(shapeOf(table, k1), shapeOf(table, k2)), p);
    ++checked;
  }
  EXPECT_GT(checked, 3000);
}

} // namespace
} // namespace shapetrace::analyzer
