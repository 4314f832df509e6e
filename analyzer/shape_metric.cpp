// Listing 5.4 of the Shapes paper.
#include "shape_metric.h"

#include <algorithm>
#include <limits>

namespace shapetrace::analyzer {

double functionDistance(int64_t f, int64_t g) {
  if (f == g) return 0.0; // this includes the case when both are -1
  if (f == kNullFunction || g == kNullFunction) return 0.5;
  return 1.0;
}

double ShapeMetric::distance(ShapeId a, ShapeId b) {
  if (a == b) return 0.0; // d is a metric: d(x, x) = 0, and Listing 5.4 gives 0 too
  if (a > b) std::swap(a, b);
  const uint64_t key = (uint64_t{a} << 32) | b;
  if (auto it = memo_.find(key); it != memo_.end()) return it->second;
  const double d = compute(a, b);
  memo_.emplace(key, d);
  return d;
}

double ShapeMetric::compute(ShapeId a, ShapeId b) {
  // A null argument stands for [-1, {null}]: base function -1, children {null}.
  const int64_t fa = a == kNullShape ? kNullFunction : int64_t{shapes_.function(a)};
  const int64_t fb = b == kNullShape ? kNullFunction : int64_t{shapes_.function(b)};
  return functionDistance(fa, fb) + std::max(halfHausdorff(a, b), halfHausdorff(b, a));
}

double ShapeMetric::halfHausdorff(ShapeId a, ShapeId b) {
  // Children of a shape: {null} plus its stored children; of null (as [-1, {null}]): {null}.
  // Stored children never contain null, so null is handled explicitly on both sides.
  const auto children_a = a == kNullShape ? std::span<const ShapeId>{} : shapes_.children(a);
  const auto children_b = b == kNullShape ? std::span<const ShapeId>{} : shapes_.children(b);
  auto nearest_in_b = [&](ShapeId x) {
    double best = distance(x, kNullShape); // null is always a child of b
    for (ShapeId y : children_b) {
      if (best == 0.0) break;
      best = std::min(best, distance(x, y));
    }
    return best;
  };
  double furthest = 0.0; // from null in a: its nearest in b is null itself, at distance 0
  for (ShapeId x : children_a)
    furthest = std::max(furthest, nearest_in_b(x));
  return furthest;
}

} // namespace shapetrace::analyzer
