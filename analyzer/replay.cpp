// Reading one thread's events back from a recording.
#include "replay.h"

#include "call_stack.h"
#include "wire/codec.h"
#include "wire/format_error.h"

#include <algorithm>

namespace shapetrace::analyzer {

ThreadEvents::ThreadEvents(recording::RecordingReader& reader, const Analysis& analysis)
    : reader_(reader), analysis_(analysis) {}

bool ThreadEvents::start(const ThreadKey& thread, uint64_t time_ns) {
  thread_ = thread;
  return reader_.seek(thread.process, thread.thread, time_ns);
}

ThreadEvents::Kind ThreadEvents::next() {
  while (auto frame = reader_.next()) {
    ++frames_read_;
    wire::ItemHeader header;
    try {
      header = wire::peekItem(frame->message);
    } catch (const wire::FormatError&) {
      continue; // whose it is cannot be told; the analysis pass counted it
    }
    if (header.process != thread_.process || header.thread != thread_.thread) continue;
    if (header.kind == wire::ItemKind::ThreadEnd) return Kind::kEnd;
    if (header.kind != wire::ItemKind::EventBatch && header.kind != wire::ItemKind::Gap) continue;
    wire::StreamItem item;
    try {
      item = wire::decodeItem(frame->message);
    } catch (const wire::FormatError&) {
      return Kind::kUndecodable;
    }
    if (auto* gap = std::get_if<wire::Gap>(&item.body)) {
      dropped_ = gap->dropped;
      return Kind::kGap;
    }
    auto& batch = std::get<wire::EventBatch>(item.body);
    sequence_ = header.sequence;
    events_ = std::move(batch.events);
    mapFunctions(thread_.process, events_);
    return Kind::kBatch;
  }
  return Kind::kEnd;
}

void ThreadEvents::mapFunctions(uint64_t process, std::vector<Event>& events) {
  const auto unknown_base = static_cast<uint32_t>(analysis_.functions.size());
  for (Event& e : events) {
    const auto key = std::pair{process, e.function_id};
    auto it = cache_.find(key);
    if (it == cache_.end()) {
      uint32_t index = analysis_.functionIndex(process, e.function_id);
      if (index == UINT32_MAX) index = std::min(unknown_base + e.function_id, kMaxFunctionId - 1);
      it = cache_.emplace(key, index).first;
    }
    e.function_id = it->second;
  }
}

} // namespace shapetrace::analyzer
