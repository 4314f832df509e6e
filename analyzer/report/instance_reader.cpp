// Replaying one thread's events from an index seek until the wanted call has finished.
#include "report/instance_reader.h"

#include "wire/codec.h"
#include "wire/format_error.h"

#include <algorithm>

namespace shapetrace::analyzer::report {
namespace {

constexpr uint32_t kUnknownFunction = UINT32_MAX;
// A child whose shape the analysis does not know (its subtree was cut by a gap, say): the
// parent's shape is then unknown too.
constexpr ShapeId kUnknownShape = UINT32_MAX;
// Calls kept in memory while waiting for a candidate to finish; beyond this the calls are counted
// but not stored, and the instance lists only its first calls.
constexpr size_t kMaxStoredCalls = size_t{1} << 22;
constexpr size_t kNotStored = SIZE_MAX;

struct OpenCall {
  uint32_t function;
  uint64_t enter_ns;
  size_t children_begin; // into the child-shape stack
  size_t node;           // into the stored calls, or kNotStored
  uint64_t descendants = 0;
};

struct StoredCall {
  uint32_t function;
  uint32_t depth;
  uint64_t start_ns;
  uint64_t end_ns;
};

// The scan of one find(): a call stack over the thread's events, the calls entered since the
// stack was last empty, and the first finished call that matches.
class Replay {
public:
  Replay(const ShapeTable& shapes, uint64_t from_ns, uint64_t to_ns, const CallPredicate& matches)
      : shapes_(shapes), from_ns_(from_ns), to_ns_(to_ns), matches_(matches) {}

  void enter(uint32_t function, uint64_t time_ns) {
    size_t node = kNotStored;
    if (stored_.size() < kMaxStoredCalls) {
      node = stored_.size();
      stored_.push_back({function, static_cast<uint32_t>(stack_.size()), time_ns, time_ns});
    }
    stack_.push_back({function, time_ns, child_shapes_.size(), node});
  }

  // Returns true once a matching call has finished (see found()).
  bool leave(uint32_t function, uint64_t time_ns) {
    auto it = std::find_if(stack_.rbegin(), stack_.rend(),
                           [&](const OpenCall& c) { return c.function == function; });
    if (it == stack_.rend()) return false; // entered before the seek point, or after a gap
    const size_t target = static_cast<size_t>(stack_.rend() - it) - 1;
    while (stack_.size() > target)
      if (finishTop(time_ns)) return true;
    return false;
  }

  void reset() {
    stack_.clear();
    child_shapes_.clear();
    stored_.clear();
  }

  // True while a call that started inside the window is still open (or none was seen yet).
  bool candidatesOpen() const {
    return std::any_of(stack_.begin(), stack_.end(), [&](const OpenCall& c) {
      return c.enter_ns >= from_ns_ && c.enter_ns < to_ns_;
    });
  }

  Instance takeFound(size_t max_calls) {
    Instance out = std::move(found_);
    const StoredCall& root = stored_[found_node_];
    const size_t available = stored_.size() - found_node_;
    const size_t listed = std::min({available, max_calls, static_cast<size_t>(found_calls_)});
    out.calls.reserve(listed);
    for (size_t i = 0; i < listed; ++i) {
      const StoredCall& c = stored_[found_node_ + i];
      out.calls.push_back(
          {c.function, c.depth - root.depth, c.start_ns - root.start_ns, c.end_ns - root.start_ns});
    }
    out.omitted_calls = found_calls_ - listed;
    return out;
  }

private:
  bool finishTop(uint64_t time_ns) {
    OpenCall call = stack_.back();
    stack_.pop_back();
    const ShapeId shape = shapeOf(call);
    child_shapes_.resize(call.children_begin);
    if (call.node != kNotStored) stored_[call.node].end_ns = time_ns;
    if (!stack_.empty()) {
      child_shapes_.push_back(shape);
      stack_.back().descendants += 1 + call.descendants;
    }
    const CallCandidate candidate{call.function, shape == kUnknownShape ? kNullShape : shape,
                                  call.enter_ns, time_ns - call.enter_ns};
    if (call.node != kNotStored && call.enter_ns >= from_ns_ && call.enter_ns < to_ns_ &&
        matches_(candidate)) {
      found_node_ = call.node;
      found_calls_ = 1 + call.descendants;
      found_.start_ns = call.enter_ns;
      found_.duration_ns = candidate.duration_ns;
      found_.function = call.function;
      found_.shape = candidate.shape;
      return true;
    }
    if (stack_.empty()) stored_.clear(); // nothing open can still need these calls
    return false;
  }

  ShapeId shapeOf(const OpenCall& call) {
    if (call.function == kUnknownFunction) return kUnknownShape;
    auto children = std::span(child_shapes_).subspan(call.children_begin);
    if (std::find(children.begin(), children.end(), kUnknownShape) != children.end())
      return kUnknownShape;
    const size_t size = canonicalizeChildSet(children);
    const ShapeId shape = shapes_.find(call.function, children.first(size));
    return shape == kNullShape ? kUnknownShape : shape;
  }

  const ShapeTable& shapes_;
  uint64_t from_ns_, to_ns_;
  const CallPredicate& matches_;
  std::vector<OpenCall> stack_;
  std::vector<ShapeId> child_shapes_;
  std::vector<StoredCall> stored_;
  Instance found_;
  size_t found_node_ = 0;
  uint64_t found_calls_ = 0;
};

} // namespace

std::string functionIdentity(const wire::FunctionInfo* info, uint32_t id) {
  std::string identity;
  if (info != nullptr)
    identity = !info->mangled_name.empty() ? info->mangled_name : info->demangled_name;
  if (identity.empty()) identity = "fn#" + std::to_string(id);
  return identity;
}

InstanceReader::InstanceReader(
    recording::RecordingReader& reader, const Analysis& analysis,
    const std::map<std::pair<uint64_t, uint32_t>, wire::FunctionInfo>& functions)
    : reader_(reader), analysis_(analysis), functions_(functions) {
  for (uint32_t index = 0; index < analysis.functions.size(); ++index) {
    const FunctionSummary& f = analysis.functions[index];
    by_identity_.emplace(!f.mangled.empty() ? f.mangled : f.name, index);
  }
}

uint32_t InstanceReader::functionIndex(uint64_t process, uint32_t id) {
  const auto key = std::pair{process, id};
  if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  const auto info = functions_.find(key);
  const std::string identity =
      functionIdentity(info == functions_.end() ? nullptr : &info->second, id);
  const auto found = by_identity_.find(identity);
  const uint32_t index = found == by_identity_.end() ? kUnknownFunction : found->second;
  cache_.emplace(key, index);
  return index;
}

std::optional<Instance> InstanceReader::find(uint64_t process, uint32_t thread, uint64_t from_ns,
                                             uint64_t to_ns, const CallPredicate& matches,
                                             size_t max_calls) {
  if (!reader_.seek(process, thread, from_ns)) return std::nullopt;
  Replay replay(analysis_.shapes, from_ns, to_ns, matches);
  while (auto frame = reader_.next()) {
    ++frames_read_;
    wire::ItemHeader header;
    try {
      header = wire::peekItem(frame->message);
    } catch (const wire::FormatError&) {
      continue; // counted by the analysis pass already
    }
    if (header.process != process || header.thread != thread) continue;
    if (header.kind == wire::ItemKind::ThreadEnd) break;
    if (header.kind == wire::ItemKind::Gap) {
      replay.reset(); // the open calls' content is incomplete, as the analyzer treats it
      continue;
    }
    if (header.kind != wire::ItemKind::EventBatch) continue;
    wire::StreamItem item;
    try {
      item = wire::decodeItem(frame->message);
    } catch (const wire::FormatError&) {
      replay.reset();
      continue;
    }
    uint64_t last_ns = 0;
    for (const Event& e : std::get<wire::EventBatch>(item.body).events) {
      last_ns = e.timestamp;
      const uint32_t function = functionIndex(process, e.function_id);
      if (e.kind == EventKind::Enter) {
        replay.enter(function, e.timestamp);
      } else if (replay.leave(function, e.timestamp)) {
        Instance instance = replay.takeFound(max_calls);
        instance.process = process;
        instance.thread = thread;
        return instance;
      }
    }
    if (last_ns >= to_ns && !replay.candidatesOpen()) break;
  }
  return std::nullopt;
}

} // namespace shapetrace::analyzer::report
