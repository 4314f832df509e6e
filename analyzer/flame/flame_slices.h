// The flame tree's values per time slice, so that the flame graph of any time window is a sum of
// slices (trees add up exactly: the same node's calls and times add).
//
// A finished call is counted in the slice that holds its end (its exit time): a window's tree holds
// exactly the calls that finished in it, as the live page's recent windows do. Slices are 2^shift
// nanoseconds wide, aligned on absolute time (slice = t >> shift), like the occurrence timeline
// (timeline.h): a thread keeps at most `max_slices` of them, and when a call ends past the last one
// the width doubles and neighbouring slices merge. Slices of different threads therefore re-slice
// exactly onto a common (coarser) width. The current slice is a dense array over the thread's nodes
// (one add per call, no hash look-up); a closed slice keeps only the nodes it touched. When
// the closed slices hold more than `max_entries` (node, slice) entries, the width doubles again, so
// memory stays within max(max_entries, nodes) entries whatever the run's length.
#pragma once

#include "flame/flame_tree.h"

#include <cstdint>
#include <vector>

namespace shapetrace::analyzer {

struct FlameValues {
  uint64_t calls = 0;
  uint64_t measured = 0;
  uint64_t total_ns = 0;
  uint64_t self_ns = 0;
  void add(const FlameValues& o) {
    calls += o.calls;
    measured += o.measured;
    total_ns += o.total_ns;
    self_ns += o.self_ns;
  }
};

struct FlameSlice {
  uint64_t index = 0; // covers [index << shift, (index + 1) << shift)
  std::vector<uint32_t> nodes; // ascending in slices(); in order of first touch while kept
  std::vector<FlameValues> values;
};

class FlameSlices {
public:
  static constexpr uint32_t kDefaultMaxSlices = 64;
  static constexpr size_t kDefaultMaxEntries = size_t{1} << 21;
  static constexpr unsigned kFirstShift = 10; // 1.024 us, widened as the thread's span grows

  explicit FlameSlices(uint32_t max_slices = kDefaultMaxSlices,
                       size_t max_entries = kDefaultMaxEntries);

  // One finished call of `node`, ended at `end_ns`; `measured` calls add their times.
  void add(uint32_t node, uint64_t end_ns, bool measured, uint64_t total_ns, uint64_t self_ns) {
    if ((end_ns >> shift_) != current_ || !started_) advance(end_ns);
    if (node >= dense_.size()) dense_.resize(std::max<size_t>(node + 1, dense_.size() * 2));
    FlameValues& v = dense_[node];
    if (v.calls == 0) touched_.push_back(node);
    ++v.calls;
    if (!measured) return;
    ++v.measured;
    v.total_ns += total_ns;
    v.self_ns += self_ns;
  }

  // Closed slices plus the current one, in time order, at width 2^shift(), nodes ascending.
  std::vector<FlameSlice> slices() const;
  unsigned shift() const { return shift_; }
  uint32_t maxSlices() const { return max_slices_; }

  // Slices re-sliced onto width 2^shift (shift >= their own): neighbours merge, values add (a
  // merged slice keeps the first one's node order, then the new nodes of the next).
  static std::vector<FlameSlice> coarsened(std::vector<FlameSlice> slices, unsigned from_shift,
                                           unsigned to_shift);
  // (node, slice) entries over the slices.
  static size_t entries(const std::vector<FlameSlice>& slices);

private:
  void advance(uint64_t end_ns);
  FlameSlice closeCurrent() const;
  void widen();

  uint32_t max_slices_;
  size_t max_entries_;
  unsigned shift_ = kFirstShift;
  bool started_ = false;
  uint64_t current_ = 0;
  std::vector<FlameValues> dense_;  // the current slice, by node
  std::vector<uint32_t> touched_;   // its nodes with calls
  std::vector<FlameSlice> closed_;  // earlier slices, in time order
  size_t closed_entries_ = 0;
};

} // namespace shapetrace::analyzer
