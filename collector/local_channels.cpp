#include "local_channels.h"
#include "pidfd_exit.h"

#include "channel/control.h"
#include "channel/rings.h"
#include "thread_drain.h"
#include "wire/codec.h"
#include "wire/format_error.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <poll.h>
#include <sstream>
#include <stdexcept>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <unistd.h>
#include <utility>

namespace shapetrace::collector {
namespace {

// A connection that has not sent its hello within this long is closed (it holds a descriptor).
constexpr uint64_t kHelloTimeoutNs = 5'000'000'000;
// How often a process whose control socket hung up while it lived is looked at again.
constexpr uint64_t kLivenessIntervalNs = 100'000'000;
// Fragmented messages being reassembled hold at most this much over all channels: a message that
// would take more is skipped as oversized (a process cannot make the collector hold 64 MiB times
// the process limit).
constexpr size_t kMaxPartialBytes = size_t{256} << 20;
// The batches made from a dead process's rings hold at most this many events (the runtime's
// default SHAPETRACE_BATCH).
constexpr uint32_t kFinishBatchEvents = 4096;
// What the collector finishes of one dead process's rings at most, in events (a hostile process
// could claim full rings of pages it never wrote): 16 full rings of the default size.
constexpr uint64_t kMaxFinishEvents = uint64_t{1} << 24;

// A process as /proc/PID/stat shows it: gone (no entry), a zombie with its wait status, or alive
// since `start_ticks` (field 22, which tells a reused pid from the process we knew).
struct ProcessState {
  bool exists = false;
  bool zombie = false;
  int wait_status = 0;
  uint64_t start_ticks = 0;
};

ProcessState readProcess(uint32_t pid) {
  ProcessState state;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line))
    return state;
  // The command name (field 2) is in parentheses and may hold anything: fields 3 on follow the
  // last ')'.
  const size_t close = line.rfind(')');
  if (close == std::string::npos)
    return state;
  std::istringstream fields(line.substr(close + 1));
  std::vector<std::string> values;
  for (std::string value; fields >> value;)
    values.push_back(value);
  if (values.empty())
    return state;
  state.exists = true;
  state.zombie = values[0] == "Z";
  // values[i] is field i + 3: starttime is field 22, exit_code field 52 (Linux 3.5 and later).
  if (values.size() > 19)
    state.start_ticks = std::strtoull(values[19].c_str(), nullptr, 10);
  if (values.size() > 49)
    state.wait_status = int(std::strtol(values[49].c_str(), nullptr, 10));
  return state;
}

// Whether a control socket that poll() reported on hung up. A process sends nothing after its
// hello: anything it does send is read and thrown away (left queued, it would wake us forever).
bool hungUp(const pollfd& socket) {
  if (socket.revents & (POLLHUP | POLLERR | POLLNVAL))
    return true;
  char discard[256];
  const ssize_t got = ::recv(socket.fd, discard, sizeof discard, MSG_DONTWAIT);
  return got == 0 || (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

// The rings of a process that died without closing its channel, finished as its drain thread would
// have: the drain's own per-thread code (rt::ThreadDrain) over a copy of what each ring held, its
// items handed on like the channel's messages (so validated and recorded the same way).
class RingFinisher final : public rt::DrainOutput {
public:
  RingFinisher(const channel::ArenaState& arena, uint32_t pid,
               const LocalChannels::OnMessage& on_message)
      : arena_(arena), pid_(pid), on_message_(on_message) {}

  bool send(std::span<const std::byte> message) override {
    noteLastEvent(message);
    on_message_(message, false, pid_);
    return true;
  }
  // The latest event of the batches sent so far (0 before any).
  uint64_t lastEventNs() const { return last_event_ns_; }
  uint64_t processKey() const override { return arena_.process_key; }
  uint64_t toNs(uint64_t ticks) const override { return arena_.toNs(ticks); }
  // Annotation keys and thread names were interned in the process's own memory, gone with it.
  std::string lookup(uint32_t) override { return {}; }
  uint64_t nowNs() const override { return channel::monotonicNs(); }

  // One ring: its events into a ring of our own memory, then drained and ended.
  void finish(const channel::RingRemains& remains, rt::ThreadDrain& drain) {
    const uint64_t count = remains.events.size() / channel::kRingEventBytes;
    if (count == 0 && !(remains.drain_flags & channel::kThreadStartSent))
      return; // a ring given to a thread that recorded nothing
    // Zeroed: a marker the process left at the end reads the slot after it.
    std::vector<Event> slots(rt::ringCapacityFor(count * sizeof(Event)), Event{0, 0, EventKind::Enter});
    rt::RingMemory memory;
    memory.slots = slots.data();
    memory.capacity = slots.size();
    auto state = std::make_unique<rt::ThreadState>(memory);
    for (uint64_t i = 0; i < count; ++i) {
      Event event;
      std::memcpy(&event, remains.events.data() + i * channel::kRingEventBytes, sizeof event);
      state->ring.tryPush(event);
    }
    state->tid = remains.tid;
    std::memcpy(state->name, remains.name, sizeof state->name);
    state->start_ticks = remains.start_ticks;
    rt::DrainCursor& cursor = state->drain;
    cursor.start_sent = remains.drain_flags & channel::kThreadStartSent;
    cursor.next_sequence = remains.next_sequence;
    cursor.events_sent = remains.events_sent;
    cursor.drops_reported = remains.drops_reported;
    cursor.unreported_drops = remains.unreported_drops;
    drain.drain(*state);
    drain.endThread(*state);
  }

private:
  // Our own batches, decoded again: a dead process's rings are finished once, and only there does
  // the collector need an event's time.
  void noteLastEvent(std::span<const std::byte> message) {
    wire::StreamItem item;
    try {
      item = wire::decodeItem(message);
    } catch (const wire::FormatError&) {
      return; // counted as malformed where the message is handled
    }
    if (const auto* batch = std::get_if<wire::EventBatch>(&item.body))
      for (const Event& event : batch->events)
        last_event_ns_ = std::max(last_event_ns_, event.timestamp);
  }

  const channel::ArenaState& arena_;
  uint32_t pid_;
  const LocalChannels::OnMessage& on_message_;
  uint64_t last_event_ns_ = 0;
};

} // namespace

struct LocalChannels::Channel {
  int fd = -1;
  uint32_t pid = 0;
  uint64_t connected_ns = 0;
  uint64_t start_ticks = 0;
  void* mapping = nullptr;
  size_t bytes = 0;
  std::optional<channel::Reader> reader;
  // The process's rings, when it handed them over (finished if it dies without warning).
  void* rings_mapping = nullptr;
  size_t rings_bytes = 0;
  std::optional<channel::RingsReader> rings;
  bool hung_up = false;
  uint64_t look_again_ns = 0;
  // The process itself, for its wait status once a parent that is not us reaped it.
  int pidfd = -1;

  ~Channel() {
    if (pidfd >= 0)
      ::close(pidfd);
    if (reader)
      reader->markLeft();
    if (mapping)
      ::munmap(mapping, bytes);
    if (rings_mapping)
      ::munmap(rings_mapping, rings_bytes);
    if (fd >= 0)
      ::close(fd);
  }
};

LocalChannels::LocalChannels(const std::vector<std::string>& endpoints, size_t max_channels)
    : max_channels_(max_channels) {
  for (const std::string& endpoint : endpoints) {
    const std::string path = channel::controlPath(endpoint);
    listen_fds_.push_back(channel::listenControl(path));
    paths_.push_back(path);
  }
}

LocalChannels::~LocalChannels() {
  // No one new first (a process connecting now is refused at once rather than left waiting for
  // an answer), then each channel marks itself left: its process stops waiting for us.
  for (size_t i = 0; i < listen_fds_.size(); ++i) {
    ::unlink(paths_[i].c_str());
    ::close(listen_fds_[i]);
  }
  channels_.clear();
}

void LocalChannels::descriptors(std::vector<int>& fds) const {
  fds.insert(fds.end(), listen_fds_.begin(), listen_fds_.end());
  for (const auto& c : channels_)
    if (c->fd >= 0 && !c->hung_up)
      fds.push_back(c->fd);
}

// Another user's process is refused at once; one past the limit once it said hello, so that it
// reads why. Connections that have not said hello yet are bounded too (they hold a descriptor).
void LocalChannels::accept(int listen_fd) {
  uint32_t uid = 0, pid = 0;
  for (int fd; (fd = channel::acceptControl(listen_fd, uid, pid)) >= 0;) {
    const char* refusal = nullptr;
    if (uid != ::getuid() && ::getuid() != 0)
      refusal = "another user's collector";
    else if (channels_.size() >= 2 * max_channels_)
      refusal = "too many processes connected";
    if (refusal) {
      channel::Reply reply;
      std::snprintf(reply.reason, sizeof reply.reason, "%s", refusal);
      channel::sendReply(fd, reply);
      ::close(fd);
      ++counters_.refused;
      continue;
    }
    auto c = std::make_unique<Channel>();
    c->fd = fd;
    c->pid = pid;
    c->connected_ns = channel::monotonicNs();
    channels_.push_back(std::move(c));
  }
}

size_t LocalChannels::mapped() const {
  return size_t(std::count_if(channels_.begin(), channels_.end(),
                              [](const std::unique_ptr<Channel>& c) { return c->reader; }));
}

namespace {

// The size of a memfd sealed against shrinking (so that reading a mapping of it can never fault);
// nothing with `error` when it is not one.
std::optional<size_t> sealedSize(int memfd, const char* what, std::string& error) {
  struct stat info {};
  const int seals = ::fcntl(memfd, F_GET_SEALS);
  if (::fstat(memfd, &info) != 0 || !S_ISREG(info.st_mode) || seals < 0 ||
      !(seals & F_SEAL_SHRINK)) {
    error = std::string(what) + " is not a memfd sealed against shrinking";
    return std::nullopt;
  }
  return size_t(info.st_size);
}

} // namespace

// The rings are not needed to read the channel: rings that do not check out are named and left,
// and the process is recorded as before (what its rings hold at a crash is lost).
void LocalChannels::takeRings(Channel& c, int rings_fd) {
  std::string error;
  const std::optional<size_t> bytes = sealedSize(rings_fd, "its rings' memory", error);
  void* mapping = MAP_FAILED;
  if (bytes && *bytes >= channel::kRingsHeaderBytes && *bytes <= channel::kMaxRingsBytes) {
    mapping = ::mmap(nullptr, *bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE,
                     rings_fd, 0);
    if (mapping == MAP_FAILED)
      error = std::string("cannot map its rings: ") + std::strerror(errno);
  } else if (bytes) {
    error = "its rings' memory has " + std::to_string(*bytes) + " bytes";
  }
  if (mapping != MAP_FAILED) {
    c.rings = channel::RingsReader::open(mapping, *bytes, error);
    if (c.rings) {
      c.rings_mapping = mapping;
      c.rings_bytes = *bytes;
      return;
    }
    ::munmap(mapping, *bytes);
  }
  ++counters_.rings_refused;
  std::fprintf(stderr, "shapetrace collect: process %u: %s; a crash of it loses its last events\n",
               c.pid, error.c_str());
}

bool LocalChannels::take(Channel& c, int memfd, std::string& error) {
  const std::optional<size_t> sealed = sealedSize(memfd, "its channel memory", error);
  if (!sealed)
    return false;
  const size_t bytes = *sealed;
  if (bytes < channel::kHeaderBytes || bytes > channel::kHeaderBytes + channel::kMaxDataBytes) {
    error = "its channel memory has " + std::to_string(bytes) + " bytes";
    return false;
  }
  void* mapping = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
  if (mapping == MAP_FAILED) {
    error = std::string("cannot map its channel: ") + std::strerror(errno);
    return false;
  }
  if (!channel::Reader::validate(mapping, bytes, error)) {
    ::munmap(mapping, bytes);
    return false;
  }
  c.mapping = mapping;
  c.bytes = bytes;
  c.reader.emplace(mapping);
  c.reader->beat(channel::monotonicNs());
  c.start_ticks = readProcess(c.pid).start_ticks;
  c.pidfd = openPidfd(c.pid);
  return true;
}

void LocalChannels::greet(Channel& c) {
  channel::Hello hello;
  int memfd = -1, rings_fd = -1;
  std::string error;
  const channel::HelloResult result = channel::receiveHello(c.fd, hello, memfd, rings_fd, error);
  if (result == channel::HelloResult::NotYet) {
    if (channel::monotonicNs() - c.connected_ns <= kHelloTimeoutNs)
      return;
    error = "sent no hello within " + std::to_string(kHelloTimeoutNs / 1000000000) + " s";
  }
  channel::Reply reply;
  const bool received = result == channel::HelloResult::Received;
  if (received && mapped() >= max_channels_)
    error = "too many processes connected";
  else if (received && take(c, memfd, error))
    reply.accepted = 1;
  if (reply.accepted && rings_fd >= 0)
    takeRings(c, rings_fd);
  if (reply.accepted) {
    ++counters_.accepted;
  } else {
    std::snprintf(reply.reason, sizeof reply.reason, "%s", error.c_str());
    ++counters_.refused;
    std::fprintf(stderr, "shapetrace collect: refused process %u: %s\n", c.pid, error.c_str());
    c.hung_up = true; // closed below: no reader, nothing to read
  }
  for (const int fd : {memfd, rings_fd})
    if (fd >= 0)
      ::close(fd); // mapped (or refused): the descriptor is not needed
  channel::sendReply(c.fd, reply);
}

size_t LocalChannels::read(Channel& c, const OnMessage& on_message, size_t max_messages) {
  size_t read = 0;
  std::string error;
  const size_t partial_before = c.reader->partialBytes();
  const size_t others_partial = partial_bytes_ - partial_before;
  const size_t budget = others_partial < kMaxPartialBytes ? kMaxPartialBytes - others_partial : 0;
  const auto status = c.reader->read(
      [&](std::span<const std::byte> message) {
        on_message(message, false, c.pid);
        ++read;
      },
      [&] {
        on_message({}, true, c.pid);
        ++read;
      },
      max_messages, std::min(wire::kMaxMessageBytes, budget), error);
  partial_bytes_ = others_partial + (c.reader ? c.reader->partialBytes() : 0);
  if (read > 0 && c.reader)
    c.reader->wakeProducer(); // its drain may sleep for room
  if (status == channel::Reader::Status::Broken) {
    std::fprintf(stderr, "shapetrace collect: closing the channel of process %u: %s\n", c.pid,
                 error.c_str());
    ++counters_.broken;
    c.reader.reset(); // nothing more is read from it
    c.hung_up = true;
  }
  return read;
}

bool LocalChannels::finished(Channel& c, const OnMessage& on_message,
                             const OnVanished& on_vanished) {
  if (!c.reader)
    return c.hung_up; // refused, broken, or no hello in time
  if (!c.reader->empty())
    return false; // read the rest first
  if (c.reader->producerClosed())
    return true;
  if (!c.hung_up)
    return false;
  if (c.reader->producerExecuting())
    return true; // the image was replaced; the new one has a channel of its own
  const uint64_t now = channel::monotonicNs();
  if (now < c.look_again_ns)
    return false;
  c.look_again_ns = now + kLivenessIntervalNs;
  const ProcessState process = readProcess(c.pid);
  if (process.exists && !process.zombie && process.start_ticks == c.start_ticks)
    return false; // alive: the program closed the socket under its runtime; read on
  ++counters_.vanished;
  const RingsFinished rings = finishRings(c, on_message);
  // A zombie shows its wait status in /proc; once its parent reaped it (`collect` is not that
  // parent), only the pidfd still can.
  on_vanished(c.pid,
              process.exists && process.zombie && process.start_ticks == c.start_ticks
                  ? std::optional<int>(process.wait_status)
                  : reapedExitStatus(c.pidfd),
              rings);
  return true;
}

// What the dead process's threads recorded after its drain's last cycle: each ring's events from
// where the stream stopped, and each thread's end. After everything the channel held (read before
// this), so in the order the process would have sent it.
// The channel was read to its end before this (finished() waits for it).
LocalChannels::RingsFinished LocalChannels::finishRings(Channel& c, const OnMessage& on_message) {
  if (!c.rings)
    return {};
  const channel::ArenaState arena = c.rings->state();
  RingFinisher finisher(arena, c.pid, on_message);
  rt::ThreadDrain drain(finisher, kFinishBatchEvents);
  uint64_t rings = 0;
  const uint64_t broken = c.rings->forEachRing(
      [&](const channel::RingRemains& remains) {
        finisher.finish(remains, drain);
        ++rings;
      },
      kMaxFinishEvents);
  counters_.rings_finished += rings;
  counters_.rings_broken += broken;
  if (broken)
    std::fprintf(stderr,
                 "shapetrace collect: process %u: %llu ring(s) left unfinished: their indices say "
                 "they hold more than they can, or more than %llu events in all\n",
                 c.pid, (unsigned long long)broken, (unsigned long long)kMaxFinishEvents);
  return {broken == 0 && arena.private_rings == 0, finisher.lastEventNs()};
}

// A process that has a new channel (its image after exec, or its runtime after we looked gone
// to it) writes no more into its older ones: what they hold is read, then they close.
void LocalChannels::closeOlderOf(uint32_t pid, const Channel& newest,
                                 const OnMessage& on_message) {
  for (auto& c : channels_)
    if (c.get() != &newest && c->pid == pid && c->reader) {
      while (!c->reader->empty() && read(*c, on_message, 100000) > 0) {
      }
      c->hung_up = true;
      if (c->reader)
        c->reader->markLeft();
      c->reader.reset();
    }
}

size_t LocalChannels::service(const OnMessage& on_message, const OnVanished& on_vanished,
                              size_t max_messages) {
  for (const int fd : listen_fds_)
    accept(fd);
  partial_bytes_ = 0;
  for (const auto& c : channels_)
    if (c->reader)
      partial_bytes_ += c->reader->partialBytes();
  // Hang-ups, in one system call for every control socket.
  std::vector<pollfd> sockets;
  std::vector<Channel*> owners;
  for (auto& c : channels_)
    if (c->fd >= 0 && !c->hung_up && c->reader) {
      sockets.push_back({c->fd, POLLIN, 0});
      owners.push_back(c.get());
    }
  if (!sockets.empty() && ::poll(sockets.data(), sockets.size(), 0) > 0)
    for (size_t i = 0; i < sockets.size(); ++i)
      if (sockets[i].revents != 0)
        owners[i]->hung_up = hungUp(sockets[i]);
  size_t handled = 0;
  const uint64_t now = channel::monotonicNs();
  for (size_t i = 0; i < channels_.size(); ++i) {
    Channel& c = *channels_[i];
    if (!c.reader && !c.hung_up) {
      greet(c);
      if (c.reader)
        closeOlderOf(c.pid, c, on_message);
    }
    if (c.reader) {
      c.reader->beat(now);
      handled += read(c, on_message, max_messages > handled ? max_messages - handled : 0);
    }
  }
  std::erase_if(channels_, [&](const std::unique_ptr<Channel>& c) {
    return finished(*c, on_message, on_vanished);
  });
  return handled;
}

} // namespace shapetrace::collector
