// Per-time-slice values of a thread's flame tree.
#include "flame_slices.h"

#include <algorithm>
#include <map>

namespace shapetrace::analyzer {

FlameSlices::FlameSlices(uint32_t max_slices, size_t max_entries)
    : max_slices_(std::max<uint32_t>(max_slices, 1)), max_entries_(max_entries) {}

FlameSlice FlameSlices::closeCurrent() const {
  FlameSlice slice;
  slice.index = current_;
  slice.nodes = touched_;
  std::sort(slice.nodes.begin(), slice.nodes.end());
  slice.values.reserve(slice.nodes.size());
  for (const uint32_t node : slice.nodes)
    slice.values.push_back(dense_[node]);
  return slice;
}

void FlameSlices::advance(uint64_t end_ns) {
  if (!started_) {
    started_ = true;
    current_ = end_ns >> shift_;
  }
  // An end before the current slice (timestamps are clamped, so only after a widening rounds the
  // current slice down) stays in the current slice.
  if ((end_ns >> shift_) <= current_) return;
  if (!touched_.empty()) {
    FlameSlice slice = closeCurrent();
    closed_entries_ += slice.nodes.size();
    closed_.push_back(std::move(slice));
    for (const uint32_t node : touched_)
      dense_[node] = {};
    touched_.clear();
  }
  current_ = end_ns >> shift_;
  const auto first = [&] { return closed_.empty() ? current_ : closed_.front().index; };
  while ((current_ - first() >= max_slices_ || closed_entries_ > max_entries_) && shift_ < 62)
    widen();
}

void FlameSlices::widen() {
  closed_ = coarsened(std::move(closed_), shift_, shift_ + 1);
  closed_entries_ = entries(closed_);
  ++shift_;
  current_ >>= 1;
  // The current slice may now be the last closed one's: reopen it so that it keeps one slice.
  if (!closed_.empty() && closed_.back().index == current_) {
    FlameSlice last = std::move(closed_.back());
    closed_.pop_back();
    closed_entries_ -= last.nodes.size();
    for (size_t i = 0; i < last.nodes.size(); ++i) {
      FlameValues& v = dense_[last.nodes[i]];
      if (v.calls == 0) touched_.push_back(last.nodes[i]);
      v.add(last.values[i]);
    }
  }
}

std::vector<FlameSlice> FlameSlices::slices() const {
  std::vector<FlameSlice> out = closed_;
  if (!touched_.empty()) out.push_back(closeCurrent());
  return out;
}

size_t FlameSlices::entries(const std::vector<FlameSlice>& slices) {
  size_t n = 0;
  for (const FlameSlice& s : slices)
    n += s.nodes.size();
  return n;
}

std::vector<FlameSlice> FlameSlices::coarsened(std::vector<FlameSlice> slices, unsigned from_shift,
                                               unsigned to_shift) {
  if (to_shift <= from_shift) return slices;
  const unsigned by = to_shift - from_shift;
  std::vector<FlameSlice> out;
  for (FlameSlice& s : slices) {
    const uint64_t index = s.index >> by;
    if (out.empty() || out.back().index != index) {
      s.index = index;
      out.push_back(std::move(s));
      continue;
    }
    // Merge two sorted node lists.
    FlameSlice& into = out.back();
    FlameSlice merged;
    merged.index = index;
    size_t a = 0, b = 0;
    while (a < into.nodes.size() || b < s.nodes.size()) {
      if (b == s.nodes.size() || (a < into.nodes.size() && into.nodes[a] < s.nodes[b])) {
        merged.nodes.push_back(into.nodes[a]);
        merged.values.push_back(into.values[a++]);
      } else if (a == into.nodes.size() || s.nodes[b] < into.nodes[a]) {
        merged.nodes.push_back(s.nodes[b]);
        merged.values.push_back(s.values[b++]);
      } else {
        merged.nodes.push_back(into.nodes[a]);
        FlameValues v = into.values[a++];
        v.add(s.values[b++]);
        merged.values.push_back(v);
      }
    }
    into = std::move(merged);
  }
  return out;
}

} // namespace shapetrace::analyzer
