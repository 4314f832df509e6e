// Bounded-resolution occurrence timeline.
#include "timeline.h"

#include <algorithm>

namespace shapetrace::analyzer {

OccurrenceTimeline::OccurrenceTimeline(uint32_t max_bins) : max_bins_(std::max(max_bins, 2u)) {}

void OccurrenceTimeline::start(uint64_t time_ns) {
  started_ = true;
  first_bin_ = time_ns >> shift_;
}

const std::vector<TimelineCell>& OccurrenceTimeline::cells(ShapeId shape) const {
  static const std::vector<TimelineCell> kEmpty;
  return shape < per_shape_.size() ? per_shape_[shape] : kEmpty;
}

void OccurrenceTimeline::addCell(std::vector<TimelineCell>& cells, uint64_t bin, uint64_t count,
                                 uint64_t busy_ns) {
  if (!cells.empty() && cells.back().bin == bin) {
    cells.back().count += count;
    cells.back().busy_ns += busy_ns;
    return;
  }
  if (cells.empty() || cells.back().bin < bin) {
    cells.push_back({bin, count, busy_ns});
    return;
  }
  // Out of order only after a resynchronisation closed calls late; keep the cells sorted anyway.
  auto it = std::lower_bound(cells.begin(), cells.end(), bin,
                             [](const TimelineCell& c, uint64_t b) { return c.bin < b; });
  if (it != cells.end() && it->bin == bin) {
    it->count += count;
    it->busy_ns += busy_ns;
  } else {
    cells.insert(it, {bin, count, busy_ns});
  }
}

void OccurrenceTimeline::recordSlow(ShapeId shape, uint64_t start_ns, uint64_t end_ns) {
  if (!started_) start(start_ns);
  end_ns = std::max(end_ns, start_ns);
  const uint64_t last_ns = end_ns > start_ns ? end_ns - 1 : start_ns;
  while ((last_ns >> shift_) - first_bin_ >= max_bins_)
    coarsenOnce();
  if (shape >= per_shape_.size()) per_shape_.resize(shape + 1);
  auto& cells = per_shape_[shape];
  const uint64_t first = start_ns >> shift_;
  const uint64_t last = last_ns >> shift_;
  if (first == last) {
    addCell(cells, first, 1, end_ns - start_ns);
    return;
  }
  for (uint64_t bin = first; bin <= last; ++bin) {
    const uint64_t from = std::max(start_ns, bin << shift_);
    const uint64_t to = std::min(end_ns, (bin + 1) << shift_);
    addCell(cells, bin, bin == first ? 1 : 0, to - from);
  }
}

void OccurrenceTimeline::coarsenOnce() {
  ++shift_;
  first_bin_ >>= 1;
  for (auto& cells : per_shape_) {
    size_t out = 0;
    for (size_t i = 0; i < cells.size(); ++i) {
      const uint64_t bin = cells[i].bin >> 1;
      if (out > 0 && cells[out - 1].bin == bin) {
        cells[out - 1].count += cells[i].count;
        cells[out - 1].busy_ns += cells[i].busy_ns;
      } else {
        cells[out++] = {bin, cells[i].count, cells[i].busy_ns};
      }
    }
    cells.resize(out);
  }
}

OccurrenceTimeline OccurrenceTimeline::restored(uint32_t max_bins, unsigned shift, bool started,
                                                uint64_t first_bin,
                                                std::vector<std::vector<TimelineCell>> per_shape) {
  OccurrenceTimeline timeline(max_bins);
  timeline.shift_ = shift;
  timeline.started_ = started;
  timeline.first_bin_ = first_bin;
  timeline.per_shape_ = std::move(per_shape);
  return timeline;
}

void OccurrenceTimeline::coarsenTo(unsigned shift) {
  while (shift_ < shift)
    coarsenOnce();
}

uint64_t OccurrenceTimeline::lastBin() const {
  uint64_t last = first_bin_;
  for (const auto& cells : per_shape_)
    if (!cells.empty()) last = std::max(last, cells.back().bin);
  return last;
}

void OccurrenceTimeline::add(OccurrenceTimeline other, std::span<const ShapeId> shape_map) {
  if (!other.started_) return;
  const unsigned shift = std::max(shift_, other.shift_);
  coarsenTo(shift);
  other.coarsenTo(shift);
  uint64_t last = std::max(started_ ? lastBin() : 0, other.lastBin());
  first_bin_ = started_ ? std::min(first_bin_, other.first_bin_) : other.first_bin_;
  started_ = true;
  while (last - first_bin_ >= max_bins_) {
    coarsenOnce();
    other.coarsenOnce();
    last >>= 1;
  }
  std::vector<TimelineCell> sum;
  for (ShapeId local = 0; local < other.per_shape_.size(); ++local) {
    const auto& theirs = other.per_shape_[local];
    if (theirs.empty()) continue;
    const ShapeId shape = shape_map[local];
    if (shape >= per_shape_.size()) per_shape_.resize(shape + 1);
    auto& ours = per_shape_[shape];
    // Both in bin order: one pass.
    sum.clear();
    auto a = ours.cbegin();
    auto b = theirs.cbegin();
    while (a != ours.end() || b != theirs.end()) {
      if (b == theirs.end() || (a != ours.end() && a->bin < b->bin)) {
        sum.push_back(*a++);
      } else if (a == ours.end() || b->bin < a->bin) {
        sum.push_back(*b++);
      } else {
        sum.push_back({a->bin, a->count + b->count, a->busy_ns + b->busy_ns});
        ++a;
        ++b;
      }
    }
    ours.swap(sum);
  }
}

} // namespace shapetrace::analyzer
