// Where the drain thread's encoded stream items go: the collector of this host over the local
// channel (shared memory), or (SHAPETRACE_OUTPUT)
// a recording on disk.
//
// send() never blocks: false means "not accepted now, try again later" and the caller keeps the
// data (events stay in their ring, so loss is only ever decided and counted at the ring).
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <time.h>

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
  // After send() found no room: waits until the destination took something, at most
  // `timeout_ns`. Drain thread.
  virtual void waitForRoom(long timeout_ns) {
    const timespec pause{0, timeout_ns};
    nanosleep(&pause, nullptr);
  }

  // Whether a collector is connected (attach on demand, see docs/runtime.md "Attach on demand").
  // Only the channel sink watches its peer; a recording is always there.
  enum class Peer { Pending, Connected, Absent };
  virtual bool watchesPeer() const { return false; }
  // Whether the peer is there now (connecting first if needed); when it is not, waits `wait_ms`
  // before returning. Drain thread only.
  virtual Peer awaitPeer(unsigned wait_ms) {
    (void)wait_ms;
    return Peer::Connected;
  }
};

// Sends to the collector of this host over the local channel (runtime/channel_sink.cpp): `endpoint`
// is ipc://PATH of its control socket, `channel_bytes` the size of the shared ring. Returns nullptr
// and sets `error` when the endpoint is not a local one.
std::unique_ptr<Sink> makeChannelSink(const std::string& endpoint, uint64_t channel_bytes,
                                      std::string& error);

// Writes a recording into `directory` (created; must not hold a recording yet). Returns nullptr
// and sets `error` when that is impossible.
std::unique_ptr<Sink> makeRecordingSink(const std::string& directory, std::string& error);

} // namespace shapetrace::rt
