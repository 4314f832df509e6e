#include "live_receiver.h"

#include "wire/codec.h"
#include "wire/format_error.h"

namespace shapetrace::analyzer {
namespace {

// Events in one stream message; 0 for anything but a valid EventBatch (the analysis decodes it
// and counts what does not decode).
uint32_t eventsIn(const zmq::message_t& message) {
  try {
    const wire::ItemHeader header = wire::peekItem(
        std::span(static_cast<const std::byte*>(message.data()), message.size()));
    return header.kind == wire::ItemKind::EventBatch ? header.event_count : 0;
  } catch (const wire::FormatError&) {
    return 0;
  }
}

} // namespace

LiveReceiver::LiveReceiver(zmq::context_t& context, const std::string& endpoint,
                           const std::string& curve_server_key, uint64_t queue_bytes)
    : subscriber_(context, endpoint, curve_server_key), queue_bytes_(queue_bytes),
      thread_([this](std::stop_token stop) { run(stop); }) {}

LiveReceiver::~LiveReceiver() { stopReceiving(); }

void LiveReceiver::stopReceiving() {
  if (!thread_.joinable()) return;
  thread_.request_stop();
  thread_.join();
}

void LiveReceiver::run(std::stop_token stop) {
  while (!stop.stop_requested() && !subscriber_.ended()) {
    {
      // A full queue: stop reading until the analysis takes some (ZeroMQ queues, then drops).
      std::unique_lock lock(mutex_);
      if (!changed_.wait(lock, stop, [this] { return backlog_.queued_bytes < queue_bytes_; }))
        return;
    }
    auto item = subscriber_.receive(std::chrono::milliseconds(50));
    const uint32_t events = item ? eventsIn(item->message) : 0;
    std::lock_guard lock(mutex_);
    missed_ = subscriber_.missed();
    malformed_ = subscriber_.malformed();
    ended_ = subscriber_.ended();
    if (item) {
      ++backlog_.received_items;
      backlog_.received_events += events;
      ++backlog_.queued_items;
      backlog_.queued_events += events;
      backlog_.queued_bytes += item->message.size();
      queue_.emplace_back(std::move(*item), events);
    }
    changed_.notify_all();
  }
}

std::optional<fanout::Subscriber::Item> LiveReceiver::take(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  if (!changed_.wait_for(lock, timeout, [this] { return !queue_.empty(); }))
    return std::nullopt;
  auto [item, events] = std::move(queue_.front());
  queue_.pop_front();
  --backlog_.queued_items;
  backlog_.queued_events -= events;
  backlog_.queued_bytes -= item.message.size();
  changed_.notify_all();
  return std::move(item);
}

LiveBacklog LiveReceiver::backlog() const {
  std::lock_guard lock(mutex_);
  return backlog_;
}

bool LiveReceiver::ended() const {
  std::lock_guard lock(mutex_);
  return ended_ && queue_.empty();
}

uint64_t LiveReceiver::missed() const {
  std::lock_guard lock(mutex_);
  return missed_;
}

uint64_t LiveReceiver::malformed() const {
  std::lock_guard lock(mutex_);
  return malformed_;
}

} // namespace shapetrace::analyzer
