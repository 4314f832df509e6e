// Per-time-slice values of a thread's flame tree.
#include "flame/flame_slices.h"

#include <algorithm>
#include <map>

namespace shapetrace::analyzer {

FlameSlices::FlameSlices(uint32_t max_slices, size_t max_entries)
    : max_slices_(std::max<uint32_t>(max_slices, 1)), max_entries_(max_entries) {}

FlameSlice FlameSlices::closeCurrent() const {
  // Nodes in order of first touch: sorting every closed slice cost more than the calls' adds
  // (slices() sorts once, at the end).
  FlameSlice slice;
  slice.index = current_;
  slice.nodes = touched_;
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
  for (FlameSlice& slice : out) {
    std::vector<size_t> order(slice.nodes.size());
    for (size_t i = 0; i < order.size(); ++i)
      order[i] = i;
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return slice.nodes[a] < slice.nodes[b]; });
    FlameSlice sorted;
    sorted.index = slice.index;
    for (const size_t i : order) {
      sorted.nodes.push_back(slice.nodes[i]);
      sorted.values.push_back(slice.values[i]);
    }
    slice = std::move(sorted);
  }
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
  // Where each node sits in the slice being merged into (kAbsent: not there), reset after each.
  constexpr uint32_t kAbsent = UINT32_MAX;
  uint32_t max_node = 0;
  for (const FlameSlice& s : slices)
    for (const uint32_t node : s.nodes)
      max_node = std::max(max_node, node);
  std::vector<uint32_t> position(slices.empty() ? 0 : size_t{max_node} + 1, kAbsent);
  std::vector<FlameSlice> out;
  auto forget = [&](const FlameSlice& s) {
    for (const uint32_t node : s.nodes)
      position[node] = kAbsent;
  };
  for (FlameSlice& s : slices) {
    const uint64_t index = s.index >> by;
    if (out.empty() || out.back().index != index) {
      if (!out.empty()) forget(out.back());
      s.index = index;
      out.push_back(std::move(s));
      for (size_t i = 0; i < out.back().nodes.size(); ++i)
        position[out.back().nodes[i]] = static_cast<uint32_t>(i);
      continue;
    }
    FlameSlice& into = out.back();
    for (size_t i = 0; i < s.nodes.size(); ++i) {
      uint32_t& at = position[s.nodes[i]];
      if (at == kAbsent) {
        at = static_cast<uint32_t>(into.nodes.size());
        into.nodes.push_back(s.nodes[i]);
        into.values.push_back(s.values[i]);
      } else {
        into.values[at].add(s.values[i]);
      }
    }
  }
  return out;
}

} // namespace shapetrace::analyzer
