// The sequence numbers of a thread's batches received so far, as sorted, disjoint [first, last]
// runs: one run per gap or late batch, so memory follows the batches received, never the numbers'
// range. Tells a batch received twice (a duplicated frame or segment) from a new one; shared by
// the analyzer (call_stack.h's BatchSequence) and `info`.
#pragma once

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <vector>

namespace shapetrace::wire {

class SequenceRuns {
public:
  bool contains(uint64_t sequence) const {
    const auto after = firstAfter(sequence);
    return after != runs_.begin() && sequence <= std::prev(after)->last;
  }
  // Adds `sequence`; false when it was there already.
  bool insert(uint64_t sequence) {
    if (!runs_.empty() && runs_.back().last + 1 == sequence) [[likely]] {
      runs_.back().last = sequence;
      return true;
    }
    if (contains(sequence)) return false;
    auto at = runs_.insert(firstAfter(sequence), Run{sequence, sequence});
    // Join the neighbours it now touches.
    if (auto next = std::next(at); next != runs_.end() && next->first == sequence + 1) {
      at->last = next->last;
      at = std::prev(runs_.erase(next));
    }
    if (at != runs_.begin() && std::prev(at)->last + 1 == sequence) {
      std::prev(at)->last = at->last;
      runs_.erase(at);
    }
    return true;
  }
  size_t runs() const { return runs_.size(); }

private:
  struct Run {
    uint64_t first, last;
  };
  std::vector<Run>::const_iterator firstAfter(uint64_t sequence) const {
    return std::upper_bound(runs_.begin(), runs_.end(), sequence,
                            [](uint64_t s, const Run& run) { return s < run.first; });
  }
  std::vector<Run>::iterator firstAfter(uint64_t sequence) {
    return std::upper_bound(runs_.begin(), runs_.end(), sequence,
                            [](uint64_t s, const Run& run) { return s < run.first; });
  }

  std::vector<Run> runs_;
};

} // namespace shapetrace::wire
