// Reiss & Renieris' aggregating compactions (002, docs/summaries.md):
//
// - N-level call compaction: at the start of each call, for 1 <= i <= N, the i-tuple of the call
//   and the i - 1 innermost calls open around it (gprof's pairs for N = 2), each tuple with the
//   count, sum and sum of squares of its calls' durations (for means and standard deviations).
// - Interval compaction: the execution cut into at most n intervals of equal width, and in each
//   one, per function, its inclusive time (time with the function on the stack, a recursion
//   counted once), its exclusive time (time with it on top of the stack) and the calls it started.
//
// Both take the calls of one sequence at a time (enter, then the finished call, innermost first);
// the open calls of a sequence are the callers they look at.
#pragma once

#include "id_table.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <deque>
#include <unordered_map>
#include <vector>

namespace shapetrace::analyzer::summaries {

class NLevelCompaction {
public:
  struct Entry {
    std::vector<uint32_t> tuple; // outermost caller first, the call itself last
    uint64_t count = 0;          // calls
    uint64_t measured = 0;       // calls with their own exit: the ones timed
    uint64_t sum_ns = 0;
    unsigned __int128 sum_squares = 0;
    double mean() const;
    double sd() const; // population
  };

  explicit NLevelCompaction(uint32_t levels);
  void enter(uint32_t function);
  void exit(uint64_t duration_ns, bool measured);
  void reset() { stack_.clear(); } // the sequence ended, or a gap discarded its open calls

  // Every tuple, by total time (then count, then tuple).
  std::vector<Entry> entries() const;
  uint32_t levels() const { return levels_; }

private:
  uint32_t levels_;
  std::vector<uint32_t> stack_;
  std::vector<Entry> entries_;
  std::unordered_map<uint64_t, std::vector<uint32_t>> by_hash_; // tuple hash -> entries
};

class IntervalCompaction {
public:
  struct Cell {
    uint64_t inclusive_ns = 0;
    uint64_t exclusive_ns = 0;
    uint64_t calls = 0;
  };

  explicit IntervalCompaction(uint32_t max_intervals);
  void enter(uint32_t function, uint64_t time_ns);
  void exit(uint32_t function, uint64_t time_ns);
  // The sequence ended (or a gap): the open calls count up to `time_ns` and are closed.
  void reset(uint64_t time_ns);

  // The intervals cover [start_ns, start_ns + count * width_ns); width is a power of two.
  uint64_t startNs() const { return static_cast<uint64_t>(origin_); }
  uint64_t widthNs() const { return uint64_t{1} << shift_; }
  size_t count() const { return bins_.size(); }
  const std::unordered_map<uint32_t, Cell>& interval(size_t i) const { return bins_[i]; }

private:
  void advance(uint64_t time_ns); // exclusive time of the top frame up to time_ns
  void ensure(uint64_t time_ns);  // the bins cover time_ns
  void coarsen();
  size_t indexOf(uint64_t time_ns) const {
    return static_cast<size_t>(static_cast<uint64_t>(static_cast<int64_t>(time_ns) - origin_) >>
                               shift_);
  }
  void add(uint32_t function, uint64_t from_ns, uint64_t to_ns, uint64_t Cell::*field);

  uint32_t max_intervals_;
  bool started_ = false;
  int64_t origin_ = 0; // signed: intervals may be added in front of the first
  unsigned shift_ = 0;
  std::deque<std::unordered_map<uint32_t, Cell>> bins_;
  std::vector<uint32_t> stack_;
  struct Open {
    uint32_t frames = 0;      // its frames on the stack
    uint64_t outer_since = 0; // when its outermost open frame started
  };
  IdTable<Open> open_; // per function, sparse: function ids come from the input
  uint64_t last_ns_ = 0;
};

// {"levels", "tuples": [{"tuple": [function ids], "count", "measured", "sum_ns",
//  "sum_squares_ns2" (a decimal string), "mean_ns", "sd_ns"}]}
nlohmann::ordered_json nlevelJson(const NLevelCompaction& n, size_t max_entries);
// {"start_ns", "interval_ns", "intervals": [{"start_ns", "functions": [{"function",
//  "inclusive_ns", "exclusive_ns", "calls"}]}]}: functions by inclusive time.
nlohmann::ordered_json intervalsJson(const IntervalCompaction& c);

} // namespace shapetrace::analyzer::summaries
