// Recording and live inputs of the analyzer.
#include "input.h"

#include "wire/codec.h"
#include "wire/format_error.h"

#include <cstdio>
#include <cstdlib>
#include <string>

namespace shapetrace::analyzer {

void readRecording(recording::RecordingReader& reader, Analyzer& analyzer,
                   std::string_view command) {
  while (auto item = reader.nextItem())
    analyzer.consume(std::move(*item));
  analyzer.count(Stat::recording_damage, reader.damage().size());
  analyzer.count(Stat::undecodable_messages, reader.undecodable());
  for (const recording::Damage& d : reader.damage())
    std::fprintf(stderr, "shapetrace %.*s: warning: segment %u: %s at offset %llu (%llu bytes)\n",
                 static_cast<int>(command.size()), command.data(), d.segment,
                 recording::damageKindName(d.kind), static_cast<unsigned long long>(d.offset),
                 static_cast<unsigned long long>(d.length));
}

Analysis analyzeRecording(recording::RecordingReader& reader, Analyzer& analyzer,
                          std::string_view command) {
  readRecording(reader, analyzer, command);
  analyzer.finish();
  return analyzer.snapshot();
}

namespace {
std::string curveServerKey() {
  const char* key = std::getenv("SHAPETRACE_CURVE_SERVER_KEY");
  return key ? key : "";
}
} // namespace

LiveInput::LiveInput(const std::string& endpoint)
    : subscriber_(context_, endpoint, curveServerKey()) {}

bool LiveInput::feed(Analyzer& analyzer, std::chrono::milliseconds timeout,
                     recording::RecordingWriter* record) {
  auto received = subscriber_.receive(timeout);
  if (!received) return false;
  const zmq::message_t& message = received->message;
  const std::span bytes(static_cast<const std::byte*>(message.data()), message.size());
  try {
    // Validated by the writer; one that does not decode is not recorded either.
    if (record != nullptr && message.size() % 8 == 0) record->append(bytes);
    // decodeItem copies only when the message is not 8-byte aligned.
    analyzer.consume(wire::decodeItem(bytes));
    ++items_;
    return true;
  } catch (const wire::FormatError&) {
    ++undecodable_;
    analyzer.count(Stat::undecodable_messages);
    return false;
  }
}

void LiveInput::countLoss(Analyzer& analyzer) {
  analyzer.count(Stat::live_items_missed, subscriber_.missed() - missed_counted_);
  analyzer.count(Stat::undecodable_messages, subscriber_.malformed() - malformed_counted_);
  undecodable_ += subscriber_.malformed() - malformed_counted_;
  missed_counted_ = subscriber_.missed();
  malformed_counted_ = subscriber_.malformed();
}

} // namespace shapetrace::analyzer
