// The receiving side of a live subscription, on a thread of its own.
//
// Without it, the analysis thread read the subscription only between two items it analysed: when
// the analysis fell behind, the backlog waited in ZeroMQ's queue, where nobody could count it, and
// the page said "0 dropped" while millions of events were not analysed yet. The receiver empties
// the socket as items arrive into a queue bounded in bytes and counts every event it received, so
// that "analysed X of Y events received" is exact at any moment. When the queue is full it stops
// reading: ZeroMQ's queue then fills, the collector drops for this subscriber, and the sequence
// numbers count what was missed (fanout.h).
#pragma once

#include "fanout/fanout.h"

#include <zmq.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace shapetrace::analyzer {

// What a live input received and what is still waiting for the analysis.
struct LiveBacklog {
  uint64_t received_items = 0;
  uint64_t received_events = 0; // events in the EventBatch items received
  uint64_t queued_items = 0;    // received, not taken by the analysis yet
  uint64_t queued_events = 0;
  uint64_t queued_bytes = 0;
};

class LiveReceiver {
public:
  // The queue's bound: 256 MiB of messages (about 60 M events at the collector's 4 bytes per
  // event), a few seconds of a busy service, beyond which waiting means falling behind for good.
  static constexpr uint64_t kDefaultQueueBytes = uint64_t{256} << 20;

  // Connects (throws zmq::error_t for an endpoint ZeroMQ rejects) and starts receiving.
  LiveReceiver(zmq::context_t& context, const std::string& endpoint,
               const std::string& curve_server_key, uint64_t queue_bytes = kDefaultQueueBytes);
  ~LiveReceiver();
  LiveReceiver(const LiveReceiver&) = delete;
  LiveReceiver& operator=(const LiveReceiver&) = delete;

  // The next item received, waiting up to `timeout`; nullopt when none is there.
  std::optional<fanout::Subscriber::Item> take(std::chrono::milliseconds timeout);

  LiveBacklog backlog() const;
  // Stops the receiving thread; what it queued can still be taken.
  void stopReceiving();
  // The collector's end marker came and everything before it was taken.
  bool ended() const;
  uint64_t missed() const;    // fanout::Subscriber::missed(), as of the last message received
  uint64_t malformed() const; // fanout::Subscriber::malformed()

private:
  void run(std::stop_token stop);

  fanout::Subscriber subscriber_; // used by the receiving thread only
  const uint64_t queue_bytes_;
  mutable std::mutex mutex_;
  std::condition_variable_any changed_;
  std::deque<std::pair<fanout::Subscriber::Item, uint32_t>> queue_; // with its event count
  LiveBacklog backlog_;
  uint64_t missed_ = 0, malformed_ = 0;
  bool ended_ = false;
  std::jthread thread_;
};

} // namespace shapetrace::analyzer
