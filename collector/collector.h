// The collector: receives stream items from many instrumented processes, validates each one,
// records it and fans it out to live subscribers.
//
// Transport: the processes of this host write into channels in memory shared with the collector
// (ipc:// endpoints: their control sockets, local_channels.h); when the collector falls behind,
// a process's channel fills and its runtime keeps the events in its rings, then drops and counts.
// Other collectors forward over ZeroMQ (tcp:// and inproc:// endpoints: one PULL socket bound to
// each, CURVE-encrypted with --curve-secret-key); PUSH reports EAGAIN at the high-water mark.
//
// Trust: every message is checked with wire::peekItem (Cap'n Proto limits, format version, sizes,
// the batch's declared event count). Per sender (the item's process key) the collector counts
// malformed, oversized, out-of-order and duplicate messages and drops them; it never stops on bad
// input. Messages too broken to name their process are counted under their peer address.
//
// Sequence numbers: each thread's EventBatch.sequence counts from 0. A batch with the expected
// number is accepted; a higher one is accepted and the skipped numbers are counted as missing
// (the runtime's own Gap items say why); a lower one is a duplicate when that number was already
// received, out-of-order when it was one of the missing numbers arriving late. Both are dropped,
// so that a recording holds every thread's batches in order.
//
// Fan-out: see stream/fanout/fanout.h.
#pragma once

#include "fanout/fanout.h"
#include "local_channels.h"
#include "recording/recording.h"

#include <atomic>
#include <chrono>
#include <functional>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>
#include <zmq.hpp>

namespace shapetrace::collector {

// What a sender can make the collector hold (docs/collector.md, "Bounds"). Past a limit, the
// message is refused and counted (SenderCounters::refused, or CollectorStats::refused_processes for
// a process past max_processes); the collector's state stays within
//   (max_processes + kMaxEndedKept + kMaxPeers) * kProcessStateBytes
//   + max_threads * (kThreadStateBytes + max_missing_ranges * kMissingRangeBytes)
// (with the defaults 10 MiB + 20 MiB = 30 MiB at worst; a few hundred bytes per process and
// thread in practice). Ended processes hold no thread state and count against kMaxEndedKept only.
struct CollectorLimits {
  size_t max_processes = 4096;        // processes (keys) tracked at once
  size_t max_threads = 32768;         // threads tracked at once, over all processes
  size_t max_threads_per_process = 16384;
  size_t max_missing_ranges = 8;      // per thread: ranges of skipped sequence numbers remembered
  // Processes open at once per client: per forwarding collector (its CURVE key), and for all the
  // processes of this host together, so that no sender can lock the others out.
  size_t max_processes_per_client = 2048; // half of max_processes
};

struct CollectorOptions {
  // Endpoints to listen on (at least one): ipc://PATH for the processes of this host (local
  // channels), tcp:// (and inproc://) for collectors forwarding over ZeroMQ.
  std::vector<std::string> listen;
  std::string out_dir;              // recording directory; empty: do not record
  std::string publish;              // PUB endpoint for live subscribers; empty: no fan-out
  std::string curve_secret_key_file; // enables CURVE on listen and publish sockets
  // With CURVE: the client public keys (Z85) the tcp:// listen endpoints accept, from a file (one
  // key a line, `#` comments) or a directory (the first line of each file, as `keygen` writes
  // FILE.pub). Every other key is refused and counted. Required for a non-loopback endpoint.
  std::string curve_clients;
  // Forwards every accepted message to another collector over ZeroMQ (PUSH to its tcp://
  // endpoint), CURVE-encrypted with the server's public key (Z85), as this collector's client key
  // pair (from forward_secret_key_file, else a fresh one). Empty: no forwarding.
  std::string forward;
  std::string forward_server_key;
  std::string forward_secret_key_file;
  int forward_hwm = 10000;          // messages queued towards it before they are dropped (counted)
  recording::RecordingOptions recording;
  int receive_hwm = 10000;          // messages queued per sender before its PUSH blocks/EAGAINs
  int publish_hwm = 10000;          // messages queued per subscriber before they are dropped
  // Bytes of published items the subscribers' queues hold at most, together (fanout.h): past it
  // items are not published, and counted.
  size_t publish_max_queued_bytes = fanout::kDefaultMaxQueuedBytes;
  CollectorLimits limits;
};

// What the collector did with one sender's messages.
struct SenderCounters {
  uint64_t messages = 0;     // accepted (recorded and published)
  uint64_t events = 0;       // events in accepted batches
  uint64_t bytes = 0;        // of accepted messages
  uint64_t malformed = 0;    // rejected by validation (any wire::FormatError but Oversized)
  uint64_t oversized = 0;    // larger than wire::kMaxMessageBytes
  uint64_t out_of_order = 0; // a skipped batch arriving late; dropped
  uint64_t duplicate = 0;    // a batch sequence already received; dropped
  uint64_t missing_batches = 0; // sequence numbers skipped (never received so far)
  uint64_t unrecorded = 0;   // accepted but not recorded because the recording had failed
  uint64_t refused = 0;      // dropped because a limit of CollectorLimits was reached
  uint32_t pid = 0;          // from the sender's ProcessStart, 0 until seen
  std::string executable;    // likewise
  bool ended = false;        // its ProcessEnd was received
  std::string end;           // how: "exit status 0", "_exit status 1", "exec /bin/ls"
  std::string exit_status;   // as `shapetrace record` reaped it: "killed by signal 9 (SIGKILL)"
};

struct CollectorStats {
  std::map<uint64_t, SenderCounters> senders;          // by process key
  std::map<std::string, SenderCounters> unattributed;  // bad messages by peer address ("" unknown)
  uint64_t published = 0;          // items numbered for the live subscribers (sent or skipped)
  uint64_t not_published = 0;      // of those, skipped: the subscribers' queues were full
  uint64_t not_published_bytes = 0;
  uint64_t refused_processes = 0; // messages of processes past CollectorLimits::max_processes
  uint64_t refused_clients = 0;   // CURVE handshakes of keys not in --curve-clients
  uint64_t foreign_messages = 0;  // messages naming a process another client (or host) sends
  LocalChannelCounters channels;  // the local processes' channels
  uint64_t forwarded = 0;         // messages handed to --forward's socket
  uint64_t forward_dropped = 0;   // messages it could not take (its queue was full)
  std::string recording_error;
  recording::WriterStats recording;
  SenderCounters total() const; // sum over senders and unattributed
};

// Refuses endpoints that would expose the collector: tcp on a non-loopback address without CURVE,
// and transports other than tcp, ipc and inproc. Throws std::runtime_error with the reason.
void checkListenEndpoint(const std::string& endpoint, bool curve);
// Creates the directory of the default ipc endpoint 0700 (or checks that an existing one is ours
// and private). Throws std::runtime_error.
void preparePrivateDirectory(const std::string& dir);
// For an ipc:// endpoint: creates its socket's folder (0700) when it is missing, so that
// `--listen ipc:///tmp/st/collector.sock` works as written. Throws std::runtime_error naming the
// folder when it cannot be made. Other endpoints: nothing.
void prepareSocketDirectory(const std::string& endpoint);
// Reads a Z85 CURVE secret key (40 characters, first line of the file). Refuses a file that group
// or others can read. Throws std::runtime_error.
std::string readCurveSecretKey(const std::string& path);

class Collector {
public:
  // Binds every endpoint and opens the recording. Throws std::runtime_error (refused endpoint,
  // bad key, recording directory in use) or zmq::error_t (bind failed).
  Collector(CollectorOptions options, zmq::context_t& context);
  ~Collector();
  Collector(const Collector&) = delete;
  Collector& operator=(const Collector&) = delete;

  // Handles every message that arrives within `timeout` (waits at most that long for the first,
  // then takes whatever is queued; with local processes connected, at most a few milliseconds).
  // Returns the number of messages handled. Sends a fan-out heartbeat when due.
  size_t poll(std::chrono::milliseconds timeout);
  // Polls until `stop` becomes true.
  void run(const std::atomic<bool>& stop);
  // Records (and publishes) how process `pid` ended as its parent saw it (an ExitStatus item, for
  // `shapetrace record`, which reaps its processes; a local process that dies without its end gets
  // one from the status the kernel keeps for its parent): `wait_status` is waitpid's. Only the
  // first ExitStatus of a traced process is recorded. The item names the
  // last traced image that pid ran (0 when none did). Returns that process key.
  uint64_t recordExitStatus(uint32_t pid, int wait_status, uint64_t reaped_ns);
  // The key of the last traced image process `pid` ran (its latest ProcessStart), 0 if none.
  uint64_t latestImage(uint32_t pid) const;
  // Writes everything recorded so far to the recording's files (see RecordingWriter::flush).
  // Returns false if the recording failed (or there is none).
  bool flushRecording() { return writer_ && writer_->flush(); }
  // Takes what is still queued, publishes the end-of-stream marker, closes the recording (fsync)
  // and writes DIR/collector.json. Idempotent. Returns false if the recording failed.
  bool finish();

  // The endpoints actually bound (a tcp "*" port resolved).
  const std::vector<std::string>& boundEndpoints() const { return bound_; }
  std::string publishEndpoint() const { return publish_bound_; }
  // Bytes of published items that the live subscribers' queues still hold (fanout.h).
  size_t publishQueuedBytes() const { return publisher_ ? publisher_->queuedBytes() : 0; }
  // The server's Z85 public key when CURVE is on, else empty.
  const std::string& curvePublicKey() const { return curve_public_; }
  CollectorStats stats() const;
  // An upper estimate of the memory the per-sender state holds (tables, sequence ranges, names),
  // which CollectorLimits bounds.
  size_t stateBytes() const;

  // Sizes used by stateBytes() and the bound in CollectorLimits' comment.
  static constexpr size_t kProcessStateBytes = 512;   // a SenderState, its map node, names cut
  static constexpr size_t kThreadStateBytes = 128;    // a ThreadSequence and its map node
  static constexpr size_t kMissingRangeBytes = 64;    // one std::map node of a missing range
  static constexpr size_t kPidEntryBytes = 48;        // pid -> latest image, at most one a sender
  static constexpr size_t kMaxPeers = 256;            // unattributed counters by peer address
  static constexpr size_t kMaxNameBytes = 256;        // of the executable kept for reports
  static constexpr size_t kMaxEndedKept = 16384;      // ended processes reported one by one

private:
  struct ThreadSequence {
    uint64_t next = 0;
    // Skipped sequence numbers as ranges [first, end), by first; at most
    // CollectorLimits::max_missing_ranges (the oldest are forgotten: a batch of a forgotten range
    // arriving late is counted as a duplicate).
    std::map<uint64_t, uint64_t> missing;
  };
  struct SenderState {
    SenderCounters counters;
    std::string client; // who sends it: a forwarding collector's key, or "local"
    std::unordered_map<uint32_t, ThreadSequence> threads;
    // What its ThreadEnds said in all, the latest base time of its batches, and how it ended as
    // waitpid said: the end the collector writes for a process that died without warning.
    uint64_t threads_events_recorded = 0;
    uint64_t threads_events_dropped = 0;
    uint64_t latest_batch_ns = 0;
    std::optional<int> wait_status;
    // A process that died without warning whose recording is complete: its end is written when
    // the collector knows how it ended (or at finish(), as not known); at the time of its last
    // event.
    std::optional<uint64_t> end_owed_ns;
  };

  // One message from a sender: `peer` names it for messages too broken to name their process;
  // `client` is who sent it (its CURVE key, or "local" for this host's processes).
  void handle(std::span<const std::byte> bytes, const std::function<std::string()>& peer,
              const std::string& client);
  // A new process key of `client`, unless a limit refuses it.
  SenderState* admit(uint64_t process, const std::string& client);
  void readAllowedClients();
  void serveZap();
  size_t receiveForwarded();
  size_t serviceLocal();
  void noteVanished(uint32_t pid, std::optional<int> wait_status,
                    const LocalChannels::RingsFinished& rings);
  // The ProcessEnd owed to a process that died without warning, once its wait status is known
  // (`or_unknown`: written without it, at finish()).
  void writeOwedEnd(uint64_t process, SenderState& sender, bool or_unknown);
  // ProcessStart and ProcessEnd (and the rarer ExecFailed, ExitStatus, ThreadEnd): decoded for
  // the reports and the senders' state.
  // False when the item does not decode.
  bool noteLifecycle(std::span<const std::byte> bytes, SenderState& sender);
  void forgetThreads(SenderState& sender);
  void connectForward(zmq::context_t& context);
  void fanOut(std::span<const std::byte> bytes);
  // Records and publishes an item the collector makes itself.
  void appendOwnItem(const wire::StreamItem& item);
  SenderCounters& unattributed(const std::string& peer);
  // Applies the sequence rules; false when the batch must be dropped.
  bool acceptSequence(SenderState& sender, uint32_t thread, uint64_t sequence);
  void writeStatsFile() const;

  CollectorOptions options_;
  zmq::socket_t pull_;
  bool pull_bound_ = false;
  std::optional<LocalChannels> local_;
  LocalChannelCounters final_channel_counters_; // local_'s, once finish() closed it
  std::optional<zmq::socket_t> forward_;
  std::optional<zmq::socket_t> zap_; // the CURVE handshakes' ZAP handler (RFC 27)
  std::set<std::string> allowed_clients_;
  uint64_t refused_clients_ = 0;
  uint64_t foreign_messages_ = 0;
  std::unordered_map<std::string, size_t> open_by_client_; // processes not ended, per client
  uint64_t forwarded_ = 0;
  uint64_t forward_dropped_ = 0;
  bool local_busy_ = false; // the last look at the channels found messages
  std::optional<fanout::Publisher> publisher_;
  std::unique_ptr<recording::RecordingWriter> writer_;
  std::vector<std::string> bound_;
  std::string publish_bound_;
  std::string curve_public_;
  std::unordered_map<uint64_t, SenderState> senders_;
  std::unordered_map<uint32_t, uint64_t> latest_image_; // pid -> key of its latest ProcessStart
  std::map<std::string, SenderCounters> unattributed_;
  size_t threads_ = 0;        // ThreadSequence entries over all senders
  size_t ended_senders_ = 0;  // senders_ whose ProcessEnd arrived (no thread state left)
  uint64_t refused_processes_ = 0;
  bool recording_error_reported_ = false;
  bool finished_ = false;
};

} // namespace shapetrace::collector
