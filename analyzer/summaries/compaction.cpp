// N-level call compaction and interval compaction.
#include "summaries/compaction.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace shapetrace::analyzer::summaries {

double NLevelCompaction::Entry::mean() const {
  return measured == 0 ? 0.0 : static_cast<double>(sum_ns) / static_cast<double>(measured);
}

double NLevelCompaction::Entry::sd() const {
  if (measured == 0) return 0.0;
  const double n = static_cast<double>(measured);
  const double m = mean();
  const double variance = static_cast<double>(sum_squares) / n - m * m;
  return variance > 0 ? std::sqrt(variance) : 0.0;
}

NLevelCompaction::NLevelCompaction(uint32_t levels) : levels_(levels) {
  if (levels == 0) throw std::invalid_argument("N-level compaction needs at least one level");
}

void NLevelCompaction::enter(uint32_t function) { stack_.push_back(function); }

void NLevelCompaction::exit(uint64_t duration_ns, bool measured) {
  if (stack_.empty()) return;
  // The tuples of length 1..N ending with this call, innermost caller first as it grows.
  uint64_t h = 0x9E3779B97F4A7C15ull;
  const size_t top = stack_.size();
  for (uint32_t i = 1; i <= levels_ && i <= top; ++i) {
    h = (h ^ (uint64_t{stack_[top - i]} + i)) * 0xff51afd7ed558ccdull;
    h ^= h >> 29;
    auto& candidates = by_hash_[h];
    Entry* entry = nullptr;
    for (uint32_t index : candidates) {
      const auto& t = entries_[index].tuple;
      if (t.size() == i && std::equal(t.begin(), t.end(), stack_.end() - i)) {
        entry = &entries_[index];
        break;
      }
    }
    if (entry == nullptr) {
      candidates.push_back(static_cast<uint32_t>(entries_.size()));
      entries_.push_back({std::vector<uint32_t>(stack_.end() - i, stack_.end())});
      entry = &entries_.back();
    }
    ++entry->count;
    if (measured) {
      ++entry->measured;
      entry->sum_ns += duration_ns;
      entry->sum_squares += static_cast<unsigned __int128>(duration_ns) * duration_ns;
    }
  }
  stack_.pop_back();
}

std::vector<NLevelCompaction::Entry> NLevelCompaction::entries() const {
  std::vector<Entry> out = entries_;
  std::sort(out.begin(), out.end(), [](const Entry& a, const Entry& b) {
    if (a.sum_ns != b.sum_ns) return a.sum_ns > b.sum_ns;
    if (a.count != b.count) return a.count > b.count;
    return a.tuple < b.tuple;
  });
  return out;
}

IntervalCompaction::IntervalCompaction(uint32_t max_intervals) : max_intervals_(max_intervals) {
  if (max_intervals < 2) throw std::invalid_argument("interval compaction needs at least 2 intervals");
}

void IntervalCompaction::coarsen() {
  // Pairs of intervals become one; the origin stays.
  std::deque<std::unordered_map<uint32_t, Cell>> merged;
  for (size_t i = 0; i < bins_.size(); i += 2) {
    auto cell = std::move(bins_[i]);
    if (i + 1 < bins_.size())
      for (const auto& [f, c] : bins_[i + 1]) {
        Cell& to = cell[f];
        to.inclusive_ns += c.inclusive_ns;
        to.exclusive_ns += c.exclusive_ns;
        to.calls += c.calls;
      }
    merged.push_back(std::move(cell));
  }
  bins_ = std::move(merged);
  ++shift_;
}

void IntervalCompaction::ensure(uint64_t time_ns) {
  const auto t = static_cast<int64_t>(time_ns);
  if (!started_) {
    started_ = true;
    origin_ = t;
    shift_ = 0;
    bins_.assign(1, {});
    return;
  }
  if (t < origin_) {
    // Earlier than the first interval (another thread began earlier): `added` intervals in
    // front, then pairs merged until they fit. Worked out without making the intervals in front
    // one by one: a timestamp far before the others (a crafted input) would ask for 2^60.
    const uint64_t width = widthNs();
    const uint64_t added = (static_cast<uint64_t>(origin_ - t) + width - 1) / width;
    const uint64_t total = added + bins_.size();
    unsigned merges = 0;
    while (((total - 1) >> merges) + 1 > max_intervals_)
      ++merges;
    std::deque<std::unordered_map<uint32_t, Cell>> merged(((total - 1) >> merges) + 1);
    for (size_t i = 0; i < bins_.size(); ++i)
      for (const auto& [f, c] : bins_[i]) {
        Cell& to = merged[(added + i) >> merges][f];
        to.inclusive_ns += c.inclusive_ns;
        to.exclusive_ns += c.exclusive_ns;
        to.calls += c.calls;
      }
    bins_ = std::move(merged);
    origin_ -= static_cast<int64_t>(added * width);
    shift_ += merges;
  }
  while ((static_cast<uint64_t>(t - origin_) >> shift_) >= max_intervals_)
    coarsen();
  const size_t index = indexOf(time_ns);
  if (index >= bins_.size()) bins_.resize(index + 1);
}

void IntervalCompaction::add(uint32_t function, uint64_t from_ns, uint64_t to_ns,
                             uint64_t Cell::*field) {
  if (to_ns <= from_ns) return;
  ensure(from_ns);
  ensure(to_ns);
  for (uint64_t t = from_ns; t < to_ns;) {
    const size_t index = indexOf(t);
    const uint64_t bin_end =
        static_cast<uint64_t>(origin_) + (static_cast<uint64_t>(index + 1) << shift_);
    const uint64_t until = std::min(bin_end, to_ns);
    bins_[index][function].*field += until - t;
    t = until;
  }
}

void IntervalCompaction::advance(uint64_t time_ns) {
  if (!stack_.empty() && time_ns > last_ns_)
    add(stack_.back(), last_ns_, time_ns, &Cell::exclusive_ns);
  last_ns_ = std::max(last_ns_, time_ns);
}

void IntervalCompaction::enter(uint32_t function, uint64_t time_ns) {
  if (stack_.empty()) last_ns_ = time_ns;
  advance(time_ns);
  ensure(time_ns);
  ++bins_[indexOf(time_ns)][function].calls;
  Open& open = open_[function];
  if (open.frames++ == 0) open.outer_since = time_ns;
  stack_.push_back(function);
}

void IntervalCompaction::exit(uint32_t function, uint64_t time_ns) {
  if (stack_.empty()) return;
  advance(time_ns);
  stack_.pop_back();
  Open* open = open_.find(function);
  if (open != nullptr && open->frames > 0 && --open->frames == 0)
    add(function, open->outer_since, time_ns, &Cell::inclusive_ns);
}

void IntervalCompaction::reset(uint64_t time_ns) {
  while (!stack_.empty())
    exit(stack_.back(), time_ns);
}

nlohmann::ordered_json nlevelJson(const NLevelCompaction& n, size_t max_entries) {
  using Json = nlohmann::ordered_json;
  Json tuples = Json::array();
  const auto entries = n.entries();
  for (size_t i = 0; i < entries.size() && i < max_entries; ++i) {
    const auto& e = entries[i];
    std::string squares;
    unsigned __int128 v = e.sum_squares;
    do {
      squares.insert(squares.begin(), static_cast<char>('0' + static_cast<int>(v % 10)));
      v /= 10;
    } while (v != 0);
    tuples.push_back({{"tuple", e.tuple},
                      {"count", e.count},
                      {"measured", e.measured},
                      {"sum_ns", e.sum_ns},
                      {"sum_squares_ns2", squares},
                      {"mean_ns", e.mean()},
                      {"sd_ns", e.sd()}});
  }
  return Json{{"levels", n.levels()},
              {"tuples_total", entries.size()},
              {"tuples", std::move(tuples)}};
}

nlohmann::ordered_json intervalsJson(const IntervalCompaction& c) {
  using Json = nlohmann::ordered_json;
  Json intervals = Json::array();
  for (size_t i = 0; i < c.count(); ++i) {
    std::vector<std::pair<uint32_t, IntervalCompaction::Cell>> cells(c.interval(i).begin(),
                                                                     c.interval(i).end());
    std::sort(cells.begin(), cells.end(), [](const auto& a, const auto& b) {
      return a.second.inclusive_ns != b.second.inclusive_ns
                 ? a.second.inclusive_ns > b.second.inclusive_ns
                 : a.first < b.first;
    });
    Json functions = Json::array();
    for (const auto& [f, cell] : cells)
      functions.push_back({{"function", f},
                           {"inclusive_ns", cell.inclusive_ns},
                           {"exclusive_ns", cell.exclusive_ns},
                           {"calls", cell.calls}});
    intervals.push_back(
        {{"start_ns", static_cast<int64_t>(c.startNs() + i * c.widthNs())},
         {"functions", std::move(functions)}});
  }
  return Json{{"start_ns", c.startNs()},
              {"interval_ns", c.widthNs()},
              {"intervals", std::move(intervals)}};
}

} // namespace shapetrace::analyzer::summaries
