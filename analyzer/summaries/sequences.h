// The sequences of a scope (scope.h) read back from a recording after its analysis: what the
// structure summaries and the comparison encode (docs/summaries.md, "Sequences").
//
// A thread scope gives one sequence per thread: the calls that start in the window. A scope of
// roots (a function, shapes, a cluster, one instance) gives one sequence per outermost root call
// that starts in the window: the call and every call under it. Calls deeper than the scope's depth
// below their sequence's root are left out. Each thread is replayed through the call stream
// (call_stack.h) with the analyzer's rules, function ids mapped onto the analysis' functions.
// Shapes are known only when a call ends, so a scope of shapes reads each thread twice: first to
// find its root calls (by the order they were entered), then to give their calls.
#pragma once

#include "analysis.h"
#include "recording/recording.h"
#include "scope.h"
#include "wire/items.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace shapetrace::analyzer::summaries {

struct SequenceInfo {
  ThreadKey thread;
  uint64_t start_ns = 0;
  uint32_t function = UINT32_MAX; // the root's (UINT32_MAX: a thread's sequence)
};

// Receives one sequence at a time. Functions are analysis function indices; depth is below the
// sequence's root (a thread's outermost calls are at 0).
class SequenceSink {
public:
  virtual ~SequenceSink() = default;
  virtual void begin(const SequenceInfo& info) = 0;
  virtual void enter(uint32_t function, uint32_t depth, uint64_t time_ns) = 0;
  // `measured`: false when an outer call's exit closed it (its duration an upper bound).
  virtual void exit(uint32_t function, uint32_t depth, uint64_t enter_ns, uint64_t exit_ns,
                    bool measured) = 0;
  // Events were lost (a gap): the open calls will not return.
  virtual void gap(uint64_t /*time_ns*/) {}
  virtual void end(uint64_t time_ns) = 0;
};

struct ReplayStats {
  uint64_t sequences = 0;
  uint64_t calls = 0;
  uint64_t truncated = 0; // sequences cut by a gap or the end of their thread
  uint64_t frames_read = 0;
};

// Calls told apart by a recorded argument (summarize --with-values FUNC@argN; docs/summaries.md):
// a call of a chosen function whose argument the recording holds is written as a function of its
// own, "kv::Server::serve@arg2=4096", so that serve(4096) and serve(16) are different symbols for
// every encoding. Those functions take the indices after the analysis' functions (names() lists
// them, to be appended to the analysis' functions before the encoding is written); the ids of
// functions the analysis does not know are mapped past them (ThreadEvents' unknown base).
class ValueSymbols {
public:
  static constexpr uint32_t kMaxSymbols = uint32_t{1} << 16;
  // `position`: per analysis function index, the argument that names its calls (0: not chosen).
  ValueSymbols(const Analysis& analysis, std::vector<uint8_t> position);

  uint8_t positionOf(uint32_t function) const {
    return function < position_.size() ? position_[function] : 0;
  }
  // The function index that stands for calls of `function` whose argument is `value`; `function`
  // itself past kMaxSymbols distinct ones (counted in capped()).
  uint32_t symbolOf(uint32_t function, const wire::CallValue& value);
  // A call of a chosen function without its value recorded (written as its function).
  void missing() { ++missing_; }

  uint32_t firstIndex() const { return first_; }
  uint32_t unknownBase() const { return first_ + kMaxSymbols; }
  const std::vector<std::string>& names() const { return names_; }
  uint64_t missingCalls() const { return missing_; }
  uint64_t cappedCalls() const { return capped_; }

private:
  const Analysis& analysis_;
  std::vector<uint8_t> position_;
  uint32_t first_;
  std::map<std::pair<uint32_t, std::string>, uint32_t> index_; // (function, value text) -> index
  std::vector<std::string> names_;
  uint64_t missing_ = 0;
  uint64_t capped_ = 0;
};

// `symbols`: calls of chosen functions told apart by their values (nullptr: none).
ReplayStats replayScope(recording::RecordingReader& reader, const Analysis& analysis,
                        const Scope& scope, SequenceSink& sink, ValueSymbols* symbols = nullptr);

// "Why was this call slow": the call to compare an outlier with (docs/summaries.md).
struct CallRef {
  ThreadKey thread;
  uint64_t start_ns = 0;
  uint64_t duration_ns = 0;
  uint32_t function = 0;
  ShapeId shape = kNullShape;
};
// The shape most of the function's calls have (kNullShape when it has none): its usual work.
ShapeId typicalShape(const Analysis& analysis, uint32_t function);

// What a call is compared with: a shape of its function, and why that one.
struct TypicalShape {
  ShapeId shape = kNullShape;
  std::string reason;
};
// For a call of shape `call_shape` (kNullShape: not known): that shape, when the call did the
// same work as its shape's other calls, only slower (`same_work_slower`: Outlier::shape_outlier,
// the analysis' judgement), so that the two align completely; else the call did other work than
// its function's usual calls, and it is compared with the common shape (at least the outlier
// rule's minimum of measured calls) of the same function nearest to it by the Shape metric, the
// least different work (more calls, then the smaller id, break ties): a put that waited for a
// flush with a put, not with the more frequent get; else with the function's most common shape.
// kNullShape when the function has no other call.
TypicalShape typicalShapeFor(const Analysis& analysis, uint32_t function, ShapeId call_shape,
                             bool same_work_slower);
// A typical call of `shape`: the first call of it that took at most the shape's median time (with
// its own exit), on `prefer` first, then on the other threads in order; nullopt when there is
// none. A call starting at `skip` on `prefer` (the one being explained) is not taken.
std::optional<CallRef> findTypicalCall(recording::RecordingReader& reader,
                                       const Analysis& analysis, ShapeId shape,
                                       const ThreadKey& prefer,
                                       std::optional<uint64_t> skip = std::nullopt);

} // namespace shapetrace::analyzer::summaries
