// Scopes: names checked against the analysis.
#include "scope.h"

#include "function_names.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <optional>

namespace shapetrace::analyzer {
namespace {

std::optional<uint64_t> parseUnsigned(std::string_view text) {
  uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

std::string formatSeconds(uint64_t ns) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g s", static_cast<double>(ns) / 1e9);
  return text;
}

} // namespace

std::vector<ThreadKey> selectThreads(const Analysis& a, const std::string& selector) {
  std::vector<ThreadKey> out;
  for (const ThreadSummary& t : a.threads) {
    const std::string id = std::to_string(t.key.thread);
    if (selector == id || selector == std::to_string(t.key.process) + ":" + id ||
        selector == t.name)
      out.push_back(t.key);
  }
  if (out.empty()) {
    std::string known;
    for (const ThreadSummary& t : a.threads)
      known += (known.empty() ? "" : ", ") + std::to_string(t.key.thread) +
               (t.name.empty() ? "" : " (" + t.name + ")");
    throw ScopeError("no thread '" + selector + "' in the recording (threads: " +
                     (known.empty() ? "none" : known) + ")");
  }
  return out;
}

std::string throttledLines(const Analysis& a) {
  if (a.throttled.empty()) return {};
  std::string out = "throttled (SHAPETRACE_THROTTLE; not recorded from then on):\n";
  for (const ThrottledFunction& t : a.throttled)
    out += "  " + shortFunctionName(a.functions[t.function].name) + "  at " +
           std::to_string(t.at_ns) + " ns on thread " + threadLabel(a, {t.process, t.thread}) +
           ", after " + std::to_string(t.short_calls) + " short calls; " +
           (t.count_known ? std::to_string(t.calls_not_recorded) + " calls not recorded"
                          : std::string("calls not recorded: unknown (no process end)")) +
           "\n";
  return out;
}

std::string filteredLine(const Analysis& a) {
  const size_t throttled = throttledFunctionCount(a);
  if (a.excluded.empty() && throttled == 0) return {};
  return "FILTERED: " + std::to_string(a.excluded.size()) + " functions filtered out at build, " +
         std::to_string(throttled) + " throttled (calls the recording does not hold; see " +
         "docs/analyzer.md, \"Filtered and throttled functions\")";
}

std::string inputLossLine(const Analysis& a) {
  const std::pair<Stat, const char*> parts[] = {
      {Stat::batches_lost_at_end, "event batches lost at threads' ends"},
      {Stat::batch_sequence_gaps, "event batches missing before others"},
      {Stat::duplicate_batches, "event batches repeated (read once)"},
      {Stat::recording_damage, "damaged or lost stretches of the recording"},
      {Stat::undecodable_messages, "undecodable messages"},
      {Stat::live_items_missed, "live items missed"}};
  std::string what;
  for (const auto& [stat, text] : parts)
    if (const uint64_t n = a.diagnostics.count(stat))
      what += (what.empty() ? "" : ", ") + std::to_string(n) + " " + text;
  if (what.empty()) return {};
  constexpr size_t kThreadsNamed = 8;
  std::string threads;
  size_t affected = 0;
  for (const ThreadSummary& t : a.threads) {
    const Diagnostics& d = t.diagnostics;
    if (d.count(Stat::batches_lost_at_end) + d.count(Stat::batch_sequence_gaps) +
            d.count(Stat::duplicate_batches) ==
        0)
      continue;
    if (++affected <= kThreadsNamed)
      threads += (threads.empty() ? "" : ", ") + threadLabel(a, t.key);
  }
  if (affected > kThreadsNamed)
    threads += " and " + std::to_string(affected - kThreadsNamed) + " more";
  return "LOSS: the input is not what was recorded: " + what +
         (threads.empty() ? "" : "; threads " + threads) + " (see diagnostics)";
}

std::string threadLabel(const Analysis& a, const ThreadKey& thread) {
  return ThreadLabels(a)(thread);
}

ThreadLabels::ThreadLabels(const Analysis& a) {
  for (const ThreadSummary& t : a.threads) {
    several_processes_ |= t.key.process != a.threads.front().key.process;
    threads_[t.key] = &t; // a key listed twice: the last one names it
  }
}

std::string ThreadLabels::operator()(const ThreadKey& thread) const {
  const auto it = threads_.find(thread);
  const std::string name = it == threads_.end() ? std::string() : it->second->name;
  // A process's folded threads (thread_fold.h) have no thread id of their own.
  const bool folded = it != threads_.end() && it->second->folded_threads > 0;
  std::string label = folded         ? name
                      : name.empty() ? std::to_string(thread.thread)
                                     : name + " (" + std::to_string(thread.thread) + ")";
  // The folded processes (thread_fold.h) are of no one process.
  const bool folded_processes = it != threads_.end() && it->second->folded_processes > 0;
  return several_processes_ && !folded_processes ? std::to_string(thread.process) + ":" + label
                                                 : label;
}

bool namesFunction(const FunctionName& f, std::string_view name) {
  if (f.name == name || f.mangled == name)
    return true;
  const std::string bare = withoutParameters(f.name);
  return bare == name || withoutAbiTags(bare) == name;
}

std::vector<uint32_t> selectFunctions(const Analysis& a, const std::string& name) {
  std::vector<uint32_t> out;
  for (uint32_t i = 0; i < a.functions.size(); ++i) {
    if (namesFunction(a.functions[i], name)) out.push_back(i);
  }
  if (!out.empty()) return out;
  std::vector<std::string> similar;
  for (const FunctionSummary& f : a.functions)
    if (f.name.find(name) != std::string::npos) similar.push_back(withoutParameters(f.name));
  std::sort(similar.begin(), similar.end());
  similar.erase(std::unique(similar.begin(), similar.end()), similar.end());
  std::string hint;
  for (size_t i = 0; i < similar.size() && i < 5; ++i)
    hint += (hint.empty() ? "" : ", ") + similar[i];
  if (similar.size() > 5) hint += ", ...";
  throw ScopeError("no function '" + name + "' in the recording" +
                   (hint.empty() ? "" : " (did you mean: " + hint + "?)"));
}

std::optional<ValueChoice> parseValueChoice(const std::string& text) {
  const size_t at = text.rfind('@');
  if (at == std::string::npos || at == 0)
    return std::nullopt;
  const std::string value = text.substr(at + 1);
  ValueChoice choice{text.substr(0, at), 0};
  if (value == "retval")
    return choice;
  if (value.size() < 4 || value.compare(0, 3, "arg") != 0 ||
      value.find_first_not_of("0123456789", 3) != std::string::npos || value.size() > 6)
    return std::nullopt;
  const int position = std::stoi(value.substr(3));
  if (position < 1 || position > 255)
    return std::nullopt;
  choice.position = static_cast<uint8_t>(position);
  return choice;
}

uint64_t parseTime(std::string_view text, uint64_t run_start_ns) {
  if (auto absolute = parseUnsigned(text)) return *absolute;
  static const std::pair<std::string_view, double> units[] = {
      {"ns", 1}, {"us", 1e3}, {"µs", 1e3}, {"ms", 1e6}, {"s", 1e9}};
  for (const auto& [unit, scale] : units) {
    if (text.size() <= unit.size() || !text.ends_with(unit)) continue;
    std::string number(text.substr(0, text.size() - unit.size()));
    if (!number.empty() && number.front() == '+') number.erase(0, 1);
    if (number.empty() || !(std::isdigit(static_cast<unsigned char>(number.front())) ||
                            number.front() == '.'))
      break;
    size_t used = 0;
    double value = 0;
    try {
      value = std::stod(number, &used);
    } catch (const std::exception&) {
      break;
    }
    if (used != number.size() || !std::isfinite(value) || value < 0) break;
    return run_start_ns + static_cast<uint64_t>(std::llround(value * scale));
  }
  throw std::invalid_argument("'" + std::string(text) +
                              "' is not a time (absolute nanoseconds, or a number with a unit "
                              "ns, us, ms or s from the run's start, e.g. 1.5s)");
}

std::string checkTime(const std::string& text) {
  try {
    parseTime(text, 0);
    return {};
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
}

bool needsAnalysis(const ScopeRequest& r) {
  return !r.shape.empty() || !r.cluster.empty() || r.instance.starts_with("outlier:");
}

Scope resolveScope(const Analysis& a, uint64_t run_start_ns, const ScopeRequest& r) {
  Scope s;
  s.depth = r.depth;
  const uint64_t start = run_start_ns == UINT64_MAX ? 0 : run_start_ns;
  const int roots = !r.function.empty() + !r.shape.empty() + !r.cluster.empty() + !r.instance.empty();
  if (roots > 1)
    throw std::invalid_argument("give at most one of --function, --shape, --cluster, --instance");
  std::vector<std::string> parts;
  if (!r.from.empty()) s.from_ns = parseTime(r.from, start);
  if (!r.to.empty()) s.to_ns = parseTime(r.to, start);
  if (s.to_ns <= s.from_ns)
    throw std::invalid_argument("the window is empty: --to must be after --from");

  if (!r.instance.empty()) {
    s.roots = Scope::Roots::kInstance;
    if (r.instance.starts_with("outlier:")) {
      const auto n = parseUnsigned(std::string_view(r.instance).substr(8));
      if (!n) throw std::invalid_argument("'" + r.instance + "': outlier:N takes a number");
      if (*n >= a.outliers.size())
        throw ScopeError("no outlier " + std::to_string(*n) + " (the analysis kept " +
                         std::to_string(a.outliers.size()) + ")");
      const Outlier& o = a.outliers[*n];
      s.threads = {{o.process, o.thread}};
      s.instance_ns = o.start_ns;
      s.instance_function = o.function;
      parts.push_back("outlier " + std::to_string(*n) + ": the call of " +
                      a.functions[o.function].name + " at " + std::to_string(o.start_ns) +
                      " ns on " + threadLabel(a, s.threads[0]));
    } else {
      const size_t at = r.instance.rfind('@');
      if (at == std::string::npos || at == 0)
        throw std::invalid_argument("'" + r.instance +
                                    "' is not an instance (THREAD@TIME or outlier:N)");
      s.threads = selectThreads(a, r.instance.substr(0, at));
      if (s.threads.size() != 1)
        throw ScopeError("'" + r.instance.substr(0, at) + "' names " +
                         std::to_string(s.threads.size()) + " threads; give its id");
      s.instance_ns = parseTime(std::string_view(r.instance).substr(at + 1), start);
      if (!r.thread.empty()) throw std::invalid_argument("--instance names its thread already");
      parts.push_back("the call at " + std::to_string(s.instance_ns) + " ns on " +
                      threadLabel(a, s.threads[0]));
    }
    return s.description = parts.front(), s;
  }

  if (!r.thread.empty()) {
    s.threads = selectThreads(a, r.thread);
    std::string names;
    for (const ThreadKey& t : s.threads)
      names += (names.empty() ? "" : ", ") + threadLabel(a, t);
    parts.push_back((s.threads.size() == 1 ? "thread " : "threads ") + names);
  } else {
    for (const ThreadSummary& t : a.threads)
      s.threads.push_back(t.key);
    if (s.threads.empty()) throw ScopeError("the recording has no thread with events");
    parts.push_back("every thread");
  }
  if (!r.function.empty()) {
    s.roots = Scope::Roots::kFunctions;
    s.functions.assign(a.functions.size(), false);
    for (uint32_t f : selectFunctions(a, r.function))
      s.functions[f] = true;
    parts.push_back("calls of " + r.function);
  }
  auto idOf = [](const std::string& text, const char* what) {
    const auto id = parseUnsigned(text);
    if (!id) throw std::invalid_argument("'" + text + "' is not a " + what + " id (a number)");
    return *id;
  };
  if (!r.shape.empty()) {
    const uint64_t id = idOf(r.shape, "shape");
    if (id == 0 || id >= a.shapes.size())
      throw ScopeError("no shape " + r.shape + " (the analysis has shapes 1.." +
                       std::to_string(a.shapes.size() - 1) + ")");
    s.roots = Scope::Roots::kShapes;
    s.shapes.assign(a.shapes.size(), false);
    s.shapes[id] = true;
    const uint32_t function = a.shapes.function(static_cast<ShapeId>(id));
    parts.push_back("calls of shape " + r.shape + " (" + a.functions[function].name + ")");
  }
  if (!r.cluster.empty()) {
    const uint64_t id = idOf(r.cluster, "cluster");
    if (id >= a.clustering.clusters.size())
      throw ScopeError("no cluster " + r.cluster + " (the analysis has clusters 0.." +
                       std::to_string(a.clustering.clusters.size() - 1) + ")");
    s.roots = Scope::Roots::kShapes;
    s.shapes.assign(a.shapes.size(), false);
    const Cluster& c = a.clustering.clusters[id];
    for (ShapeId shape : c.shapes)
      s.shapes[shape] = true;
    parts.push_back("calls of cluster " + r.cluster + " (" + a.functions[c.function].name + ")");
  }
  if (!r.from.empty() || !r.to.empty()) {
    auto since = [&](uint64_t t) { return formatSeconds(t - std::min(t, start)); };
    parts.push_back((r.from.empty() ? std::string("start") : since(s.from_ns)) + " .. " +
                    (r.to.empty() ? std::string("end") : since(s.to_ns)) + " from the run's start");
  }
  if (r.depth != UINT32_MAX) parts.push_back(std::to_string(r.depth) + " levels deep");
  for (const std::string& p : parts)
    s.description += (s.description.empty() ? "" : ", ") + p;
  return s;
}

} // namespace shapetrace::analyzer
