// Where the drain thread's encoded stream items go: a collector over ZeroMQ, or (SHAPETRACE_OUTPUT)
// a recording on disk.
//
// send() never blocks: false means "not accepted now, try again later" and the caller keeps the
// data (events stay in their ring, so loss is only ever decided and counted at the ring).
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>

namespace shapetrace::rt {

class Sink {
public:
  virtual ~Sink() = default;
  virtual bool send(std::span<const std::byte> message) = 0;
  // Whether waiting at exit can help: false when the destination certainly does not exist (an
  // ipc:// socket file that is not there), so exit does not wait for a collector that is absent.
  virtual bool mayAccept() const = 0;
  // Lets queued messages leave for at most `linger_ms`, then releases everything.
  virtual void close(unsigned linger_ms) = 0;
  // Fork child: forget the parent's resources without touching them (they belong to the parent).
  virtual void abandon() = 0;
  // Before exec: lets what was accepted leave the process within `linger_ms` (the image is about
  // to be replaced); the sink stays usable (it reconnects at once) in case exec fails.
  virtual void release(unsigned linger_ms) = 0;
  virtual std::string describe() const = 0;

  // Whether a collector is connected (attach on demand, see docs/runtime.md "Attach on demand").
  // Only the ZeroMQ sink watches its peer; a recording is always there.
  enum class Peer { Pending, Connected, Absent };
  virtual bool watchesPeer() const { return false; }
  // Takes the transport's news of its peer (ZeroMQ's socket monitor: connected, disconnected, a
  // connection attempt that failed), waiting up to `wait_ms` for some when none is pending, and
  // returns what is known: Pending until the first attempt's outcome. Connects first if needed.
  // Drain thread only.
  virtual Peer awaitPeer(unsigned wait_ms) {
    (void)wait_ms;
    return Peer::Connected;
  }
};

// Connects a PUSH socket to `endpoint` (ZMQ_IMMEDIATE, so nothing queues towards a collector that
// is not there). Returns nullptr and sets `error` when the endpoint is malformed.
// `curve_server_key` (Z85, may be empty) makes the socket a CURVE client of that server, with an
// ephemeral key pair of its own.
std::unique_ptr<Sink> makeZmqSink(const std::string& endpoint, int send_hwm,
                                  const std::string& curve_server_key, std::string& error);

// Writes a recording into `directory` (created; must not hold a recording yet). Returns nullptr
// and sets `error` when that is impossible.
std::unique_ptr<Sink> makeRecordingSink(const std::string& directory, std::string& error);

} // namespace shapetrace::rt
