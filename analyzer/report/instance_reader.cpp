// Replaying one thread's events from an index seek until the wanted call has finished.
#include "report/instance_reader.h"

#include "call_stack.h"

#include <algorithm>

namespace shapetrace::analyzer::report {
namespace {

// Calls kept in memory while waiting for a candidate to finish; beyond this the calls are counted
// but not stored, and the instance lists only its first calls.
constexpr size_t kMaxStoredCalls = size_t{1} << 22;

struct StoredCall {
  uint32_t function;
  uint32_t depth;
  uint64_t start_ns;
  uint64_t end_ns;
};

// A call-stack sink that stops at the first finished call that starts in the window and matches.
// It keeps only the calls an instance can list: those entered in the window and the `max_calls`
// entered after the last of them, so that a candidate spanning the rest of its thread (a thread's
// loop) costs a scan, not memory that grows with the thread's calls.
//
// The window is in the analysis' times, where a call open at a tracer wait starts later by the
// wait (call_stack.h): a call is taken for the window when it entered up to `slack_ns` (the
// thread's tracer waits) before it; whether it starts in it is decided on its analysis time.
class ReplaySink {
public:
  ReplaySink(uint64_t from_ns, uint64_t to_ns, uint64_t slack_ns, const CallPredicate& matches,
             size_t max_calls)
      : from_ns_(from_ns), to_ns_(to_ns), slack_ns_(slack_ns), matches_(matches),
        max_calls_(max_calls) {}

  void onEnter(uint32_t function, uint32_t depth, uint64_t time_ns) {
    if (found_)
      return;
    const bool in_window = mayStartInWindow(time_ns);
    if (in_window)
      last_in_window_ = entered_;
    const bool listable =
        in_window || (last_in_window_ != kNone && entered_ - last_in_window_ < max_calls_);
    const bool stored = listable && stored_.size() < kMaxStoredCalls;
    open_.push_back({stored ? stored_.size() : kNone, entered_++, time_ns});
    if (stored)
      stored_.push_back({function, depth, time_ns, time_ns});
  }

  void onCall(const FinishedCall& call) {
    if (found_)
      return;
    const Open open = open_.back();
    open_.pop_back();
    const bool stored = open.stored != kNone;
    if (stored)
      stored_[open.stored].end_ns = call.exit_ns;
    if (stored && call.enter_ns >= from_ns_ && call.enter_ns < to_ns_ &&
        matches_(CallCandidate{call.function, call.shape, call.enter_ns,
                               call.exit_ns - call.enter_ns})) {
      found_ = true;
      found_node_ = open.stored;
      found_calls_ = entered_ - open.entered; // it and everything entered under it
      instance_.start_ns = call.enter_ns;
      instance_.duration_ns = call.exit_ns - call.enter_ns;
      instance_.function = call.function;
      instance_.shape = call.shape;
      return;
    }
    if (open_.empty())
      clearStored(); // nothing open can still need these calls
  }

  // The recorded values of the innermost open call (the call stack checked it is theirs).
  void onValues(const wire::CallValues& values) {
    if (found_ || open_.empty() || open_.back().stored == kNone)
      return;
    values_.push_back({open_.back().stored, values.values});
  }

  // The open calls' content is incomplete (a gap), as the analyzer treats it.
  void onReset() {
    if (found_)
      return;
    open_.clear();
    clearStored();
  }

  bool found() const { return found_; }
  // True while a call that started inside the window is still open.
  bool candidatesOpen() const {
    return std::any_of(open_.begin(), open_.end(),
                       [&](const Open& o) { return mayStartInWindow(o.enter_ns); });
  }

  Instance takeFound() {
    Instance out = std::move(instance_);
    const StoredCall& root = stored_[found_node_];
    const size_t available = stored_.size() - found_node_;
    const size_t listed = std::min({available, max_calls_, static_cast<size_t>(found_calls_)});
    out.calls.reserve(listed);
    for (size_t i = 0; i < listed; ++i) {
      const StoredCall& c = stored_[found_node_ + i];
      out.calls.push_back(
          {c.function, c.depth - root.depth, c.start_ns - root.start_ns, c.end_ns - root.start_ns});
    }
    out.omitted_calls = found_calls_ - listed;
    for (const auto& [stored, values] : values_)
      if (stored >= found_node_ && stored - found_node_ < listed) {
        std::vector<wire::CallValue>& to = out.calls[stored - found_node_].values;
        to.insert(to.end(), values.begin(), values.end());
      }
    return out;
  }

private:
  static constexpr size_t kNone = SIZE_MAX;

  void clearStored() {
    stored_.clear();
    values_.clear();
  }
  bool mayStartInWindow(uint64_t enter_ns) const {
    return enter_ns + slack_ns_ >= from_ns_ && enter_ns < to_ns_;
  }
  struct Open {
    size_t stored;    // its place in stored_, or kNone: not stored
    uint64_t entered; // calls entered before it
    uint64_t enter_ns;
  };

  uint64_t from_ns_, to_ns_, slack_ns_;
  const CallPredicate& matches_;
  size_t max_calls_;
  std::vector<Open> open_;
  std::vector<StoredCall> stored_;
  // The values of stored calls: their place in stored_ and the values, in the order recorded.
  std::vector<std::pair<size_t, std::vector<wire::CallValue>>> values_;
  uint64_t entered_ = 0;
  uint64_t last_in_window_ = kNone; // calls entered before the last one entered in the window
  bool found_ = false;
  size_t found_node_ = 0;
  uint64_t found_calls_ = 0;
  Instance instance_;
};

} // namespace

InstanceReader::InstanceReader(recording::RecordingReader& reader, const Analysis& analysis)
    : analysis_(analysis), events_(reader, analysis) {}

std::optional<Instance> InstanceReader::find(uint64_t process, uint32_t thread, uint64_t from_ns,
                                             uint64_t to_ns, const CallPredicate& matches,
                                             size_t max_calls) {
  const uint64_t slack_ns = tracerWaitNs(analysis_, {process, thread});
  if (!events_.start({process, thread}, from_ns > slack_ns ? from_ns - slack_ns : 0))
    return std::nullopt;
  ReplaySink replay(from_ns, to_ns, slack_ns, matches, max_calls);
  // Looks shapes up only: a call whose shape the analysis does not know matches no cluster.
  CallStack<ReplaySink> stack(replay, ShapeLookup::find(analysis_.shapes),
                              analysis_.settings.thread.max_depth);
  for (;;) {
    const ThreadEvents::Kind kind = events_.next();
    if (kind == ThreadEvents::Kind::kEnd)
      break;
    if (kind != ThreadEvents::Kind::kBatch) {
      stack.onGap(0);
      continue;
    }
    // Whole batches, so that the stack takes its leaf path; the sink ignores what follows the
    // call it found. Missing batches are a gap, and the tracer's waits are measured as the
    // analysis measured them.
    const std::vector<Event>& events = events_.events();
    stack.onBatch(events_.sequence(), events, events_.waits(), events_.values());
    if (replay.found()) {
      Instance instance = replay.takeFound();
      instance.process = process;
      instance.thread = thread;
      return instance;
    }
    if (!events.empty() && events.back().timestamp >= to_ns && !replay.candidatesOpen())
      break;
  }
  return std::nullopt;
}

} // namespace shapetrace::analyzer::report
