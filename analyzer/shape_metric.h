// The Shape metric of the Shapes paper, exactly as Listing 5.4 computes it, memoised.
//
//   d(null, null)          = 0
//   d([f, C], [g, D])      = r(f, g) + Hausdorff(C, D)        (C and D always contain null)
//   null against a shape   : null is replaced by [-1, {null}]
//   r(f, f) = 0 (also for -1), r(-1, f) = 1/2, r(f, g) = 1 otherwise.
//
// Distances are multiples of 1/2, so doubles hold them exactly. Each pair is computed once; the
// memo is keyed by the unordered pair of shape ids.
#pragma once

#include "shape_table.h"

#include <cstdint>
#include <vector>

namespace shapetrace::analyzer {

// r over F extended with the null function -1 (Sec. 5).
double functionDistance(int64_t f, int64_t g);

class ShapeMetric {
public:
  // `shapes` must outlive the metric; shapes interned later are fine (ids never change).
  explicit ShapeMetric(const ShapeTable& shapes) : shapes_(shapes) {}

  double distance(ShapeId a, ShapeId b);
  size_t memoizedPairs() const { return memo_size_; }

private:
  double compute(ShapeId a, ShapeId b);
  // Half-Hausdorff from the children of `a` (null included) to the children of `b`.
  double halfHausdorff(ShapeId a, ShapeId b);

  // The memo: open addressing on the packed pair (smaller id << 32 | larger id), which is never 0
  // because equal ids are not stored.
  struct MemoSlot {
    uint64_t key = 0;
    double value = 0;
  };
  MemoSlot& slotOf(uint64_t key);
  void growMemo();

  const ShapeTable& shapes_;
  std::vector<MemoSlot> memo_ = std::vector<MemoSlot>(1024);
  size_t memo_size_ = 0;
};

} // namespace shapetrace::analyzer
