// Occurrences of shapes on a thread's timeline at bounded resolution (Sec. 8.2 of the Shapes paper).
//
// Time is cut into bins of 2^shift nanoseconds, aligned on absolute time (bin = t >> shift), and a
// thread keeps at most `max_bins` of them: when a call ends past the last bin, the bin width
// doubles and neighbouring bins merge. So a run of any length is summarised in memory bounded by
// max_bins x distinct shapes, and two timelines re-bin exactly onto a common (coarser) width.
//
// A cell holds, for one shape and one bin, the number of calls that started in the bin and the
// nanoseconds of those calls' time that fall into the bin (a call spanning bins spreads its time).
// Calls of one shape never nest (a shape is never its own descendant), so they finish in start
// order and each shape's cells are appended in bin order.
#pragma once

#include "shape_table.h"

#include <cstdint>
#include <span>
#include <vector>

namespace shapetrace::analyzer {

struct TimelineCell {
  uint64_t bin = 0; // absolute: the bin covers [bin << shift, (bin + 1) << shift)
  uint64_t count = 0;
  uint64_t busy_ns = 0;
  friend bool operator==(const TimelineCell&, const TimelineCell&) = default;
};

class OccurrenceTimeline {
public:
  explicit OccurrenceTimeline(uint32_t max_bins = 1024);

  // Sets the first time the thread is known to be alive; calls never start earlier.
  void start(uint64_t time_ns);
  bool started() const { return started_; }
  void record(ShapeId shape, uint64_t start_ns, uint64_t end_ns) {
    // Inline fast path, taken by most calls: within one bin that is already the shape's last.
    if (started_ && end_ns > start_ns && shape < per_shape_.size()) {
      const uint64_t bin = start_ns >> shift_;
      auto& cells = per_shape_[shape];
      if (!cells.empty() && cells.back().bin == bin && ((end_ns - 1) >> shift_) == bin) {
        ++cells.back().count;
        cells.back().busy_ns += end_ns - start_ns;
        return;
      }
    }
    recordSlow(shape, start_ns, end_ns);
  }
  // A timeline as another process wrote it down (a host's summary, fleet/summary.h): its state and
  // each shape's cells, in bin order.
  static OccurrenceTimeline restored(uint32_t max_bins, unsigned shift, bool started,
                                     uint64_t first_bin,
                                     std::vector<std::vector<TimelineCell>> per_shape);
  // Re-bins onto a wider width (shift >= shift()), as merging with other threads needs.
  void coarsenTo(unsigned shift);
  // Adds another timeline's cells (an ended thread folded into its process' folded threads,
  // thread_fold.h), its shapes renamed by `shape_map` (its id -> this timeline's), at the wider
  // of the two widths, and wider still while the two together span more than the maximum bins.
  void add(OccurrenceTimeline other, std::span<const ShapeId> shape_map);

  unsigned shift() const { return shift_; }
  uint64_t firstBin() const { return first_bin_; }
  uint32_t maxBins() const { return max_bins_; }
  // Cells of `shape` in bin order (empty when the shape never occurred here).
  const std::vector<TimelineCell>& cells(ShapeId shape) const;
  size_t shapeSlots() const { return per_shape_.size(); }

private:
  void recordSlow(ShapeId shape, uint64_t start_ns, uint64_t end_ns);
  void coarsenOnce();
  void addCell(std::vector<TimelineCell>& cells, uint64_t bin, uint64_t count, uint64_t busy_ns);
  uint64_t lastBin() const;

  uint32_t max_bins_;
  unsigned shift_ = 0;
  bool started_ = false;
  uint64_t first_bin_ = 0;
  std::vector<std::vector<TimelineCell>> per_shape_;
};

} // namespace shapetrace::analyzer
