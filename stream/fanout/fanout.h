// Live fan-out of the collector's stream to subscribers (the analyzer), with loss made visible.
//
// ZeroMQ PUB drops messages for a subscriber whose queue is full, silently, and a subscriber that
// connects late misses what came before. So every published message carries a sequence number:
//
//   frame 1 (16 bytes, little-endian): u64 sequence, u32 type, u32 reserved (0)
//   frame 2 (type Item only):          one stream message, exactly as received and recorded
//
//   type Item (0):       sequence = this item's number; items are numbered from 0 without gaps
//   type Heartbeat (1):  sequence = the number the next item will get; sent when the collector
//                        has been idle for kHeartbeatInterval, so a subscriber also learns about
//                        items it missed at the end of a burst
//   type End (2):        like Heartbeat, sent once when the collector shuts down
//
// Heartbeats and the end marker are dropped like items for a subscriber whose queue is full; a
// subscriber that hears nothing for several heartbeat intervals should assume the collector is
// gone.
//
// A Subscriber counts the numbers it did not see after the first message it received (what came
// before it connected is not counted as missed, but `first_sequence` tells where it joined). The
// publisher never blocks: a slow subscriber loses messages, recording does not slow down.
//
// What the subscribers' queues hold is bounded in bytes, not only in messages (ZeroMQ's high-water
// mark counts messages, and one module table can be tens of MiB): every item's bytes are counted
// from its publication until ZeroMQ has written it to every subscriber's connection or dropped it
// (one copy, shared by all the subscribers' queues). An item that would take the count past
// `max_queued_bytes` is not published: its number is skipped, so every subscriber counts it as
// missed, and the publisher counts it (notPublished). The bound is shared: ZeroMQ's PUB socket
// says neither which subscriber's queue holds an item nor how much each holds, so a subscriber
// that stopped reading keeps what its queue holds, and the others lose the items past the bound
// until it reads or goes (docs/collector.md, "Fan-out").
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <zmq.hpp>

namespace shapetrace::fanout {

enum class PublishType : uint32_t { Item = 0, Heartbeat = 1, End = 2 };
inline constexpr size_t kPublishHeaderBytes = 16;
inline constexpr std::chrono::milliseconds kHeartbeatInterval{100};
inline constexpr size_t kDefaultMaxQueuedBytes = size_t{256} << 20;

// The collector's PUB side. Not thread-safe (one thread owns the socket).
class Publisher {
public:
  // Binds `endpoint`. `curve_secret_key` (Z85, may be empty) makes it a CURVE server.
  Publisher(zmq::context_t& context, const std::string& endpoint, int send_hwm,
            const std::string& curve_secret_key,
            size_t max_queued_bytes = kDefaultMaxQueuedBytes);
  // Publishes one item (a copy of its bytes), or skips its number when the subscribers' queues
  // hold too much (see the top of this file).
  void publish(std::span<const std::byte> item);
  // Sends a heartbeat when nothing was published for kHeartbeatInterval.
  void heartbeatIfIdle();
  void end();
  // Items numbered: published, or skipped (notPublished).
  uint64_t published() const { return next_; }
  // Items not published because the subscribers' queues held max_queued_bytes, and their bytes.
  uint64_t notPublished() const { return not_published_; }
  uint64_t notPublishedBytes() const { return not_published_bytes_; }
  // Bytes of published items that ZeroMQ still holds (queued for a subscriber, being written).
  size_t queuedBytes() const { return queued_->load(std::memory_order_relaxed); }
  size_t maxQueuedBytes() const { return max_queued_bytes_; }
  std::string endpoint();

private:
  void sendHeader(PublishType type, bool more);

  zmq::socket_t socket_;
  uint64_t next_ = 0;
  std::chrono::steady_clock::time_point last_send_;
  size_t max_queued_bytes_;
  // Shared with the items in ZeroMQ's hands, which may outlive the publisher (linger).
  std::shared_ptr<std::atomic<size_t>> queued_ = std::make_shared<std::atomic<size_t>>(0);
  uint64_t not_published_ = 0;
  uint64_t not_published_bytes_ = 0;
};

// The subscriber side, for the analyzer and the tests. Not thread-safe.
class Subscriber {
public:
  // Connects to `endpoint`. `curve_server_key` (Z85, may be empty) enables CURVE as a client.
  Subscriber(zmq::context_t& context, const std::string& endpoint,
             const std::string& curve_server_key = {}, int receive_hwm = 10000);

  struct Item {
    uint64_t sequence = 0;
    zmq::message_t message; // one stream message (decode with wire::decodeItem)
  };
  // The next item, or nullopt when none arrived within `timeout` or the end marker came
  // (see ended()). Heartbeats are consumed here and only update missed().
  std::optional<Item> receive(std::chrono::milliseconds timeout);

  uint64_t received() const { return received_; }
  // Items published after the first message this subscriber saw that it did not receive.
  uint64_t missed() const { return missed_; }
  // Sequence of the first message seen (nullopt before any).
  std::optional<uint64_t> firstSequence() const { return first_; }
  bool ended() const { return ended_; }
  // Messages that were not in the publish format (counted, skipped).
  uint64_t malformed() const { return malformed_; }

private:
  zmq::socket_t socket_;
  std::optional<uint64_t> first_;
  uint64_t expected_ = 0;
  uint64_t received_ = 0, missed_ = 0, malformed_ = 0;
  bool ended_ = false;
};

} // namespace shapetrace::fanout
