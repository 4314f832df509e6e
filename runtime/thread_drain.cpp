// One thread's ring turned into stream items (see thread_drain.h).
#include "thread_drain.h"

#include "shapetrace/abi.h"

#include <algorithm>
#include <cstring>

namespace shapetrace::rt {
namespace {

bool isEvent(const Event& event) { return uint32_t(event.kind) < kEventKindCount; }
// An id no module table names: its module was not registered (an ABI version this runtime does
// not know), so nothing could resolve it. Never sent.
bool isUnnamed(const Event& event) { return event.function_id >= SHAPETRACE_UNREGISTERED_BASE; }

// The first look at an event slot (DrainCursor::applied_up_to): keeps the ids of the open recorded
// calls (open_frames) and, in a process that went on after a failed exec, turns the exits of calls
// entered before into kSkippedExitMarker.
void firstSight(DrainCursor& cursor, Event& slot, uint64_t index) {
  if (index < cursor.applied_up_to)
    return;
  cursor.applied_up_to = index + 1;
  const bool enter = slot.kind == EventKind::Enter;
  if (cursor.tracking) {
    // An exit of a call entered before tracking began finds nothing to pop.
    if (enter)
      cursor.open_frames.push_back(slot.function_id);
    else if (!cursor.open_frames.empty())
      cursor.open_frames.pop_back();
  }
  if (cursor.continuing) {
    if (enter)
      ++cursor.continued_depth;
    else if (cursor.continued_depth > 0)
      --cursor.continued_depth;
    else
      slot.kind = EventKind(kSkippedExitMarker);
  }
}

} // namespace

ThreadDrain::ThreadDrain(DrainOutput& output, uint32_t batch_events)
    : output_(output), batch_events_(batch_events) {
  batch_.start(batch_events);
}

bool ThreadDrain::sendItem(wire::ItemBody body) {
  return output_.send(wire::encodeItem({output_.processKey(), std::move(body)}));
}

void ThreadDrain::publishProgress(ThreadState& state) {
  const DrainCursor& cursor = state.drain;
  channel::RingControl& control = state.ring.control();
  control.next_sequence.store(cursor.next_sequence, std::memory_order_relaxed);
  control.events_sent.store(cursor.events_sent, std::memory_order_relaxed);
  control.drops_reported.store(cursor.drops_reported, std::memory_order_relaxed);
  control.unreported_drops.store(cursor.unreported_drops, std::memory_order_relaxed);
  if (cursor.start_sent)
    control.drain_flags.fetch_or(channel::kThreadStartSent, std::memory_order_release);
}

bool ThreadDrain::discardBatch() {
  batch_.clear();
  batch_annotations_.clear();
  batch_waits_.clear();
  batch_throttles_.clear();
  batch_values_.clear();
  return false;
}

bool ThreadDrain::sendBatch(ThreadState& state, uint64_t up_to) {
  DrainCursor& cursor = state.drain;
  // Values whose events left in the batch before (it was cut right after their enter) go in a
  // batch of their own, without events.
  if (batch_.count() != 0 || !batch_values_.empty()) {
    batch_.setEmptyBase(cursor.last_event_ns);
    const wire::Bytes message = wire::encodeEventBatch(
        output_.processKey(), state.tid, cursor.next_sequence, batch_,
        {batch_annotations_, batch_waits_, batch_throttles_, batch_values_});
    if (!output_.send(message)) {
      cursor.abandoned_in_batch = 0;
      return false;
    }
    ++cursor.next_sequence;
    cursor.events_sent += batch_.count();
    events_sent_ += batch_.count();
    batch_.clear();
  } else {
    // Marks with no event around them (the thread annotated and made no call since): annotations
    // go as items of their own; a wait always follows the event it delayed, so it has a batch.
    for (const wire::Annotation& annotation : batch_annotations_)
      if (!sendItem(annotation))
        return false;
  }
  batch_annotations_.clear();
  batch_waits_.clear();
  batch_throttles_.clear();
  std::erase_if(cursor.throttle_marks,
                [up_to](const DrainCursor::ThrottleMark& mark) { return mark.index < up_to; });
  batch_values_.clear();
  // Every slot before up_to is in a sent batch, or a marker that made nothing else to send.
  cursor.abandoned_sent += cursor.abandoned_in_batch;
  cursor.abandoned_in_batch = 0;
  if (cursor.abandon_index != DrainCursor::kNoIndex && up_to > cursor.abandon_index) {
    cursor.abandon_index = DrainCursor::kNoIndex;
    cursor.abandoned.clear();
    cursor.abandoned_sent = 0;
  }
  publishProgress(state);
  state.ring.release(up_to);
  return true;
}

void ThreadDrain::timeCall(DrainCursor& cursor, const Event& slot, uint64_t index) {
  auto& open = cursor.timed_calls;
  if (slot.kind == EventKind::Enter) {
    open.emplace_back(slot.function_id, slot.timestamp);
    return;
  }
  // An exit ends the innermost open call of its function; calls above it were left by a longjmp
  // (their abandoned exits come as a marker) or their exits were lost: they are not timed.
  size_t depth = open.size();
  while (depth > 0 && open[depth - 1].first != slot.function_id)
    --depth;
  if (depth == 0) {
    open.clear(); // an exit of a call entered before the thread's timing began
    return;
  }
  const uint64_t enter_ns = output_.toNs(open[depth - 1].second);
  const uint64_t exit_ns = output_.toNs(slot.timestamp);
  open.resize(depth - 1);
  if (const uint64_t count =
          throttler_->callEnded(slot.function_id, exit_ns > enter_ns ? exit_ns - enter_ns : 0))
    cursor.throttle_marks.push_back({index, wire::Throttle{0, exit_ns, slot.function_id, count}});
}

void ThreadDrain::placeThrottleMarks(const DrainCursor& cursor, uint64_t index) {
  for (const DrainCursor::ThrottleMark& mark : cursor.throttle_marks)
    if (mark.index == index) {
      batch_throttles_.push_back(mark.mark);
      batch_throttles_.back().before_event = uint32_t(batch_.count());
    }
}

bool ThreadDrain::sendPendingGap(ThreadState& state, uint64_t from_ns, uint64_t to_ns) {
  DrainCursor& cursor = state.drain;
  if (cursor.unreported_drops == 0)
    return true;
  wire::Gap gap{state.tid, cursor.unreported_drops,
                cursor.next_sequence ? cursor.next_sequence - 1 : wire::kNoSequence, from_ns,
                to_ns};
  if (!sendItem(gap))
    return false;
  cursor.drops_reported += cursor.unreported_drops;
  drops_reported_ += cursor.unreported_drops;
  cursor.unreported_drops = 0;
  publishProgress(state);
  return true;
}

bool ThreadDrain::drain(ThreadState& state) {
  DrainCursor& cursor = state.drain;
  if (!cursor.start_sent) {
    if (!sendItem(wire::ThreadStart{state.tid, output_.toNs(state.start_ticks), state.name}))
      return false;
    cursor.start_sent = true;
    publishProgress(state);
  }
  // Hooks from signal handlers that interrupted this thread's hooks: counted, placed here.
  cursor.unreported_drops += state.nested_drops.exchange(0, std::memory_order_relaxed);
  if (cursor.unreported_drops) {
    const uint64_t now = output_.nowNs();
    if (!sendPendingGap(state, now, now))
      return false;
  }
  EventRing& ring = state.ring;
  const uint64_t head = ring.readable();
  batch_.clear();
  cursor.abandoned_in_batch = 0;
  uint64_t index = ring.released();
  while (index < head) {
    if (!cursor.stretch_starts.empty() && cursor.stretch_starts.front().index <= index)
      [[unlikely]] {
      // Recording starts again here (ThreadDrain::attach): a Gap of 0 events tells consumers.
      const DrainCursor::StretchStart start = cursor.stretch_starts.front();
      if (!sendBatch(state, index) ||
          !sendItem(wire::Gap{state.tid, 0,
                              cursor.next_sequence ? cursor.next_sequence - 1 : wire::kNoSequence,
                              start.detached_ns, start.attached_ns}))
        return discardBatch();
      cursor.stretch_starts.erase(cursor.stretch_starts.begin());
      if (cursor.stretch_starts.empty())
        std::vector<DrainCursor::StretchStart>().swap(cursor.stretch_starts); // its memory too
      continue;
    }
    Event& slot = ring.slot(index);
    if ((cursor.tracking || cursor.continuing || throttler_) && isEvent(slot)) [[unlikely]] {
      const bool first = index >= cursor.applied_up_to;
      firstSight(cursor, slot, index);
      if (first && throttler_ && isEvent(slot))
        timeCall(cursor, slot, index);
    }
    if (isEvent(slot)) {
      if (isUnnamed(slot)) [[unlikely]] {
        index = dropUnnamedEvents(state, index, head);
        if (index == DrainCursor::kNoIndex)
          return discardBatch();
        continue;
      }
      cursor.last_event_ns = output_.toNs(slot.timestamp);
      batch_.append(cursor.last_event_ns, slot.function_id, slot.kind);
      if (!cursor.throttle_marks.empty()) [[unlikely]]
        placeThrottleMarks(cursor, index);
      ++index;
      if (batch_.full() && !sendBatch(state, index))
        return discardBatch();
      continue;
    }
    // Markers that only change what the drain knows, or become events of the batch.
    if (uint32_t(slot.kind) == kSkippedExitMarker) {
      ++index;
      continue;
    }
    if (uint32_t(slot.kind) == kTrackFramesMarker) {
      if (index >= cursor.applied_up_to) {
        cursor.tracking = true;
        cursor.open_frames.clear();
        cursor.applied_up_to = index + 1;
      }
      ++index;
      continue;
    }
    if (uint32_t(slot.kind) == kAbandonMarker) {
      if (!expandAbandonMarker(state, index))
        return discardBatch();
      ++index;
      continue;
    }
    if ((uint32_t(slot.kind) & kMarkerKindMask) == kCallValueMarker) {
      index += addCallValue(state, index);
      if (marksFull() && !sendBatch(state, index))
        return discardBatch();
      continue;
    }
    if (uint32_t(slot.kind) == kAnnotationMarker || uint32_t(slot.kind) == kTracerWaitMarker) {
      addMark(state, slot, ring.at(index + 1));
      index += 2;
      if (marksFull() && !sendBatch(state, index))
        return discardBatch();
      continue;
    }
    // Markers that become items of their own, between two batches.
    if (!sendBatch(state, index))
      return discardBatch();
    const uint64_t at_ns = output_.toNs(slot.timestamp);
    bool sent = true;
    switch (uint32_t(slot.kind)) {
    case kLostMarker: {
      // Recording resumed with the event after the marker (published together with it).
      const uint64_t resumed = index + 1 < head ? output_.toNs(ring.at(index + 1).timestamp)
                                                : output_.nowNs();
      cursor.unreported_drops += slot.function_id;
      sent = sendPendingGap(state, at_ns, resumed);
      if (!sent) {
        cursor.unreported_drops -= slot.function_id; // retried with the marker next cycle
      } else if (cursor.tracking && index >= cursor.applied_up_to) {
        // The dropped events may have opened or closed calls: what was kept is not the truth.
        cursor.open_frames.clear();
        cursor.applied_up_to = index + 1;
      }
      break;
    }
    case kThreadNameMarker:
      sent = sendItem(wire::ThreadName{state.tid, at_ns, output_.lookup(slot.function_id)});
      break;
    default: // not written by this runtime; skip rather than stall the ring forever
      break;
    }
    if (!sent)
      return false;
    ++index;
    ring.release(index);
  }
  if (!sendBatch(state, index))
    return discardBatch();
  return ring.released() == ring.readable();
}

void ThreadDrain::addMark(const ThreadState& state, const Event& marker, const Event& payload) {
  const uint64_t at_ns = output_.toNs(marker.timestamp);
  const auto before_event = uint32_t(batch_.count());
  if (uint32_t(marker.kind) == kAnnotationMarker) {
    batch_annotations_.push_back({state.tid, at_ns, output_.lookup(marker.function_id),
                                  int64_t(payload.timestamp), before_event});
  } else {
    const uint64_t end_ns = output_.toNs(marker.timestamp + payload.timestamp);
    batch_waits_.push_back({before_event, at_ns, end_ns - at_ns});
  }
}

uint64_t ThreadDrain::addCallValue(const ThreadState& state, uint64_t index) {
  const Event& slot = state.ring.at(index);
  const uint32_t descriptor = uint32_t(slot.kind) >> kCallValueDescriptorShift;
  wire::CallValue value{uint8_t(descriptor & 0xff), wire::ValueType((descriptor >> 8) & 0xff),
                        slot.timestamp};
  uint64_t slots = 1;
  if (value.type == wire::ValueType::String)
    slots += readValueText(state, index + 1, value);
  // The call's enter was not sent either (its module is not registered).
  if (isUnnamed(slot))
    return slots;
  const auto before_event = uint32_t(batch_.count());
  // The values of one hook sequence (a call's arguments, or its return value) make one mark.
  if (!batch_values_.empty()) {
    wire::CallValues& last = batch_values_.back();
    if (last.before_event == before_event && last.function_id == slot.function_id &&
        last.returned() == (value.position == SHAPETRACE_VALUE_RETURN)) {
      last.values.push_back(std::move(value));
      return slots;
    }
  }
  batch_values_.push_back({before_event, slot.function_id, {std::move(value)}});
  return slots;
}

uint64_t ThreadDrain::readValueText(const ThreadState& state, uint64_t index,
                                    wire::CallValue& value) {
  // Written by this runtime's pushString, all slots published together.
  const Event& header = state.ring.at(index);
  const size_t length = std::min<size_t>(header.function_id, kValueTextHardMax);
  value.text_state = wire::TextState(uint32_t(header.kind) >> kCallValueDescriptorShift);
  value.text.resize(length);
  const uint64_t byte_slots = (length + kTextBytesPerSlot - 1) / kTextBytesPerSlot;
  for (uint64_t i = 0; i < byte_slots; ++i) {
    const Event& bytes = state.ring.at(index + 1 + i);
    char chunk[kTextBytesPerSlot];
    std::memcpy(chunk, &bytes.timestamp, 8);
    std::memcpy(chunk + 8, &bytes.function_id, 4);
    const size_t from = i * kTextBytesPerSlot;
    std::memcpy(value.text.data() + from, chunk, std::min<size_t>(kTextBytesPerSlot, length - from));
  }
  return 1 + byte_slots;
}

uint64_t ThreadDrain::dropUnnamedEvents(ThreadState& state, uint64_t index, uint64_t head) {
  DrainCursor& cursor = state.drain;
  if (!sendBatch(state, index))
    return DrainCursor::kNoIndex;
  uint64_t end = index;
  while (end < head && isEvent(state.ring.at(end)) && isUnnamed(state.ring.at(end))) {
    if (cursor.tracking || cursor.continuing)
      firstSight(cursor, state.ring.slot(end), end);
    ++end;
  }
  cursor.unreported_drops += end - index;
  if (!sendPendingGap(state, output_.toNs(state.ring.at(index).timestamp),
                      output_.toNs(state.ring.at(end - 1).timestamp))) {
    cursor.unreported_drops -= end - index;
    return DrainCursor::kNoIndex;
  }
  state.ring.release(end);
  return end;
}

bool ThreadDrain::expandAbandonMarker(ThreadState& state, uint64_t index) {
  DrainCursor& cursor = state.drain;
  if (cursor.abandon_index != index) {
    // Another marker's exits may still wait in this batch: they leave first, so that only one
    // marker is ever being expanded.
    if (cursor.abandon_index != DrainCursor::kNoIndex && !sendBatch(state, index))
      return false;
    cursor.abandon_index = index;
    cursor.abandoned.clear();
    cursor.abandoned_sent = 0;
    cursor.abandoned_in_batch = 0;
    if (cursor.tracking && index >= cursor.applied_up_to) {
      cursor.applied_up_to = index + 1;
      // Frames entered before tracking began (or before a gap) are not known: their exits are
      // not sent (a gap already ended them for every consumer, or none of them exists). Nor are
      // those of frames entered before the process's current key (continuing).
      for (uint32_t n = state.ring.at(index).function_id; n > 0 && !cursor.open_frames.empty();
           --n) {
        const uint32_t id = cursor.open_frames.back();
        cursor.open_frames.pop_back();
        if (cursor.continuing) {
          if (cursor.continued_depth == 0)
            continue; // the previous key's frame
          --cursor.continued_depth;
        }
        if (id >= SHAPETRACE_UNREGISTERED_BASE)
          ++cursor.unreported_drops; // unnamed, as its enter was: the next Gap counts it
        else
          cursor.abandoned.push_back(id);
      }
    }
  }
  const uint64_t at_ns = output_.toNs(state.ring.at(index).timestamp);
  while (cursor.abandoned_sent + cursor.abandoned_in_batch < cursor.abandoned.size()) {
    const uint32_t id = cursor.abandoned[cursor.abandoned_sent + cursor.abandoned_in_batch];
    ++cursor.abandoned_in_batch;
    batch_.append(at_ns, id, EventKind::AbandonedExit);
    // The marker stays in the ring until the batch with its last exit has left.
    if (batch_.full() && !sendBatch(state, index))
      return false;
  }
  return true;
}

bool ThreadDrain::endThread(ThreadState& state) {
  DrainCursor& cursor = state.drain;
  if (!cursor.start_sent)
    return false;
  const uint64_t now = output_.nowNs();
  // Drops the thread never got to announce with a marker (its ring stayed full until it exited).
  cursor.unreported_drops += state.ring.pending_drops.exchange(0, std::memory_order_relaxed);
  if (!sendPendingGap(state, output_.toNs(state.ring.first_drop_ticks.load()), now))
    return false;
  if (!sendItem(wire::ThreadEnd{state.tid, now, cursor.events_sent, cursor.drops_reported,
                                cursor.next_sequence}))
    return false;
  state.ring.control().drain_flags.fetch_or(channel::kThreadEndSent, std::memory_order_release);
  return true;
}

} // namespace shapetrace::rt
