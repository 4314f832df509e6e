// Structural matching of two runs' models and the tests that decide what changed.
#include "diff/run_diff.h"

#include "duration_text.h"
#include "function_names.h"
#include "model_json.h"
#include "shape_metric.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>
#include <stdexcept>
#include <unordered_map>

namespace shapetrace::analyzer {
namespace {

using Json = nlohmann::ordered_json;

struct ShapeEntry {
  ShapeId table_id = kNullShape; // in the shared table
  uint32_t function = 0;         // shared function index
  uint64_t calls = 0;
  DurationSummary stats;
};

struct ClusterEntry {
  uint32_t function = 0;
  std::vector<ShapeId> members; // shared table ids
  uint64_t calls = 0;
  DurationSummary stats;
};

// One run's model, its shapes interned into the shared table.
struct Side {
  std::vector<uint32_t> function_of;          // model function id -> shared function index
  std::map<uint32_t, uint64_t> function_calls; // shared index -> calls
  std::map<uint32_t, DurationSummary> function_stats;
  std::vector<ShapeEntry> shapes;             // by model shape id (0: null, unused)
  std::unordered_map<ShapeId, size_t> by_table_id;
  std::vector<ClusterEntry> clusters;
  double seconds = 0;
  uint64_t calls = 0;
  std::set<uint32_t> excluded;  // shared indices the build left out (the model's "excluded")
  std::set<uint32_t> throttled; // shared indices the runtime throttled (the model's "throttled")
};

// Function identities shared by both runs, and the table their shapes are interned in.
struct Shared {
  ShapeTable table;
  std::map<std::string, uint32_t> index_of;
  std::vector<std::string> names;
  uint32_t functionIndex(const std::string& identity, const std::string& name) {
    auto [it, added] = index_of.try_emplace(identity, static_cast<uint32_t>(names.size()));
    if (added) names.push_back(name);
    return it->second;
  }
};

DurationSummary summaryOf(const Json& stats) {
  auto number = [](const Json& value) {
    return value.is_string() ? std::stod(value.get<std::string>()) : value.get<double>();
  };
  return {stats.at("count").get<uint64_t>(), number(stats.at("mean_ns")),
          number(stats.at("sd_ns")), number(stats.at("sum_ns")), number(stats.at("p99_ns"))};
}

// The run's length: from the first to the last bin of the threads' occurrence timelines.
double secondsOf(const Json& model) {
  const double bin_ns = model.at("timeline_bin_ns").get<double>();
  double first = -1, last = -1;
  for (const Json& thread : model.at("threads"))
    for (const Json& ribbon : thread.at("timeline"))
      for (const Json& cluster : ribbon)
        for (const Json& cell : cluster.at("cells")) {
          const double bin = cell.at(0).get<double>();
          first = first < 0 ? bin : std::min(first, bin);
          last = std::max(last, bin + 1);
        }
  return first < 0 ? 0 : (last - first) * bin_ns / 1e9;
}

Side readSide(const Json& model, Shared& shared, const char* which) {
  if (!model.is_object() || model.value("format", "") != "shapetrace-analysis")
    throw std::invalid_argument(std::string(which) +
                                " is not a shapetrace analysis model (format "
                                "\"shapetrace-analysis\")");
  if (model.value("version", 0) != 1)
    throw std::invalid_argument(std::string(which) + " is an analysis model of version " +
                                std::to_string(model.value("version", 0)) +
                                "; this shapetrace reads version 1");
  Side side;
  for (const Json& f : model.at("functions")) {
    const uint32_t index =
        shared.functionIndex(functionIdentity(f), f.at("name").get<std::string>());
    side.function_of.push_back(index);
    side.function_calls[index] += f.at("calls").get<uint64_t>();
    side.function_stats[index] = summaryOf(f.at("stats"));
    side.calls += f.at("calls").get<uint64_t>();
  }
  // The functions the run left out, each named by a model function id.
  auto functionsNamed = [&](const char* list, std::set<uint32_t>& into) {
    for (const Json& entry : model.value(list, Json::array())) {
      const auto id = entry.at("function").get<size_t>();
      if (id >= side.function_of.size())
        throw std::invalid_argument(std::string(which) + ": \"" + list + "\" names function " +
                                    std::to_string(id) + ", which the model does not list");
      into.insert(side.function_of[id]);
    }
  };
  functionsNamed("excluded", side.excluded);
  functionsNamed("throttled", side.throttled);
  side.shapes.resize(1);
  std::vector<ShapeId> children;
  for (const Json& s : model.at("shapes")) {
    const auto id = s.at("id").get<size_t>();
    if (id != side.shapes.size())
      throw std::invalid_argument(std::string(which) + ": shapes are not listed in id order");
    children.clear();
    for (const Json& child : s.at("children")) {
      const auto c = child.get<size_t>();
      if (c == 0 || c >= id)
        throw std::invalid_argument(std::string(which) + ": shape " + std::to_string(id) +
                                    " has a child that is not an earlier shape");
      children.push_back(side.shapes[c].table_id);
    }
    children.resize(canonicalizeChildSet(children));
    ShapeEntry entry;
    entry.function = side.function_of.at(s.at("function").get<size_t>());
    entry.table_id = shared.table.intern(entry.function, children);
    entry.calls = s.at("calls").get<uint64_t>();
    entry.stats = summaryOf(s.at("stats"));
    side.by_table_id[entry.table_id] = side.shapes.size();
    side.shapes.push_back(entry);
  }
  for (const Json& c : model.at("clusters")) {
    ClusterEntry cluster;
    cluster.function = side.function_of.at(c.at("function").get<size_t>());
    for (const Json& member : c.at("shapes"))
      cluster.members.push_back(side.shapes.at(member.get<size_t>()).table_id);
    cluster.calls = c.at("calls").get<uint64_t>();
    cluster.stats = summaryOf(c.at("stats"));
    side.clusters.push_back(std::move(cluster));
  }
  side.seconds = secondsOf(model);
  return side;
}

// Welch's statistic for the difference of two means (normal approximation: large counts).
double welchZ(const DurationSummary& a, const DurationSummary& b) {
  const double na = static_cast<double>(a.count), nb = static_cast<double>(b.count);
  const double se = std::sqrt(a.sd_ns * a.sd_ns / na + b.sd_ns * b.sd_ns / nb);
  if (se == 0) return a.mean_ns == b.mean_ns ? 0 : (b.mean_ns > a.mean_ns ? 1e9 : -1e9);
  return (b.mean_ns - a.mean_ns) / se;
}

// The two-proportion statistic for x1/n1 against x2/n2.
double proportionZ(double x1, double n1, double x2, double n2) {
  const double p = (x1 + x2) / (n1 + n2);
  const double se = std::sqrt(p * (1 - p) * (1 / n1 + 1 / n2));
  if (se == 0) return 0;
  return (x2 / n2 - x1 / n1) / se;
}

double relative(double before, double after) {
  return before == 0 ? (after == 0 ? 0 : 1e9) : (after - before) / before;
}

double rate(double ns, double seconds) { return seconds > 0 ? ns / seconds : ns; }

// Every function a shape calls, below its base function (shared indices).
const std::set<uint32_t>& calledBy(const ShapeTable& table, ShapeId shape,
                                   std::unordered_map<ShapeId, std::set<uint32_t>>& memo) {
  if (auto it = memo.find(shape); it != memo.end()) return it->second;
  std::set<uint32_t> called;
  for (ShapeId child : table.children(shape)) {
    called.insert(table.function(child));
    const auto& below = calledBy(table, child, memo);
    called.insert(below.begin(), below.end());
  }
  return memo[shape] = std::move(called);
}

// A share as a percentage with the digits a small one needs: "31%", "0.42%", "0.0031%" (never
// "0% -> 0%" for a change the test found significant).
std::string shareText(double share) {
  char text[32];
  std::snprintf(text, sizeof text, share == 0 || share >= 0.01 ? "%.0f%%" : "%.2g%%", share * 100);
  return text;
}

std::string percent(double change) {
  char text[32];
  std::snprintf(text, sizeof text, "%+.0f%%", change * 100);
  return text;
}

class Differ {
public:
  Differ(const Json& base, const Json& now, const DiffSettings& settings)
      : settings_(settings), base_(readSide(base, shared_, "BASE")),
        new_(readSide(now, shared_, "NEW")) {}

  RunDiff run() {
    diff_.base_seconds = base_.seconds;
    diff_.new_seconds = new_.seconds;
    diff_.base_calls = base_.calls;
    diff_.new_calls = new_.calls;
    for (const auto& [function, calls] : new_.function_calls) {
      const auto base = base_.function_calls.find(function);
      diff_.shared_functions += calls > 0 && base != base_.function_calls.end() && base->second > 0;
    }
    if (diff_.shared_functions == 0)
      throw std::invalid_argument("BASE and NEW have no function in common: they are runs of "
                                  "different programs");
    compareShapes();
    std::sort(diff_.shapes.begin(), diff_.shapes.end(), [](const auto& a, const auto& b) {
      if (a.derived != b.derived) return b.derived;
      if (std::fabs(a.impact_ns_per_s) != std::fabs(b.impact_ns_per_s))
        return std::fabs(a.impact_ns_per_s) > std::fabs(b.impact_ns_per_s);
      return std::tie(a.kind, a.new_shape, a.base_shape) < std::tie(b.kind, b.new_shape, b.base_shape);
    });
    compareFunctions();
    compareClusters();
    explain();
    compareFiltering();
    return std::move(diff_);
  }

private:
  // The functions one run left out and the other did not: where the runs' shapes differ because
  // of what was recorded, not of what the program did.
  void compareFiltering() {
    auto onlyIn = [this](const std::set<uint32_t>& in, const std::set<uint32_t>& not_in) {
      std::vector<std::string> names;
      for (uint32_t function : in)
        if (!not_in.contains(function)) names.push_back(shared_.names[function]);
      std::sort(names.begin(), names.end());
      return names;
    };
    FilteringDifference& d = diff_.filtering;
    d.filtered_only_base = onlyIn(base_.excluded, new_.excluded);
    d.filtered_only_new = onlyIn(new_.excluded, base_.excluded);
    d.throttled_only_base = onlyIn(base_.throttled, new_.throttled);
    d.throttled_only_new = onlyIn(new_.throttled, base_.throttled);
  }

  void compareShapes() {
    std::set<ShapeId> ids;
    for (const auto& [id, at] : base_.by_table_id) ids.insert(id);
    for (const auto& [id, at] : new_.by_table_id) ids.insert(id);
    // New shapes first: whether a vanished one was replaced by a new one depends on them.
    std::set<ShapeId> new_ids;
    std::vector<ShapeId> gone;
    for (ShapeId id : ids) {
      const ShapeEntry* a = entry(base_, id);
      const ShapeEntry* b = entry(new_, id);
      if (a && b) {
        compareMatched(*a, *b);
      } else if (b) {
        ShapeChange c = newShape(*b);
        // Also a consequence when its nearest BASE shape differs from it by a child that is gone
        // from NEW ("main no longer calls scan" because serve's scan path vanished).
        c.derived = c.nearest_distance < 0 || hasChangedChild(id, new_, base_) ||
                    hasChangedChild(nearestOf(id, base_), base_, new_);
        new_ids.insert(id);
        diff_.shapes.push_back(std::move(c));
      } else {
        gone.push_back(id);
      }
    }
    for (ShapeId id : gone) {
      ShapeChange c = vanished(*entry(base_, id));
      // Gone with its function, because a child's shape changed, or replaced by a new shape
      // (whose own change tells this one: "a new shape of f that also calls g").
      const ShapeId replacement = nearestOf(id, new_);
      c.derived = replacement == kNullShape || hasChangedChild(id, base_, new_) ||
                  new_ids.count(replacement);
      if (replacement != kNullShape) {
        // Its calls now take the replacement's mean (per second of BASE: NEW has none of them).
        const ShapeEntry& a = *entry(base_, id);
        c.impact_ns_per_s = -rate(static_cast<double>(a.stats.count) *
                                      (a.stats.mean_ns - entry(new_, replacement)->stats.mean_ns),
                                  base_.seconds);
        const auto& mine = calledBy(shared_.table, id, called_);
        const auto& theirs = calledBy(shared_.table, replacement, called_);
        for (uint32_t f : mine)
          if (!theirs.count(f)) c.no_longer_calls.push_back(shared_.names[f]);
      }
      diff_.shapes.push_back(std::move(c));
    }
    markSlowerBecauseOfAChild();
    markMixChangedBecauseOfAChild();
  }

  // A shape less (more) frequent because its calls became (came from) a shape that is new
  // (vanished) only because of a child's change: the same consequence, told by the child.
  void markMixChangedBecauseOfAChild() {
    std::set<ShapeId> left, joined; // BASE shapes calls left, NEW shapes calls joined
    for (const ShapeChange& c : diff_.shapes) {
      if (!c.derived) continue;
      if (c.kind == ChangeKind::kNew && c.nearest_base_shape >= 0)
        left.insert(tableId(base_, c.nearest_base_shape));
      if (c.kind == ChangeKind::kVanished)
        joined.insert(nearestOf(tableId(base_, c.base_shape), new_));
    }
    for (ShapeChange& c : diff_.shapes) {
      if (c.kind == ChangeKind::kLessFrequent && left.count(tableId(base_, c.base_shape)))
        c.derived = true;
      if (c.kind == ChangeKind::kMoreFrequent && joined.count(tableId(new_, c.new_shape)))
        c.derived = true;
    }
  }

  // A shape slower (faster) because a child shape is: at least half of its change of mean is
  // the child's change in the same direction (a child runs at least once per call). Its callers'
  // shapes change by the same time: the child's change is the cause, these are consequences.
  void markSlowerBecauseOfAChild() {
    std::unordered_map<ShapeId, double> moved; // table id -> change of mean
    for (const ShapeChange& c : diff_.shapes)
      if (c.kind == ChangeKind::kSlower || c.kind == ChangeKind::kFaster)
        moved[tableId(new_, c.new_shape)] = c.now.mean_ns - c.base.mean_ns;
    for (ShapeChange& c : diff_.shapes) {
      if (c.kind != ChangeKind::kSlower && c.kind != ChangeKind::kFaster) continue;
      const double mine = c.now.mean_ns - c.base.mean_ns;
      for (ShapeId child : shared_.table.children(tableId(new_, c.new_shape))) {
        const auto it = moved.find(child);
        if (it != moved.end() && it->second * mine > 0 &&
            std::fabs(it->second) >= 0.5 * std::fabs(mine))
          c.derived = true;
      }
    }
  }

  static ShapeId tableId(const Side& side, int64_t model_id) {
    return side.shapes.at(static_cast<size_t>(model_id)).table_id;
  }

  // Whether one of `id`'s children occurs in `side` but not in `other` although its function
  // occurs in both: then that child's shape changed, and `id` is new (or gone) because of it.
  // (A child whose function only one side calls is the change of `id` itself: "also calls X".)
  bool hasChangedChild(ShapeId id, const Side& side, const Side& other) {
    if (id == kNullShape) return false;
    for (ShapeId child : shared_.table.children(id))
      if (side.by_table_id.count(child) && !other.by_table_id.count(child) &&
          nearestOf(child, other) != kNullShape)
        return true;
    return false;
  }

  // The shape of `side` with the same function nearest to `id` by the Shape metric (kNullShape:
  // none), ties to the one with more calls.
  ShapeId nearestOf(ShapeId id, const Side& side) {
    const ShapeEntry* nearest = nullptr;
    double best = 0;
    for (const ShapeEntry& s : side.shapes) {
      if (s.table_id == kNullShape || s.table_id == id ||
          s.function != shared_.table.function(id))
        continue;
      const double d = metric_.distance(s.table_id, id);
      if (!nearest || d < best || (d == best && s.calls > nearest->calls)) {
        nearest = &s;
        best = d;
      }
    }
    return nearest ? nearest->table_id : kNullShape;
  }

  // The most calls of `function` on one path from `id` down (memoized: shapes share children).
  uint32_t callsOnDeepestPath(ShapeId id, uint32_t function,
                              std::unordered_map<ShapeId, uint32_t>& memo) const {
    if (id == kNullShape) return 0;
    if (const auto it = memo.find(id); it != memo.end()) return it->second;
    uint32_t below = 0;
    for (ShapeId child : shared_.table.children(id))
      below = std::max(below, callsOnDeepestPath(child, function, memo));
    const uint32_t calls = below + (shared_.table.function(id) == function ? 1 : 0);
    memo.emplace(id, calls);
    return calls;
  }

  static const ShapeEntry* entry(const Side& side, ShapeId id) {
    const auto it = side.by_table_id.find(id);
    return it == side.by_table_id.end() ? nullptr : &side.shapes[it->second];
  }

  ShapeChange change(ChangeKind kind, const ShapeEntry* a, const ShapeEntry* b) {
    ShapeChange c;
    c.kind = kind;
    c.function = shared_.names[(a ? a : b)->function];
    if (a) {
      c.base_calls = a->calls;
      c.base = a->stats;
      c.base_share = share(base_, *a);
      c.base_shape = static_cast<int64_t>(base_.by_table_id.at(a->table_id));
    }
    if (b) {
      c.new_calls = b->calls;
      c.now = b->stats;
      c.new_share = share(new_, *b);
      c.new_shape = static_cast<int64_t>(new_.by_table_id.at(b->table_id));
    }
    const ShapeId id = (a ? a : b)->table_id;
    std::unordered_map<ShapeId, uint32_t> depths;
    c.recursion_depth = callsOnDeepestPath(id, shared_.table.function(id), depths);
    // New and vanished shapes whose calls had nowhere else to go move all their time; the
    // callers refine this (newShape, compareShapes, compareMatched).
    c.impact_ns_per_s = rate(c.now.sum_ns, new_.seconds) - rate(c.base.sum_ns, base_.seconds);
    return c;
  }

  // The time per second of NEW that `calls` calls at `extra_ns` more each account for. The impact
  // of every change is its term of one decomposition of a function's change of time per second
  // (duration, mix of shapes, new shapes), so that a run that served fewer requests does not
  // make every shape look "faster" by the time it no longer spent, and a function's change adds
  // up from its shapes' changes.
  double movedPerSecond(double calls, double extra_ns) const {
    return rate(calls * extra_ns, new_.seconds);
  }

  static double share(const Side& side, const ShapeEntry& shape) {
    const uint64_t calls = side.function_calls.at(shape.function);
    return calls == 0 ? 0 : static_cast<double>(shape.calls) / static_cast<double>(calls);
  }

  void compareMatched(const ShapeEntry& a, const ShapeEntry& b) {
    if (a.stats.count >= settings_.min_calls && b.stats.count >= settings_.min_calls) {
      const double z = welchZ(a.stats, b.stats);
      const double moved = relative(a.stats.mean_ns, b.stats.mean_ns);
      if (std::fabs(z) >= settings_.z && std::fabs(moved) >= settings_.min_change) {
        ShapeChange c = change(moved > 0 ? ChangeKind::kSlower : ChangeKind::kFaster, &a, &b);
        c.z = z;
        // Its calls in NEW, each slower (faster) by the change of the mean.
        c.impact_ns_per_s = movedPerSecond(static_cast<double>(b.stats.count),
                                           b.stats.mean_ns - a.stats.mean_ns);
        diff_.shapes.push_back(std::move(c));
      }
    }
    const double n1 = static_cast<double>(base_.function_calls.at(a.function));
    const double n2 = static_cast<double>(new_.function_calls.at(b.function));
    if (n1 == 0 || n2 == 0) return;
    const double z = proportionZ(static_cast<double>(a.calls), n1, static_cast<double>(b.calls), n2);
    const double moved = relative(share(base_, a), share(new_, b));
    if (std::fabs(z) >= settings_.z && std::fabs(moved) >= settings_.min_change) {
      ShapeChange c =
          change(moved > 0 ? ChangeKind::kMoreFrequent : ChangeKind::kLessFrequent, &a, &b);
      c.z = z;
      // The share of the function's calls that moved to (from) this shape, each taking this
      // shape's mean instead of the function's.
      const double shifted = (share(new_, b) - share(base_, a)) * n2;
      c.impact_ns_per_s =
          movedPerSecond(shifted, a.stats.mean_ns - base_.function_stats.at(a.function).mean_ns);
      diff_.shapes.push_back(std::move(c));
    }
  }

  ShapeChange newShape(const ShapeEntry& b) {
    ShapeChange c = change(ChangeKind::kNew, nullptr, &b);
    // Its nearest shape of the same function in BASE, by the Shape metric.
    const ShapeId nearest_id = nearestOf(b.table_id, base_);
    const ShapeEntry* nearest = nearest_id == kNullShape ? nullptr : entry(base_, nearest_id);
    if (nearest) {
      c.nearest_distance = metric_.distance(nearest_id, b.table_id);
      // Its calls would otherwise have been of the nearest shape: what they take beyond it.
      c.impact_ns_per_s = movedPerSecond(static_cast<double>(b.stats.count),
                                         b.stats.mean_ns - nearest->stats.mean_ns);
      c.nearest_base_shape = static_cast<int64_t>(base_.by_table_id.at(nearest->table_id));
      const auto& mine = calledBy(shared_.table, b.table_id, called_);
      const auto& theirs = calledBy(shared_.table, nearest->table_id, called_);
      for (uint32_t f : mine)
        if (!theirs.count(f)) c.also_calls.push_back(shared_.names[f]);
      for (uint32_t f : theirs)
        if (!mine.count(f)) c.no_longer_calls.push_back(shared_.names[f]);
    }
    return c;
  }

  ShapeChange vanished(const ShapeEntry& a) { return change(ChangeKind::kVanished, &a, nullptr); }

  void compareFunctions() {
    for (const auto& [function, stats] : new_.function_stats) {
      const auto before = base_.function_stats.find(function);
      if (before == base_.function_stats.end()) continue;
      FunctionChange f;
      f.function = shared_.names[function];
      f.base_calls = base_.function_calls.at(function);
      f.new_calls = new_.function_calls.at(function);
      f.base = before->second;
      f.now = stats;
      // Its calls in NEW, each slower (faster) by the change of its mean.
      f.impact_ns_per_s =
          movedPerSecond(static_cast<double>(f.now.count), f.now.mean_ns - f.base.mean_ns);
      if (f.base.count >= settings_.min_calls && f.now.count >= settings_.min_calls) {
        f.z = welchZ(f.base, f.now);
        f.relative_change = relative(f.base.mean_ns, f.now.mean_ns);
        f.significant = std::fabs(f.z) >= settings_.z &&
                        std::fabs(f.relative_change) >= settings_.min_change;
      }
      for (size_t i = 0; i < diff_.shapes.size(); ++i)
        if (diff_.shapes[i].function == f.function) f.explained_by.push_back(i);
      diff_.functions.push_back(std::move(f));
    }
    std::sort(diff_.functions.begin(), diff_.functions.end(), [](const auto& a, const auto& b) {
      return std::fabs(a.impact_ns_per_s) > std::fabs(b.impact_ns_per_s);
    });
  }

  // Each NEW cluster against the BASE cluster of its function holding most of its calls' shapes.
  // A function left with one unmatched cluster on each side (its calls' work changed, so no shape
  // is shared: main calling a new worker) has that pair matched too, rather than reading as the
  // same function vanished and new.
  void compareClusters() {
    std::vector<int64_t> base_of(new_.clusters.size(), -1);
    std::vector<double> shared_of(new_.clusters.size(), 0);
    std::set<size_t> matched_base;
    for (size_t n = 0; n < new_.clusters.size(); ++n) {
      const ClusterEntry& b = new_.clusters[n];
      for (size_t o = 0; o < base_.clusters.size(); ++o) {
        const ClusterEntry& a = base_.clusters[o];
        if (a.function != b.function) continue;
        const std::set<ShapeId> members(a.members.begin(), a.members.end());
        double shared_calls = 0;
        for (ShapeId id : b.members)
          if (members.count(id)) shared_calls += static_cast<double>(entry(new_, id)->calls);
        if (shared_calls > shared_of[n]) {
          shared_of[n] = shared_calls;
          base_of[n] = static_cast<int64_t>(o);
        }
      }
      if (base_of[n] >= 0) matched_base.insert(static_cast<size_t>(base_of[n]));
    }
    pairLoneClusters(base_of, matched_base);
    for (size_t n = 0; n < new_.clusters.size(); ++n)
      diff_.clusters.push_back(base_of[n] < 0 ? newCluster(n)
                                              : clusterChange(static_cast<size_t>(base_of[n]), n,
                                                              shared_of[n]));
    for (size_t o = 0; o < base_.clusters.size(); ++o)
      if (!matched_base.count(o)) diff_.clusters.push_back(vanishedCluster(o));
  }

  // The unmatched clusters of a function with exactly one on each side: matched to each other.
  void pairLoneClusters(std::vector<int64_t>& base_of, std::set<size_t>& matched_base) const {
    std::map<uint32_t, std::vector<size_t>> base_left, new_left;
    for (size_t o = 0; o < base_.clusters.size(); ++o)
      if (!matched_base.count(o)) base_left[base_.clusters[o].function].push_back(o);
    for (size_t n = 0; n < new_.clusters.size(); ++n)
      if (base_of[n] < 0) new_left[new_.clusters[n].function].push_back(n);
    for (const auto& [function, news] : new_left) {
      const auto bases = base_left.find(function);
      if (news.size() != 1 || bases == base_left.end() || bases->second.size() != 1) continue;
      base_of[news.front()] = static_cast<int64_t>(bases->second.front());
      matched_base.insert(bases->second.front());
    }
  }

  ClusterChange newCluster(size_t n) const {
    const ClusterEntry& b = new_.clusters[n];
    ClusterChange c;
    c.new_cluster = static_cast<int64_t>(n);
    c.function = shared_.names[b.function];
    c.new_calls = b.calls;
    c.now = b.stats;
    return c;
  }

  ClusterChange vanishedCluster(size_t o) const {
    const ClusterEntry& a = base_.clusters[o];
    ClusterChange c;
    c.base_cluster = static_cast<int64_t>(o);
    c.function = shared_.names[a.function];
    c.base_calls = a.calls;
    c.base = a.stats;
    return c;
  }

  // BASE cluster `o` against NEW cluster `n`; `shared_calls`: NEW's calls in shapes both hold.
  ClusterChange clusterChange(size_t o, size_t n, double shared_calls) const {
    const ClusterEntry& a = base_.clusters[o];
    const ClusterEntry& b = new_.clusters[n];
    ClusterChange c = newCluster(n);
    c.base_cluster = static_cast<int64_t>(o);
    c.base_calls = a.calls;
    c.base = a.stats;
    c.shared = b.calls ? shared_calls / static_cast<double>(b.calls) : 0;
    if (a.stats.count >= settings_.min_calls && b.stats.count >= settings_.min_calls) {
      c.z = welchZ(a.stats, b.stats);
      c.relative_change = relative(a.stats.mean_ns, b.stats.mean_ns);
      c.significant =
          std::fabs(c.z) >= settings_.z && std::fabs(c.relative_change) >= settings_.min_change;
    }
    return c;
  }

  // Sentences for the largest movements of time: functions that got slower or faster, with the
  // shape changes that account for most of it, then shape changes not explained so.
  void explain() {
    struct Sentence {
      double impact;
      std::string text;
      // A function whose shapes changed only as consequences (its callees' changes): its
      // inclusive time moved with theirs, so it is told after the causes.
      bool consequence = false;
    };
    std::vector<Sentence> sentences;
    std::set<size_t> told;
    for (const FunctionChange& f : diff_.functions) {
      if (!f.significant) continue;
      std::string text = shortFunctionName(f.function) + " got " +
                         (f.relative_change > 0 ? "slower" : "faster") + " (" +
                         percent(f.relative_change) + ": mean " + describeNs(f.base.mean_ns) +
                         " -> " + describeNs(f.now.mean_ns) + ", " +
                         describeNs(f.impact_ns_per_s) + " per second of run)";
      std::vector<size_t> causes;
      for (size_t i : f.explained_by)
        if (!diff_.shapes[i].derived) causes.push_back(i);
      std::sort(causes.begin(), causes.end(), [&](size_t x, size_t y) {
        return std::fabs(diff_.shapes[x].impact_ns_per_s) >
               std::fabs(diff_.shapes[y].impact_ns_per_s);
      });
      if (!causes.empty() && f.impact_ns_per_s != 0) {
        const ShapeChange& top = diff_.shapes[causes.front()];
        const double part = top.impact_ns_per_s / f.impact_ns_per_s;
        if (part > 0) {
          char share_text[32];
          std::snprintf(share_text, sizeof share_text, "%.0f%%", std::min(part, 1.0) * 100);
          text += ": " + std::string(share_text) + " of it is " + describe(top);
          told.insert(causes.front());
        }
      }
      // Its own shapes' changes (not consequences) in its direction explain less than half of
      // its movement: the rest came with its callees.
      double explained = 0;
      for (size_t i : causes)
        if (diff_.shapes[i].impact_ns_per_s * f.impact_ns_per_s > 0)
          explained += diff_.shapes[i].impact_ns_per_s;
      const bool consequence = !f.explained_by.empty() &&
                               std::fabs(explained) < 0.5 * std::fabs(f.impact_ns_per_s);
      sentences.push_back({f.impact_ns_per_s, text, consequence});
    }
    for (size_t i = 0; i < diff_.shapes.size(); ++i)
      if (!told.count(i) && !diff_.shapes[i].derived)
        sentences.push_back({diff_.shapes[i].impact_ns_per_s, describe(diff_.shapes[i])});
    // Causes before consequences, then the largest movements of time first, whichever level
    // they were found at.
    std::sort(sentences.begin(), sentences.end(), [](const Sentence& a, const Sentence& b) {
      if (a.consequence != b.consequence) return b.consequence;
      if (std::fabs(a.impact) != std::fabs(b.impact)) return std::fabs(a.impact) > std::fabs(b.impact);
      return a.text < b.text;
    });
    for (size_t i = 0; i < sentences.size() && i < kMaxExplanations; ++i)
      diff_.explanations.push_back(std::move(sentences[i].text));
  }

  static constexpr size_t kMaxExplanations = 8;

  static std::string describe(const ShapeChange& c) {
    auto list = [](const std::vector<std::string>& names) {
      std::string out;
      for (size_t i = 0; i < names.size() && i < 3; ++i) out += (i ? ", " : "") + shortFunctionName(names[i]);
      if (names.size() > 3) out += ", ...";
      return out;
    };
    const std::string function = shortFunctionName(c.function);
    const std::string recursing =
        c.recursion_depth > 1 ? " recursing " + std::to_string(c.recursion_depth) + " deep" : "";
    std::string what = "the shape of " + function + recursing;
    switch (c.kind) {
    case ChangeKind::kNew:
      what = "a new shape of " + function + recursing;
      if (!c.also_calls.empty()) what += " that also calls " + list(c.also_calls);
      else if (!c.no_longer_calls.empty()) what += " that no longer calls " + list(c.no_longer_calls);
      return what + " (0 -> " + std::to_string(c.new_calls) + " calls, mean " +
             describeNs(c.now.mean_ns) + ")";
    case ChangeKind::kVanished:
      return "a shape of " + function + recursing +
             (c.no_longer_calls.empty() ? "" : " that called " + list(c.no_longer_calls)) +
             " no longer occurs (" + std::to_string(c.base_calls) + " -> 0 calls, mean " +
             describeNs(c.base.mean_ns) + ")";
    case ChangeKind::kSlower:
    case ChangeKind::kFaster:
      return what + " (shape " + std::to_string(c.new_shape) + ") got " +
             (c.kind == ChangeKind::kSlower ? "slower" : "faster") + ": mean " +
             describeNs(c.base.mean_ns) + " -> " + describeNs(c.now.mean_ns) + " over " +
             std::to_string(c.new_calls) + " calls";
    case ChangeKind::kMoreFrequent:
    case ChangeKind::kLessFrequent:
      return what + " (shape " + std::to_string(c.new_shape) + ") is " +
             (c.kind == ChangeKind::kMoreFrequent ? "more" : "less") + " frequent: " +
             shareText(c.base_share) + " -> " + shareText(c.new_share) + " of its calls";
    }
    return what;
  }

  DiffSettings settings_;
  Shared shared_;
  Side base_, new_;
  ShapeMetric metric_{shared_.table};
  std::unordered_map<ShapeId, std::set<uint32_t>> called_;
  RunDiff diff_;
};

Json summaryJson(const DurationSummary& s) {
  return Json{{"count", s.count}, {"mean_ns", s.mean_ns}, {"sd_ns", s.sd_ns},
              {"sum_ns", s.sum_ns}, {"p99_ns", s.p99_ns}};
}

} // namespace

const char* changeKindName(ChangeKind kind) {
  switch (kind) {
  case ChangeKind::kNew: return "new";
  case ChangeKind::kVanished: return "vanished";
  case ChangeKind::kSlower: return "slower";
  case ChangeKind::kFaster: return "faster";
  case ChangeKind::kMoreFrequent: return "more_frequent";
  case ChangeKind::kLessFrequent: return "less_frequent";
  }
  return "?";
}

RunDiff diffRuns(const Json& base, const Json& now, const DiffSettings& settings) {
  return Differ(base, now, settings).run();
}

Json diffJson(const RunDiff& diff) {
  Json shapes = Json::array();
  for (const ShapeChange& c : diff.shapes) {
    Json s{{"kind", changeKindName(c.kind)},
              {"function", c.function},
              {"base_shape", c.base_shape >= 0 ? Json(c.base_shape) : Json(nullptr)},
              {"new_shape", c.new_shape >= 0 ? Json(c.new_shape) : Json(nullptr)},
              {"base_calls", c.base_calls},
              {"new_calls", c.new_calls},
              {"base", summaryJson(c.base)},
              {"new", summaryJson(c.now)},
              {"base_share", c.base_share},
              {"new_share", c.new_share},
              {"z", c.z},
              {"impact_ns_per_s", c.impact_ns_per_s},
              {"recursion_depth", c.recursion_depth},
              {"derived", c.derived}};
    if (c.kind == ChangeKind::kVanished) s["no_longer_calls"] = c.no_longer_calls;
    if (c.kind == ChangeKind::kNew) {
      s["nearest_base_shape"] =
          c.nearest_base_shape >= 0 ? Json(c.nearest_base_shape) : Json(nullptr);
      s["nearest_distance"] = c.nearest_distance;
      s["also_calls"] = c.also_calls;
      s["no_longer_calls"] = c.no_longer_calls;
    }
    shapes.push_back(std::move(s));
  }
  Json functions = Json::array();
  for (const FunctionChange& f : diff.functions)
    functions.push_back({{"function", f.function},
                         {"base_calls", f.base_calls},
                         {"new_calls", f.new_calls},
                         {"base", summaryJson(f.base)},
                         {"new", summaryJson(f.now)},
                         {"z", f.z},
                         {"relative_change", f.relative_change},
                         {"significant", f.significant},
                         {"impact_ns_per_s", f.impact_ns_per_s},
                         {"explained_by", f.explained_by}});
  Json clusters = Json::array();
  for (const ClusterChange& c : diff.clusters)
    clusters.push_back(
        {{"base_cluster", c.base_cluster >= 0 ? Json(c.base_cluster) : Json(nullptr)},
         {"new_cluster", c.new_cluster >= 0 ? Json(c.new_cluster) : Json(nullptr)},
         {"function", c.function},
         {"base_calls", c.base_calls},
         {"new_calls", c.new_calls},
         {"base", summaryJson(c.base)},
         {"new", summaryJson(c.now)},
         {"z", c.z},
         {"relative_change", c.relative_change},
         {"significant", c.significant},
         {"shared", c.shared}});
  const FilteringDifference& filtering = diff.filtering;
  return {{"format", "shapetrace-diff"},
          {"version", 1},
          {"base", {{"seconds", diff.base_seconds}, {"calls", diff.base_calls}}},
          {"new", {{"seconds", diff.new_seconds}, {"calls", diff.new_calls}}},
          {"shared_functions", diff.shared_functions},
          {"filtering",
           {{"warning", filteringWarning(filtering)},
            {"filtered_only_base", filtering.filtered_only_base},
            {"filtered_only_new", filtering.filtered_only_new},
            {"throttled_only_base", filtering.throttled_only_base},
            {"throttled_only_new", filtering.throttled_only_new}}},
          {"explanations", diff.explanations},
          {"shapes", std::move(shapes)},
          {"functions", std::move(functions)},
          {"clusters", std::move(clusters)}};
}

std::string filteringWarning(const FilteringDifference& d) {
  if (d.same()) return {};
  constexpr size_t kNamed = 10; // per list; the JSON has them all
  std::string parts;
  auto part = [&](const char* what, const std::vector<std::string>& names) {
    if (names.empty()) return;
    std::string list;
    for (size_t i = 0; i < names.size() && i < kNamed; ++i)
      list += (i == 0 ? "" : ", ") + shortFunctionName(names[i]);
    if (names.size() > kNamed) list += " and " + std::to_string(names.size() - kNamed) + " more";
    parts += (parts.empty() ? "" : "; ") + std::string(what) + ": " + list;
  };
  part("filtered out at build only in BASE", d.filtered_only_base);
  part("filtered out at build only in NEW", d.filtered_only_new);
  part("throttled only in BASE", d.throttled_only_base);
  part("throttled only in NEW", d.throttled_only_new);
  return "FILTERED DIFFERENTLY: the runs did not record the same functions, so the shapes that "
         "call these differ by what was recorded, not by what the program did (" +
         parts + ")";
}

std::vector<std::string> regressions(const RunDiff& diff, double percent_limit) {
  std::vector<std::string> out;
  const double limit = percent_limit / 100;
  for (const FunctionChange& f : diff.functions)
    if (f.significant && f.relative_change > limit)
      out.push_back("function " + f.function + " " + percent(f.relative_change));
  for (const ClusterChange& c : diff.clusters)
    if (c.significant && c.relative_change > limit)
      out.push_back("cluster " + std::to_string(c.new_cluster) + " of " + c.function + " " +
                    percent(c.relative_change));
  return out;
}

} // namespace shapetrace::analyzer
