// Reading one thread's events back from a recording.
#include "replay.h"

#include "call_stack.h"
#include "wire/codec.h"
#include "wire/format_error.h"

#include <algorithm>

namespace shapetrace::analyzer {

RecordingNames namesOf(recording::RecordingReader& reader, const AnalysisSettings& settings) {
  RecordingNames out;
  out.analysis.settings = settings;
  std::map<std::pair<uint64_t, uint32_t>, wire::FunctionInfo> functions;
  std::map<ThreadKey, std::string> threads;
  // Each thread's batch numbers, as the analyzer checks them: what was lost or repeated.
  std::map<ThreadKey, std::pair<BatchSequence, Diagnostics>> batches;
  auto sequenceOf = [&batches](const ThreadKey& key) -> auto& {
    return batches.try_emplace(key, BatchSequence(true), Diagnostics{}).first->second;
  };
  uint64_t undecodable = 0;
  reader.rewind();
  while (auto frame = reader.next()) {
    wire::ItemHeader header;
    try {
      header = wire::peekItem(frame->message);
    } catch (const wire::FormatError&) {
      ++undecodable;
      continue;
    }
    if (header.kind == wire::ItemKind::EventBatch) {
      threads.try_emplace({header.process, header.thread});
      auto& [sequence, diagnostics] = sequenceOf({header.process, header.thread});
      if (sequence.arrive(header.sequence, diagnostics) == BatchSequence::Arrival::kRepeated)
        continue;
      if (header.event_count != 0) out.first_ns = std::min(out.first_ns, header.first_ns);
      continue;
    }
    if (header.kind != wire::ItemKind::ModuleTable && header.kind != wire::ItemKind::ThreadStart &&
        header.kind != wire::ItemKind::ThreadName && header.kind != wire::ItemKind::ProcessStart &&
        header.kind != wire::ItemKind::Gap && header.kind != wire::ItemKind::ThreadEnd)
      continue;
    wire::StreamItem item;
    try {
      item = wire::decodeItem(frame->message);
    } catch (const wire::FormatError&) {
      ++undecodable;
      continue;
    }
    if (const auto* gap = std::get_if<wire::Gap>(&item.body)) {
      sequenceOf({item.process, gap->thread}).first.gapAfter(gap->after_sequence);
      continue;
    }
    if (const auto* end = std::get_if<wire::ThreadEnd>(&item.body)) {
      auto& [sequence, diagnostics] = sequenceOf({item.process, end->thread});
      sequence.end(end->batches, diagnostics);
      continue;
    }
    if (const auto* table = std::get_if<wire::ModuleTable>(&item.body)) {
      for (const wire::FunctionInfo& f : table->functions)
        functions.try_emplace({item.process, f.id}, f);
    } else if (const auto* start = std::get_if<wire::ThreadStart>(&item.body)) {
      if (!start->name.empty()) threads[{item.process, start->thread}] = start->name;
    } else if (const auto* name = std::get_if<wire::ThreadName>(&item.body)) {
      threads[{item.process, name->thread}] = name->name;
    } else if (const auto* process = std::get_if<wire::ProcessStart>(&item.body)) {
      out.pids[item.process] = process->pid;
    }
  }
  reader.rewind();
  FunctionIndex index(out.analysis, [&](uint64_t process, uint32_t id) -> const wire::FunctionInfo* {
    const auto it = functions.find({process, id});
    return it == functions.end() ? nullptr : &it->second;
  });
  for (const auto& [key, info] : functions)
    index.indexOf(key.first, key.second);
  Diagnostics& diagnostics = out.analysis.diagnostics;
  for (const auto& [key, name] : threads) {
    ThreadSummary t;
    t.key = key;
    t.name = name;
    if (const auto it = batches.find(key); it != batches.end())
      t.diagnostics = it->second.second;
    diagnostics.merge(t.diagnostics);
    out.analysis.threads.push_back(std::move(t));
  }
  diagnostics.add(Stat::recording_damage, reader.damage().size());
  diagnostics.add(Stat::undecodable_messages, undecodable);
  if (const auto& deleted = reader.retention())
    diagnostics.add(Stat::retention_deleted_events, deleted->events);
  return out;
}

ThreadEvents::ThreadEvents(recording::RecordingReader& reader, const Analysis& analysis,
                           uint32_t unknown_base)
    : reader_(reader), analysis_(analysis),
      unknown_base_(unknown_base != 0 ? unknown_base
                                      : static_cast<uint32_t>(analysis.functions.size())) {}

bool ThreadEvents::start(const ThreadKey& thread, uint64_t time_ns) {
  thread_ = thread;
  return reader_.seek(thread.process, thread.thread, time_ns);
}

ThreadEvents::Kind ThreadEvents::next() {
  while (auto frame = reader_.nextOfThread()) {
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
    waits_ = std::move(batch.tracer_waits);
    values_ = std::move(batch.call_values);
    mapFunctions(thread_.process, events_);
    for (wire::CallValues& values : values_)
      values.function_id = mapFunction(thread_.process, values.function_id);
    return Kind::kBatch;
  }
  return Kind::kEnd;
}

void ThreadEvents::mapFunctions(uint64_t process, std::vector<Event>& events) {
  // Per process, a sparse map from the process's ids (below kMaxFunctionId) to indices.
  IdTable<uint32_t>& map = index_of_[process];
  for (Event& e : events) {
    const uint32_t id = std::min(e.function_id, kMaxFunctionId - 1);
    if (const uint32_t* index = map.find(id)) [[likely]] {
      e.function_id = *index;
      continue;
    }
    e.function_id = mapFunction(process, id);
  }
}

uint32_t ThreadEvents::mapFunction(uint64_t process, uint32_t id) {
  id = std::min(id, kMaxFunctionId - 1);
  IdTable<uint32_t>& map = index_of_[process];
  if (const uint32_t* index = map.find(id)) return *index;
  uint32_t index = analysis_.functionIndex(process, id);
  if (index == UINT32_MAX) index = std::min(unknown_base_ + id, kMaxFunctionId - 1);
  return map[id] = index;
}

} // namespace shapetrace::analyzer
