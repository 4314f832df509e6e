// Folded stacks, pprof, speedscope and Perfetto from the calling-context tree and the call stream.
#include "export/exports.h"

#include "perfetto_trace.pb.h"
#include "profile.pb.h"

#include <zlib.h>

#include <algorithm>
#include <stdexcept>
#include <unordered_map>

namespace shapetrace::analyzer::exports {
namespace {

const std::string& functionName(const Analysis& analysis, uint32_t function) {
  static const std::string unknown = "?";
  return function < analysis.functions.size() ? analysis.functions[function].name : unknown;
}

std::string gzip(const std::string& bytes) {
  z_stream zs{};
  // windowBits 15 + 16: a gzip header and trailer rather than zlib's.
  if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error("zlib: deflateInit2 failed");
  std::string out(deflateBound(&zs, bytes.size()), '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  zs.avail_in = static_cast<uInt>(bytes.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  const int status = deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  if (status != Z_STREAM_END) throw std::runtime_error("zlib: deflate failed");
  return out;
}

} // namespace

std::string folded(const FlameTree& tree, const Analysis& analysis) {
  const std::string text = tree.foldedStacks(
      [&](uint32_t f) -> std::string_view { return functionName(analysis, f); });
  std::vector<std::string_view> lines;
  for (size_t begin = 0; begin < text.size();) {
    const size_t end = text.find('\n', begin);
    lines.push_back(std::string_view(text).substr(begin, end - begin));
    begin = end + 1;
  }
  std::sort(lines.begin(), lines.end());
  std::string out;
  out.reserve(text.size());
  for (std::string_view line : lines) {
    out += line;
    out += '\n';
  }
  return out;
}

std::string pprof(const FlameTree& tree, const Analysis& analysis, uint64_t span_ns) {
  perftools::profiles::Profile profile;
  std::map<std::string, int64_t> strings;
  auto str = [&](const std::string& s) -> int64_t {
    const auto [it, added] = strings.try_emplace(s, profile.string_table_size());
    if (added) profile.add_string_table(s);
    return it->second;
  };
  str("");
  auto valueType = [&](perftools::profiles::ValueType* type, const char* name, const char* unit) {
    type->set_type(str(name));
    type->set_unit(str(unit));
  };
  valueType(profile.add_sample_type(), "calls", "count");
  valueType(profile.add_sample_type(), "total", "nanoseconds");
  valueType(profile.add_sample_type(), "self", "nanoseconds");
  profile.set_default_sample_type(str("self"));
  valueType(profile.mutable_period_type(), "wall", "nanoseconds");
  profile.set_period(1);
  // One Function and one Location per function of the model that the tree uses; id = index + 1.
  std::vector<bool> used(analysis.functions.size(), false);
  for (const FlameNode& n : tree.nodes())
    if (n.function < used.size()) used[n.function] = true;
  for (uint32_t f = 0; f < used.size(); ++f) {
    if (!used[f]) continue;
    const FunctionSummary& s = analysis.functions[f];
    auto* function = profile.add_function();
    function->set_id(f + 1);
    function->set_name(str(s.name));
    function->set_system_name(str(s.mangled.empty() ? s.name : s.mangled));
    function->set_filename(str(s.file));
    function->set_start_line(s.line);
    auto* location = profile.add_location();
    location->set_id(f + 1);
    auto* line = location->add_line();
    line->set_function_id(f + 1);
    line->set_line(s.line);
  }
  for (uint32_t id = 1; id < tree.size(); ++id) {
    const FlameNode& n = tree[id];
    if (n.calls == 0 && n.self_ns == 0) continue;
    auto* sample = profile.add_sample();
    for (uint32_t a = id; a != FlameTree::kRoot; a = tree[a].parent) // leaf first
      sample->add_location_id(tree[a].function + 1);
    sample->add_value(static_cast<int64_t>(n.calls));
    sample->add_value(static_cast<int64_t>(n.total_ns));
    sample->add_value(static_cast<int64_t>(n.self_ns));
  }
  profile.set_duration_nanos(static_cast<int64_t>(span_ns));
  profile.add_comment(str("shapetrace: exact call times, not samples; 'calls' and 'total' are "
                          "exact in flat (per stack) views, 'self' everywhere"));
  std::string bytes;
  if (!profile.SerializeToString(&bytes)) throw std::runtime_error("pprof: serialisation failed");
  return gzip(bytes);
}

void speedscope(std::ostream& out, const std::vector<ThreadTrace>& threads,
                const Analysis& analysis, const std::string& name) {
  // Frames: the functions the threads use, in model order.
  std::vector<int64_t> frame(analysis.functions.size(), -1);
  for (const ThreadTrace& t : threads)
    for (const SliceEvent& e : t.events)
      frame[e.function] = 0;
  out << R"({"$schema":"https://www.speedscope.app/file-format-schema.json",)";
  out << R"("shared":{"frames":[)";
  int64_t next = 0;
  for (uint32_t f = 0; f < frame.size(); ++f) {
    if (frame[f] < 0) continue;
    frame[f] = next++;
    const FunctionSummary& s = analysis.functions[f];
    nlohmann::json j = {{"name", s.name}};
    if (!s.file.empty()) j["file"] = s.file;
    if (s.line != 0) j["line"] = s.line;
    if (frame[f] > 0) out << ',';
    out << j.dump();
  }
  out << "]},\"profiles\":[";
  for (size_t i = 0; i < threads.size(); ++i) {
    const ThreadTrace& t = threads[i];
    const uint64_t start = t.events.empty() ? 0 : t.events.front().time_ns;
    const uint64_t end = t.events.empty() ? 0 : t.events.back().time_ns;
    std::string label = t.name.empty() ? "thread " + std::to_string(t.key.thread)
                                       : t.name + " (" + std::to_string(t.key.thread) + ")";
    if (i > 0) out << ',';
    out << R"({"type":"evented","name":)" << nlohmann::json(label).dump();
    out << R"(,"unit":"nanoseconds","startValue":)" << start;
    out << ",\"endValue\":" << end << ",\"events\":[";
    // Built in a buffer a few thousand events at a time: one ostream call per event is slow.
    std::string chunk;
    for (size_t k = 0; k < t.events.size(); ++k) {
      const SliceEvent& e = t.events[k];
      if (k > 0) chunk += ',';
      chunk += e.open ? R"({"type":"O","frame":)" : R"({"type":"C","frame":)";
      chunk += std::to_string(frame[e.function]);
      chunk += ",\"at\":";
      chunk += std::to_string(e.time_ns);
      chunk += '}';
      if (chunk.size() >= (size_t{1} << 20)) {
        out << chunk;
        chunk.clear();
      }
    }
    out << chunk << "]}";
  }
  out << R"(],"name":)" << nlohmann::json(name).dump();
  out << R"(,"activeProfileIndex":0,"exporter":"shapetrace export"})" << '\n';
}

namespace {

void appendPacket(std::string& out, const perfetto::protos::TracePacket& packet) {
  // Trace { repeated TracePacket packet = 1; }: each packet is field 1, length-delimited, so the
  // trace is written packet by packet rather than built as one message.
  const std::string bytes = packet.SerializeAsString();
  out += static_cast<char>(0x0A);
  uint64_t size = bytes.size();
  while (size >= 0x80) {
    out += static_cast<char>((size & 0x7F) | 0x80);
    size >>= 7;
  }
  out += static_cast<char>(size);
  out += bytes;
}

} // namespace

void perfetto(std::ostream& stream, const std::vector<ThreadTrace>& threads,
              const Analysis& analysis) {
  using perfetto::protos::TracePacket;
  using perfetto::protos::TrackEvent;
  std::string out; // written to `stream` a megabyte at a time
  // Process tracks (uuid: 1 + process order), then per thread a track (uuid: 2^32 + thread order)
  // on its own sequence (id: 1 + thread order).
  std::map<uint64_t, uint64_t> process_uuid;
  for (const ThreadTrace& t : threads) {
    if (process_uuid.count(t.key.process) != 0) continue;
    const uint64_t uuid = process_uuid.size() + 1;
    process_uuid[t.key.process] = uuid;
    TracePacket packet;
    packet.set_trusted_packet_sequence_id(1);
    auto* track = packet.mutable_track_descriptor();
    track->set_uuid(uuid);
    auto* process = track->mutable_process();
    process->set_pid(static_cast<int32_t>(t.pid != 0 ? t.pid : uuid));
    appendPacket(out, packet);
  }
  for (size_t i = 0; i < threads.size(); ++i) {
    const ThreadTrace& t = threads[i];
    const auto sequence = static_cast<uint32_t>(i + 2);
    const uint64_t uuid = (uint64_t{1} << 32) + i;
    {
      TracePacket packet;
      packet.set_trusted_packet_sequence_id(sequence);
      packet.set_sequence_flags(TracePacket::SEQ_INCREMENTAL_STATE_CLEARED);
      auto* track = packet.mutable_track_descriptor();
      track->set_uuid(uuid);
      track->set_parent_uuid(process_uuid[t.key.process]);
      auto* thread = track->mutable_thread();
      thread->set_pid(static_cast<int32_t>(t.pid != 0 ? t.pid : process_uuid[t.key.process]));
      thread->set_tid(static_cast<int32_t>(t.key.thread));
      if (!t.name.empty()) thread->set_thread_name(t.name);
      appendPacket(out, packet);
    }
    std::vector<bool> interned(analysis.functions.size(), false);
    TracePacket packet;
    for (const SliceEvent& e : t.events) {
      packet.Clear();
      packet.set_timestamp(e.time_ns);
      packet.set_trusted_packet_sequence_id(sequence);
      packet.set_sequence_flags(TracePacket::SEQ_NEEDS_INCREMENTAL_STATE);
      auto* event = packet.mutable_track_event();
      event->set_track_uuid(uuid);
      if (e.open) {
        event->set_type(TrackEvent::TYPE_SLICE_BEGIN);
        event->set_name_iid(e.function + 1);
        if (!interned[e.function]) {
          interned[e.function] = true;
          auto* name = packet.mutable_interned_data()->add_event_names();
          name->set_iid(e.function + 1);
          name->set_name(functionName(analysis, e.function));
        }
      } else {
        event->set_type(TrackEvent::TYPE_SLICE_END);
      }
      appendPacket(out, packet);
      if (out.size() >= (size_t{1} << 20)) {
        stream << out;
        out.clear();
      }
    }
  }
  stream << out;
}

void SliceSink::onEnter(uint32_t function, uint32_t, uint64_t time_ns) {
  events_.push_back({time_ns, function, true});
  open_.push_back(function);
  last_ns_ = time_ns;
}

void SliceSink::onCall(const FinishedCall& call) {
  events_.push_back({call.exit_ns, call.function, false});
  open_.pop_back();
  last_ns_ = call.exit_ns;
}

void SliceSink::onReset() {
  while (!open_.empty()) {
    events_.push_back({last_ns_, open_.back(), false});
    open_.pop_back();
  }
}

std::unique_ptr<ThreadConsumer> TraceCapture::consumerFor(const ThreadKey& thread) {
  auto consumer = std::make_unique<Consumer>(ShapeLookup::none(), kDefaultMaxDepth);
  consumers_[thread] = consumer.get();
  return consumer;
}

void TraceCapture::observe(const wire::StreamItem& item) {
  if (const auto* start = std::get_if<wire::ProcessStart>(&item.body))
    pids_[item.process] = start->pid;
}

std::vector<ThreadTrace> TraceCapture::takeTraces(const Analysis& analysis,
                                                  FunctionIndex& functions) {
  std::vector<ThreadTrace> out;
  for (const auto& [key, consumer] : consumers_) {
    ThreadTrace t;
    t.key = key;
    if (auto it = pids_.find(key.process); it != pids_.end()) t.pid = it->second;
    for (const ThreadSummary& s : analysis.threads)
      if (s.key == key) t.name = s.name;
    t.events = consumer->sink().takeEvents();
    std::unordered_map<uint32_t, uint32_t> index; // a look-up per function, not per event
    for (SliceEvent& e : t.events) {
      auto [it, added] = index.try_emplace(e.function, 0);
      if (added) it->second = functions.indexOf(key.process, e.function);
      e.function = it->second;
    }
    out.push_back(std::move(t));
  }
  return out;
}

} // namespace shapetrace::analyzer::exports
