// The local channel: how a traced process hands its stream to the collector of its host without
// any socket library inside the process.
//
// As Perfetto's producers and LTTng's applications do, the process writes into memory it shares
// with the service: a sealed memfd holding a header and a byte ring of framed messages (the same
// encoded stream items the collector records). It hands the memfd to the collector once, over a
// unix-domain SOCK_SEQPACKET control socket (SCM_RIGHTS), and closes it; from then on the mapping
// is all either side needs. A descriptor the program closes under the runtime (a raw close_range,
// dup2 over it) therefore costs nothing: the ring goes on, and what the process wrote before it
// died (kill -9, a crash) stays readable by the collector.
//
// Ring: single producer (the process's drain thread), single consumer (the collector). Indices are
// free-running byte counters; a record is an 8-byte RecordHeader and its payload padded to 8 bytes,
// never split at the ring's end (a kWrapPadding record fills the rest instead). A message larger
// than a record may be is written as fragments (kMoreFragments on all but the last), which the
// consumer reassembles up to wire::kMaxMessageBytes.
//
// Trust: the consumer distrusts everything the producer wrote (it may be a hostile process): every
// size and index is checked against the mapping, payloads are copied out before they are parsed,
// and a channel that breaks a rule is closed and counted, never followed.
//
// Liveness: the consumer writes a heartbeat (CLOCK_MONOTONIC) into the header at least every
// kHeartbeatIntervalMs; a producer that sees no heartbeat for kConsumerSilentMs, or the consumer's
// Left state, takes the collector for gone and waits for nothing.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace shapetrace::channel {

inline constexpr uint64_t kMagic = 0x31484353'54535453; // "STSTSCH1" little-endian
inline constexpr uint32_t kVersion = 2;
inline constexpr size_t kHeaderBytes = 4096;
// The ring's size: at least kMinDataBytes, at most kMaxDataBytes, a power of two.
inline constexpr uint64_t kMinDataBytes = uint64_t{64} << 10;
inline constexpr uint64_t kMaxDataBytes = uint64_t{1} << 30;
inline constexpr uint32_t kHeartbeatIntervalMs = 100;
inline constexpr uint32_t kConsumerSilentMs = 3000;

enum ConsumerState : uint32_t { kConsumerNone = 0, kConsumerAttached = 1, kConsumerLeft = 2 };
// kProducerExecuting: the process is about to exec (its channel goes with the old image unless
// exec fails, when it writes again).
enum ProducerState : uint32_t { kProducerWriting = 0, kProducerClosed = 1, kProducerExecuting = 2 };

struct Header {
  uint64_t magic;
  uint32_t version;
  uint32_t pid;          // as the producer says it (the consumer trusts SO_PEERCRED instead)
  uint64_t data_bytes;   // ring size in bytes
  // Written by the producer: bytes written so far (release), and whether it will write more.
  alignas(64) std::atomic<uint64_t> head;
  std::atomic<uint32_t> producer_state;
  // Set while the producer sleeps on `tail` (a futex, channel/futex.h) for room: the consumer
  // then wakes it after taking records.
  std::atomic<uint32_t> producer_waiting;
  // Written by the consumer: bytes consumed so far (release), its heartbeat and state.
  alignas(64) std::atomic<uint64_t> tail;
  std::atomic<uint64_t> heartbeat_ns;
  std::atomic<uint32_t> consumer_state;
};
static_assert(sizeof(Header) <= kHeaderBytes);
static_assert(std::atomic<uint64_t>::is_always_lock_free);

struct RecordHeader {
  uint32_t size;  // payload bytes (0 for kWrapPadding)
  uint32_t flags;
};
inline constexpr uint32_t kMoreFragments = 1;
inline constexpr uint32_t kWrapPadding = 2;

// The control socket's two messages. The hello travels with the channel's memfd and, when
// `rings_bytes` is not 0, the memfd of the process's rings (channel/rings.h), in that order
// (SCM_RIGHTS).
struct Hello {
  uint64_t magic = kMagic;
  uint32_t version = kVersion;
  uint32_t pid = 0;
  uint64_t data_bytes = 0;
  uint64_t rings_bytes = 0;
};
struct Reply {
  uint64_t magic = kMagic;
  uint32_t accepted = 0;
  char reason[116] = {}; // NUL-terminated when refused
};

// CLOCK_MONOTONIC in nanoseconds.
uint64_t monotonicNs();
// The ring size for a requested one: the next power of two within [kMinDataBytes, kMaxDataBytes].
uint64_t dataBytesFor(uint64_t requested);

// The producer's side, over a mapping it made (Header at `base`, ring after kHeaderBytes).
// Allocates nothing and makes no system call: safe on the drain thread at any time.
class Writer {
public:
  // Initialises the header of a new mapping of kHeaderBytes + data_bytes bytes.
  static void initialise(void* base, uint64_t data_bytes, uint32_t pid);
  explicit Writer(void* base);

  // The largest payload of one record (a quarter of the ring): longer messages are fragmented.
  size_t maxRecordBytes() const { return size_t(data_bytes_ / 4); }
  // Writes `message` as one record if the ring has room for it now; false (nothing written) if
  // not, or if it is longer than maxRecordBytes().
  bool tryWrite(std::span<const std::byte> message);
  // Writes fragments of `message` from `offset` on while the ring has room; returns the new
  // offset (message.size() once the last fragment is written).
  size_t writeFragments(std::span<const std::byte> message, size_t offset);
  // Bytes written that the consumer has not taken yet.
  uint64_t unread() const;
  // The consumer attached and beat within kConsumerSilentMs of `now_ns`, and has not left.
  bool consumerAlive(uint64_t now_ns) const;
  void markClosed();
  void markExecuting(bool executing);
  // Sleeps until the consumer takes something (it wakes us) or `timeout_ns` passed. For a
  // producer whose last write found no room.
  void waitForRoom(long timeout_ns);

private:
  // Room for a record of `payload` bytes, writing a wrap padding first if it needs one.
  bool makeRoom(size_t payload);
  void put(std::span<const std::byte> payload, uint32_t flags);

  Header* header_;
  std::byte* data_;
  uint64_t data_bytes_;
  uint64_t head_;
};

// The consumer's side, over a mapping of a memfd received from a process.
class Reader {
public:
  // Checks the header against the mapping's size (`mapped_bytes`); `error` says why not.
  static bool validate(const void* base, size_t mapped_bytes, std::string& error);
  explicit Reader(void* base);

  enum class Status { Ok, Broken };
  // Calls on_message(span) for each whole message, at most `max_messages`; returns Broken (with
  // `error`) when the producer broke a rule (the channel must then be closed). A message longer
  // than `max_message_bytes` is skipped: on_oversized() instead.
  template <typename OnMessage, typename OnOversized>
  Status read(OnMessage&& on_message, OnOversized&& on_oversized, size_t max_messages,
              size_t max_message_bytes, std::string& error);
  void beat(uint64_t now_ns);
  // Wakes the producer if it sleeps for room and records were taken since it began to.
  void wakeProducer();
  void markLeft();
  bool producerClosed() const;
  bool producerExecuting() const;
  // Bytes of a fragmented message read so far (held until its last fragment).
  size_t partialBytes() const { return message_.size(); }
  bool empty() const;

private:
  // Reads records up to the end of the next message (its payload copied out into message_,
  // fragments appended): Nothing at the end of what was written, Broken (error set) on a broken
  // rule.
  enum class Next { Message, Oversized, Nothing, Broken };
  Next next(size_t max_message_bytes, std::string& error);

  static constexpr size_t kKeptMessageCapacity = size_t{1} << 20;

  Header* header_;
  const std::byte* data_;
  uint64_t data_bytes_;
  uint64_t tail_;
  std::vector<std::byte> message_;
  bool skipping_ = false; // inside an oversized message's fragments
};

template <typename OnMessage, typename OnOversized>
Reader::Status Reader::read(OnMessage&& on_message, OnOversized&& on_oversized,
                            size_t max_messages, size_t max_message_bytes, std::string& error) {
  for (size_t n = 0; n < max_messages;) {
    switch (next(max_message_bytes, error)) {
    case Next::Nothing:
      return Status::Ok;
    case Next::Broken:
      return Status::Broken;
    case Next::Oversized:
      on_oversized();
      ++n;
      break;
    case Next::Message:
      on_message(std::span<const std::byte>(message_));
      message_.clear();
      if (message_.capacity() > kKeptMessageCapacity) // a rare large one is not held on to
        std::vector<std::byte>().swap(message_);
      ++n;
      break;
    }
  }
  return Status::Ok;
}

} // namespace shapetrace::channel
