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
  if (MemoSlot& slot = slotOf(key); slot.key == key) return slot.value;
  const double d = compute(a, b); // recursion may grow the memo: look the slot up again after
  MemoSlot& slot = slotOf(key);
  slot = {key, d};
  if (++memo_size_ * 2 > memo_.size()) growMemo();
  return d;
}

ShapeMetric::MemoSlot& ShapeMetric::slotOf(uint64_t key) {
  const size_t mask = memo_.size() - 1;
  size_t i = (key * 0x9E3779B97F4A7C15ull) >> 20 & mask;
  while (memo_[i].key != 0 && memo_[i].key != key)
    i = (i + 1) & mask;
  return memo_[i];
}

void ShapeMetric::growMemo() {
  std::vector<MemoSlot> old(memo_.size() * 2);
  old.swap(memo_);
  for (const MemoSlot& slot : old)
    if (slot.key != 0) slotOf(slot.key) = slot;
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
