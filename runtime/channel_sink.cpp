// The local channel sink (see sink.h and stream/channel/channel.h): messages go into a ring in
// memory shared with the collector of this host. No socket library, no thread of its own.
//
// The channel is made by the drain thread when a collector's control socket is there: a sealed
// memfd is mapped, handed over the socket with the Hello, and closed. The control socket stays
// open only so that the collector sees this process end (its hang-up); the sink never writes to
// it again, and before it polls or closes it, it checks that the descriptor is still the socket
// it made (the program may have closed it with a raw system call and reused the number). Losing
// it costs nothing: the mapping does not depend on any descriptor, not even during the handover
// (lookForCollector), where the collector's heartbeat answers for a socket the program closed.
//
// The collector is there while it beats in the channel's header (channel::kConsumerSilentMs); a
// socket file nobody listens on is no collector, so nothing waits for it.
#include "sink.h"

#include "channel/control.h"
#include "fd_guard.h"
#include "ring_arena.h"
#include "wire/codec.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <optional>
#include <poll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <vector>

namespace shapetrace::rt {
namespace {

// How long the drain waits for the collector's answer to a Hello, and how often it looks for a
// collector again after none was found (or one refused or went away).
constexpr int kReplyTimeoutMs = 1000;
constexpr uint64_t kLookAgainMs = 100;
// While it waits for the answer, the drain looks this often whether the program closed the
// control socket under it.
constexpr int kReplySliceMs = 10;
// How often a live channel's control socket is looked at for a hang-up (the heartbeat, read on
// every send, tells within channel::kConsumerSilentMs anyway).
constexpr uint64_t kSocketLookNs = 1'000'000;

uint64_t nowMs() { return channel::monotonicNs() / 1000000; }

void pauseMs(unsigned ms) {
  const timespec pause{time_t(ms / 1000), long(ms % 1000) * 1000000};
  nanosleep(&pause, nullptr);
}

class ChannelSink;
std::atomic<ChannelSink*> g_active{nullptr};

class ChannelSink final : public Sink {
public:
  ChannelSink(std::string path, uint64_t data_bytes)
      : path_(std::move(path)), data_bytes_(channel::dataBytesFor(data_bytes)) {
    g_active.store(this);
    setDropTransport(&ChannelSink::dropActive);
  }
  ~ChannelSink() override {
    close(0);
    ChannelSink* self = this;
    g_active.compare_exchange_strong(self, nullptr);
  }

  bool send(std::span<const std::byte> message) override {
    if (writer_ && !collectorAlive())
      loseChannel();
    // Where the drain follows the peer, only awaitPeer() makes a channel, so that the drain sees
    // each collector come and go (it marks where recording starts again).
    if (!writer_ && (peer_watched_ || !open()))
      return false;
    if (executing_) { // exec failed: this image goes on writing
      writer_->markExecuting(false);
      executing_ = false;
    }
    if (!flushPending())
      return false;
    if (writer_->tryWrite(message))
      return true;
    if (message.size() <= writer_->maxRecordBytes())
      return false; // the ring is full for now
    // Longer than a record: taken now, written as fragments as the ring empties (in order:
    // nothing else is accepted until its last fragment is in).
    pending_.assign(message.begin(), message.end());
    pending_offset_ = 0;
    flushPending();
    return true;
  }

  bool mayAccept() const override {
    if (writer_)
      return collectorAlive();
    if (looked_)
      return false; // the last look found no collector (no socket, or nobody listening on it)
    struct stat info;
    const int saved_errno = errno;
    const bool exists = ::stat(path_.c_str(), &info) == 0;
    errno = saved_errno;
    return exists;
  }

  void close(unsigned linger_ms) override {
    letDrain(linger_ms);
    closeChannel();
    closed_ = true;
  }

  void abandon() override {
    // Fork child: the parent's channel is not ours to write. Unmapping it and closing our copy of
    // the socket change nothing for the parent (and the copy must go, or the collector would not
    // see the parent's end). The mutex may have been held by a thread of the parent: not touched;
    // the close passes fd_guard by as the runtime's own.
    ChannelSink* self = this;
    g_active.compare_exchange_strong(self, nullptr);
    if (mapping_)
      ::munmap(mapping_, mapping_bytes_);
    if (socket_fd_ >= 0 && stillOurSocket()) {
      TransportScope scope;
      ::close(socket_fd_);
    }
    mapping_ = nullptr;
    writer_.reset();
    socket_fd_ = -1;
    closed_ = true;
  }

  void release(unsigned linger_ms) override {
    // Before exec: what was written leaves while the collector reads it; the channel stays for
    // the image if exec fails (the mapping and CLOEXEC socket go with a successful one, and the
    // collector, told so, closes the channel at the socket's hang-up).
    letDrain(linger_ms);
    if (writer_)
      writer_->markExecuting(true);
    executing_ = true;
  }

  std::string describe() const override {
    std::string text = "collector at " + path_;
    if (const uint64_t drops = transportDrops())
      text += " (control socket closed " + std::to_string(drops) +
              " time(s) by the program; the channel went on)";
    return text;
  }

  // Asleep on the channel's read index, which the collector wakes as it takes records.
  void waitForRoom(long timeout_ns) override {
    if (writer_)
      writer_->waitForRoom(timeout_ns);
    else
      Sink::waitForRoom(timeout_ns);
  }

  bool watchesPeer() const override { return true; }

  Peer awaitPeer(unsigned wait_ms) override {
    peer_watched_ = true;
    if (writer_ && !collectorAlive())
      loseChannel();
    if (lost_) { // said before any new channel is made: the drain detaches, then attaches again
      lost_ = false;
      return Peer::Absent;
    }
    if (!writer_ && !open()) {
      pauseMs(wait_ms);
      return Peer::Absent;
    }
    return Peer::Connected;
  }

private:
  static void dropActive() {
    if (ChannelSink* sink = g_active.load())
      sink->dropSocket();
    ringArena().dropDescriptor();
  }

  // The program is about to close or replace the control socket: let it go (the channel stays).
  void dropSocket() {
    std::lock_guard lock(socket_mutex_);
    if (socket_fd_ >= 0)
      ::close(socket_fd_);
    socket_fd_ = -1;
  }

  // The descriptor is still the socket made for the channel (not one the program reused).
  bool stillOurSocket() const {
    struct stat info;
    const int saved_errno = errno;
    const bool same = ::fstat(socket_fd_, &info) == 0 && info.st_ino == socket_inode_ &&
                      info.st_dev == socket_device_;
    errno = saved_errno;
    return same;
  }

  // The heartbeat on every call (a load); the socket (two system calls) at most every
  // kSocketLookNs, not for each message of a cycle.
  bool collectorAlive() const {
    const uint64_t now = channel::monotonicNs();
    if (!writer_->consumerAlive(now))
      return false;
    if (now < socket_looked_ns_ + kSocketLookNs)
      return true;
    socket_looked_ns_ = now;
    std::lock_guard lock(socket_mutex_);
    if (socket_fd_ < 0)
      return true; // the heartbeat alone tells
    if (!stillOurSocket()) {
      socket_fd_ = -1; // the program took the number: forget it, never close it
      return true;
    }
    return !channel::peerHungUp(socket_fd_);
  }

  bool flushPending() {
    if (pending_.empty())
      return true;
    pending_offset_ = writer_->writeFragments(pending_, pending_offset_);
    if (pending_offset_ < pending_.size())
      return false;
    std::vector<std::byte>().swap(pending_);
    return true;
  }

  // Waits up to `linger_ms` for the collector to take what was written.
  void letDrain(unsigned linger_ms) {
    const uint64_t deadline = nowMs() + linger_ms;
    while (writer_ && collectorAlive()) {
      flushPending();
      if (pending_.empty() && writer_->unread() == 0)
        return;
      if (nowMs() >= deadline)
        return;
      pauseMs(1);
    }
  }

  // The collector went away (killed, or left): a new one gets a new channel.
  void loseChannel() {
    closeChannel();
    lost_ = true;
  }

  void closeChannel() {
    if (writer_)
      writer_->markClosed();
    writer_.reset();
    if (mapping_)
      ::munmap(mapping_, mapping_bytes_);
    mapping_ = nullptr;
    std::vector<std::byte>().swap(pending_);
    closeSocket();
  }

  // How one look for the collector went. Offered: the Hello left, the answer is to come.
  enum class Look { Opened, Offered, NoCollector, Busy, Failed, SocketLost };

  // Makes a channel if a collector listens now. When none does, descriptors or memory are short,
  // or it refused, looked at again kLookAgainMs later; when the program closed the control socket
  // before the Hello left (a raw close: the others wait for it), at once: that says nothing about
  // the collector, and an exec or exit may be waiting for this channel.
  bool open() {
    if (closed_ || nowMs() < look_again_at_ms_)
      return false;
    const Look look = lookForCollector();
    look_again_at_ms_ = look == Look::SocketLost ? 0 : nowMs() + kLookAgainMs;
    if (look != Look::SocketLost && look != Look::Busy)
      looked_ = true;
    return look == Look::Opened;
  }

  // Hands a new channel (and the rings, ring_arena.h, when this process has them) to the
  // collector. The control socket is the drop's (dropSocket) from the start: a program thread
  // may close it at any moment (a fork child closing every descriptor before exec), and each use
  // of it checks that it still is ours.
  Look lookForCollector() {
    TransportScope scope; // the descriptors made here are the runtime's
    std::string error;
    channel::Memory memory;
    Look look = offerChannel(memory, error);
    if (look == Look::Offered)
      look = awaitAnswer(memory, error);
    if (look == Look::Failed)
      warnOnce(error);
    if (look != Look::Opened) {
      if (memory.base)
        ::munmap(memory.base, memory.bytes);
      closeSocket();
      return look;
    }
    mapping_ = memory.base;
    mapping_bytes_ = memory.bytes;
    writer_.emplace(memory.base);
    return Look::Opened;
  }

  // Connects and sends the Hello with the channel's memory. Meanwhile the program's closes wait
  // (RuntimeDescriptorSetup): the descriptors made here are not all marked as they appear, and
  // the Hello must find them open. Nothing here blocks (the connect does not wait either).
  Look offerChannel(channel::Memory& memory, std::string& error) {
    RuntimeDescriptorSetup setup;
    int fd = -1;
    switch (channel::connectControl(path_, lowestRuntimeFd(), fd, error)) {
    case channel::ConnectResult::NoCollector:
      return Look::NoCollector;
    case channel::ConnectResult::Busy:
      return Look::Busy;
    case channel::ConnectResult::Failed:
      return Look::Failed;
    case channel::ConnectResult::Connected:
      break;
    }
    markRuntimeDescriptor(fd);
    adoptSocket(fd);
    int memfd = -1;
    if (!channel::createMemory(data_bytes_, memory, memfd, error))
      return Look::Failed;
    size_t rings_bytes = 0;
    const int rings_fd = ringArena().duplicateDescriptor(rings_bytes);
    channel::Hello hello;
    hello.pid = uint32_t(::getpid());
    hello.data_bytes = data_bytes_;
    hello.rings_bytes = rings_fd >= 0 ? rings_bytes : 0;
    bool lost = false, sent = false;
    {
      std::lock_guard lock(socket_mutex_);
      lost = !socketStillOurs();
      sent = !lost && channel::sendHello(socket_fd_, hello, memfd, rings_fd, error);
    }
    for (const int handed : {memfd, rings_fd})
      if (handed >= 0)
        ::close(handed);
    return lost ? Look::SocketLost : sent ? Look::Offered : Look::Failed;
  }

  // The collector's answer to the Hello: its Reply on the socket while the socket is ours. Once
  // the program closed it, the collector still reads the Hello queued there and takes the channel
  // (then beats in its header, which a refusal never does): its beat is the answer.
  Look awaitAnswer(const channel::Memory& memory, std::string& error) {
    const uint64_t deadline = nowMs() + kReplyTimeoutMs;
    const channel::Writer channel(memory.base);
    for (int fd; (fd = ourSocket()) >= 0;) {
      if (nowMs() >= deadline) {
        error = "the collector did not answer within " + std::to_string(kReplyTimeoutMs) + " ms";
        return Look::Failed;
      }
      // Not under the lock: a program thread closing the socket meanwhile must not wait for the
      // collector. poll only looks; the reply is read below once the socket is known to be ours.
      pollfd ready{fd, POLLIN, 0};
      const int saved_errno = errno;
      const int rc = ::poll(&ready, 1, kReplySliceMs);
      errno = saved_errno;
      if (rc <= 0)
        continue;
      std::lock_guard lock(socket_mutex_);
      if (!socketStillOurs())
        break;
      channel::Reply reply;
      if (!channel::receiveReply(socket_fd_, reply, 0, error))
        return Look::Failed;
      if (!reply.accepted) {
        error = std::string("the collector refused this process: ") + reply.reason;
        return Look::Failed;
      }
      return Look::Opened;
    }
    while (!channel.consumerAlive(channel::monotonicNs())) {
      if (nowMs() >= deadline) {
        error = "the collector did not take the channel within " +
                std::to_string(kReplyTimeoutMs) + " ms (the program closed its control socket)";
        return Look::Failed;
      }
      pauseMs(1);
    }
    return Look::Opened;
  }

  // From now on a program thread that closes `fd` lets it go through dropSocket.
  void adoptSocket(int fd) {
    const int saved_errno = errno;
    struct stat info {};
    ::fstat(fd, &info);
    errno = saved_errno;
    std::lock_guard lock(socket_mutex_);
    socket_fd_ = fd;
    socket_inode_ = info.st_ino;
    socket_device_ = info.st_dev;
  }

  // Holding socket_mutex_: whether the control socket is still open and ours. One the program
  // closed with a raw system call (its number maybe reused) is forgotten, never closed.
  bool socketStillOurs() const {
    if (socket_fd_ >= 0 && !stillOurSocket())
      socket_fd_ = -1;
    return socket_fd_ >= 0;
  }

  int ourSocket() const {
    std::lock_guard lock(socket_mutex_);
    return socketStillOurs() ? socket_fd_ : -1;
  }

  void closeSocket() {
    std::lock_guard lock(socket_mutex_);
    if (socket_fd_ >= 0 && stillOurSocket()) {
      TransportScope scope;
      ::close(socket_fd_);
    }
    socket_fd_ = -1;
  }

  void warnOnce(const std::string& error) {
    if (warned_)
      return;
    warned_ = true;
    std::fprintf(stderr, "shapetrace: %s; looking again later\n", error.c_str());
  }

  const std::string path_;
  const uint64_t data_bytes_;
  // The drain thread's (and, once it stopped, the exiting thread's): the channel.
  void* mapping_ = nullptr;
  size_t mapping_bytes_ = 0;
  std::optional<channel::Writer> writer_;
  std::vector<std::byte> pending_; // a fragmented message being written
  size_t pending_offset_ = 0;
  uint64_t look_again_at_ms_ = 0;
  bool closed_ = false;
  bool executing_ = false;
  bool peer_watched_ = false; // awaitPeer() was called: the drain follows the peer
  bool lost_ = false;         // a channel was lost since awaitPeer() last said so
  bool looked_ = false; // a look for a collector told whether one is there (not a lost socket)
  bool warned_ = false;
  // The control socket, which a program thread may drop (fd_guard).
  mutable std::mutex socket_mutex_;
  mutable int socket_fd_ = -1;
  mutable uint64_t socket_looked_ns_ = 0;
  ino_t socket_inode_ = 0;
  dev_t socket_device_ = 0;
};

} // namespace

std::unique_ptr<Sink> makeChannelSink(const std::string& endpoint, uint64_t channel_bytes,
                                      std::string& error) {
  const std::string path = channel::controlPath(endpoint);
  if (path.empty()) {
    error = "SHAPETRACE_ENDPOINT '" + endpoint +
            "' is not a local collector (ipc://PATH): a traced program sends only to the "
            "collector of its host; to record on another machine, run 'shapetrace collect "
            "--forward tcp://HOST:PORT' here";
    return nullptr;
  }
  return std::make_unique<ChannelSink>(path, channel_bytes);
}

} // namespace shapetrace::rt
