// The ZeroMQ PUSH sink (see sink.h), created lazily and dropped when the program takes its
// descriptors (fd_guard.h). Uses libzmq's C API: the runtime must never throw, and it
// needs errno-level control of every call.
#include "sink.h"

#include "fd_guard.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <mutex>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <zmq.h>

namespace shapetrace::rt {
namespace {

// Makes `socket` a CURVE client of the server whose public key is `server_key`.
bool setCurveClient(void* socket, const std::string& server_key, std::string& error) {
  char public_key[41], secret_key[41];
  if (zmq_curve_keypair(public_key, secret_key) != 0 ||
      zmq_setsockopt(socket, ZMQ_CURVE_SERVERKEY, server_key.c_str(), 41) != 0 ||
      zmq_setsockopt(socket, ZMQ_CURVE_PUBLICKEY, public_key, 41) != 0 ||
      zmq_setsockopt(socket, ZMQ_CURVE_SECRETKEY, secret_key, 41) != 0) {
    error = std::string("cannot set up CURVE: ") + zmq_strerror(zmq_errno());
    return false;
  }
  return true;
}

uint64_t nowMs() {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return uint64_t(now.tv_sec) * 1000 + uint64_t(now.tv_nsec) / 1000000;
}

// How long a teardown caused by the program lets queued messages leave (the program's close waits
// for it), and how long the sink waits before connecting again (doubling after each teardown).
constexpr unsigned kDropLingerMs = 100;
constexpr uint64_t kFirstRetryMs = 100, kLongestRetryMs = 5000;
// How often a missing collector socket, or a shortage of descriptors, is looked at again (ZeroMQ
// itself retries a connection every 100 ms).
constexpr uint64_t kCheckAgainMs = 100;
// Descriptors ZeroMQ takes (its threads' and sockets' eventfds and epoll instances, the
// connection), with room to spare: it aborts the process when it cannot make one.
constexpr size_t kDescriptorsNeeded = 32;

// Descriptors the process may still open (RLIMIT_NOFILE less those open), or SIZE_MAX when that
// cannot be told.
size_t descriptorsLeft() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY)
    return SIZE_MAX;
  DIR* open_fds = opendir("/proc/self/fd");
  if (!open_fds)
    return SIZE_MAX;
  size_t open = 0;
  while (const dirent* entry = readdir(open_fds))
    open += entry->d_name[0] != '.';
  closedir(open_fds);
  return limit.rlim_cur > open ? size_t(limit.rlim_cur - open) : 0;
}

class ZmqSink;
std::atomic<ZmqSink*> g_active{nullptr};

// The ZeroMQ context and socket exist only while a collector may listen: from the first send or
// look for a peer on, and, for an ipc:// endpoint, only once its socket file exists (a process
// that no collector looks at has no ZeroMQ thread and no descriptor of ours; when the collector
// goes away with its socket, they go too). They are created on the drain thread (whose descriptors
// fd_guard marks as the runtime's), never while fewer than kDescriptorsNeeded descriptors are
// left (ZeroMQ aborts the process when it cannot make one), and are torn down when the program
// closes one of their descriptors (drop), then created again after a pause.
class ZmqSink final : public Sink {
public:
  ZmqSink(std::string endpoint, int send_hwm, std::string curve_server_key)
      : endpoint_(std::move(endpoint)), send_hwm_(send_hwm),
        curve_server_key_(std::move(curve_server_key)) {
    g_active.store(this);
    setDropTransport(&ZmqSink::dropActive);
  }
  ~ZmqSink() override {
    close(0);
    ZmqSink* self = this;
    g_active.compare_exchange_strong(self, nullptr);
  }

  bool send(std::span<const std::byte> message) override {
    std::lock_guard lock(mutex_);
    if (!socket_ && !open())
      return false;
    const int saved_errno = errno;
    const int rc = zmq_send(socket_, message.data(), message.size(), ZMQ_DONTWAIT);
    errno = saved_errno;
    return rc >= 0;
  }

  bool mayAccept() const override { return !broken_ && !collectorSocketMissing(); }

  void close(unsigned linger_ms) override {
    std::lock_guard lock(mutex_);
    closed_ = true;
    closeLocked(linger_ms);
  }

  void abandon() override {
    // The mutex may have been held by a thread of the parent: not touched here.
    socket_ = context_ = monitor_ = nullptr;
    closed_ = true;
    ZmqSink* self = this;
    g_active.compare_exchange_strong(self, nullptr);
  }

  void release(unsigned linger_ms) override {
    std::lock_guard lock(mutex_);
    closeLocked(linger_ms);
    retry_at_ms_ = 0; // exec failed, if this is used again: connect at once
  }

  bool watchesPeer() const override { return true; }

  Peer awaitPeer(unsigned wait_ms) override {
    std::unique_lock lock(mutex_);
    if (!socket_ && !open()) {
      lock.unlock(); // backing off after a drop, or closed: nothing to watch until then
      const timespec pause{time_t(wait_ms / 1000), long(wait_ms % 1000) * 1000000};
      nanosleep(&pause, nullptr);
      return Peer::Absent;
    }
    const int saved_errno = errno;
    zmq_pollitem_t item{monitor_, 0, ZMQ_POLLIN, 0};
    if (zmq_poll(&item, 1, long(wait_ms)) > 0)
      readMonitorEvents();
    // The collector went away with its socket: so do ZeroMQ's threads and descriptors.
    if (peer_ == Peer::Absent && collectorSocketMissing())
      closeLocked(0);
    errno = saved_errno;
    return peer_;
  }

  std::string describe() const override {
    std::string text = "collector at " + endpoint_;
    if (const uint64_t drops = transportDrops())
      text += " (connection dropped " + std::to_string(drops) +
              " time(s): the program closed or replaced its descriptors)";
    return text;
  }

private:
  static void dropActive() {
    if (ZmqSink* sink = g_active.load())
      sink->drop();
  }

  // The program is about to close one of the transport's descriptors: release them all now.
  void drop() {
    std::lock_guard lock(mutex_);
    if (!socket_)
      return;
    closeLocked(kDropLingerMs);
    retry_at_ms_ = nowMs() + retry_ms_;
    retry_ms_ = std::min(retry_ms_ * 2, kLongestRetryMs);
  }

  // Each monitor event is two frames: 6 bytes (uint16 event, uint32 value), then the endpoint.
  void readMonitorEvents() {
    for (;;) {
      uint8_t head[6];
      const int size = zmq_recv(monitor_, head, sizeof head, ZMQ_DONTWAIT);
      if (size < 0)
        return;
      uint16_t event = 0;
      std::memcpy(&event, head, sizeof event);
      int more = 0;
      size_t more_size = sizeof more;
      while (zmq_getsockopt(monitor_, ZMQ_RCVMORE, &more, &more_size) == 0 && more) {
        char endpoint[256];
        zmq_recv(monitor_, endpoint, sizeof endpoint, ZMQ_DONTWAIT);
      }
      if (size != int(sizeof head))
        continue;
      if (event == ZMQ_EVENT_CONNECTED)
        peer_ = Peer::Connected;
      else if (event == ZMQ_EVENT_DISCONNECTED || event == ZMQ_EVENT_CONNECT_RETRIED)
        peer_ = Peer::Absent;
    }
  }

  void closeLocked(unsigned linger_ms) {
    peer_ = Peer::Absent;
    if (!socket_)
      return;
    TransportScope scope; // ZeroMQ closes its own descriptors
    const int saved_errno = errno;
    const int linger = int(linger_ms);
    if (monitor_) {
      const int no_linger = 0;
      zmq_socket_monitor(socket_, nullptr, 0);
      zmq_setsockopt(monitor_, ZMQ_LINGER, &no_linger, sizeof no_linger);
      zmq_close(monitor_);
      monitor_ = nullptr;
    }
    zmq_setsockopt(socket_, ZMQ_LINGER, &linger, sizeof linger);
    zmq_close(socket_);
    zmq_ctx_term(context_); // joins ZeroMQ's threads
    forgetRuntimeThreads();
    socket_ = context_ = nullptr;
    errno = saved_errno;
  }

  // Watches the socket's peer (ZeroMQ's socket monitor over an inproc PAIR socket), before it
  // connects so that no event is missed.
  bool watchPeer(std::string& error) {
    static constexpr char kMonitorEndpoint[] = "inproc://shapetrace-peer";
    const int no_linger = 0;
    if (zmq_socket_monitor(socket_, kMonitorEndpoint,
                           ZMQ_EVENT_CONNECTED | ZMQ_EVENT_DISCONNECTED |
                               ZMQ_EVENT_CONNECT_RETRIED) != 0 ||
        !(monitor_ = zmq_socket(context_, ZMQ_PAIR)) ||
        zmq_setsockopt(monitor_, ZMQ_LINGER, &no_linger, sizeof no_linger) != 0 ||
        zmq_connect(monitor_, kMonitorEndpoint) != 0) {
      error = std::string("cannot watch the connection: ") + zmq_strerror(zmq_errno());
      return false;
    }
    peer_ = Peer::Pending;
    return true;
  }

  // An ipc:// endpoint whose socket file is not there: no collector listens.
  bool collectorSocketMissing() const {
    if (endpoint_.rfind("ipc://", 0) != 0)
      return false;
    struct stat info;
    const int saved_errno = errno;
    const bool missing = ::stat(endpoint_.c_str() + 6, &info) != 0;
    errno = saved_errno;
    return missing;
  }

  // Whether the transport may be made now: a collector may listen and ZeroMQ will find the
  // descriptors it needs. Looked at again kCheckAgainMs later when not.
  bool transportPossible() {
    const uint64_t now = nowMs();
    if (now < check_again_at_ms_)
      return false;
    check_again_at_ms_ = now + kCheckAgainMs;
    if (collectorSocketMissing())
      return false;
    if (const size_t left = descriptorsLeft(); left < kDescriptorsNeeded) {
      if (!warned_descriptors_)
        std::fprintf(stderr,
                     "shapetrace: only %zu descriptors left (RLIMIT_NOFILE): the connection to the "
                     "collector waits until %zu are free\n",
                     left, kDescriptorsNeeded);
      warned_descriptors_ = true;
      return false;
    }
    check_again_at_ms_ = 0;
    return true;
  }

  // Creates the context and connects. False (try again later) while backing off after a drop, while
  // no collector socket exists or descriptors are short; false for good when the endpoint or key
  // cannot be used (reported once).
  bool open() {
    if (broken_ || closed_ || nowMs() < retry_at_ms_ || !transportPossible())
      return false;
    TransportScope scope;
    const int saved_errno = errno;
    // ZeroMQ's threads inherit this mask: the program's signals never reach them.
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &previous);
    std::string error;
    context_ = zmq_ctx_new();
    if (!context_) {
      error = std::string("cannot create a ZeroMQ context: ") + zmq_strerror(zmq_errno());
    } else {
      // One I/O thread is plenty for one PUSH socket.
      zmq_ctx_set(context_, ZMQ_IO_THREADS, 1);
      socket_ = zmq_socket(context_, ZMQ_PUSH);
      const int immediate = 1, linger = 0;
      if (!socket_) {
        error = std::string("cannot create a ZeroMQ socket: ") + zmq_strerror(zmq_errno());
      } else if (!curve_server_key_.empty() && !setCurveClient(socket_, curve_server_key_, error)) {
      } else if (!watchPeer(error)) {
      } else if (zmq_setsockopt(socket_, ZMQ_SNDHWM, &send_hwm_, sizeof send_hwm_) != 0 ||
                 zmq_setsockopt(socket_, ZMQ_IMMEDIATE, &immediate, sizeof immediate) != 0 ||
                 zmq_setsockopt(socket_, ZMQ_LINGER, &linger, sizeof linger) != 0 ||
                 zmq_connect(socket_, endpoint_.c_str()) != 0) {
        error = "cannot connect to SHAPETRACE_ENDPOINT '" + endpoint_ + "': " +
                zmq_strerror(zmq_errno());
      }
    }
    if (!error.empty()) {
      if (monitor_)
        zmq_close(monitor_);
      if (socket_)
        zmq_close(socket_);
      if (context_)
        zmq_ctx_term(context_);
      socket_ = context_ = monitor_ = nullptr;
      broken_ = true;
      std::fprintf(stderr, "shapetrace: %s; nothing is sent\n", error.c_str());
    }
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    errno = saved_errno;
    return socket_ != nullptr;
  }

  const std::string endpoint_;
  const int send_hwm_;
  const std::string curve_server_key_;
  std::mutex mutex_; // socket_ and context_: the drain's sends against a drop by a program thread
  void* context_ = nullptr;
  void* socket_ = nullptr;
  void* monitor_ = nullptr; // PAIR socket receiving socket_'s monitor events
  Peer peer_ = Peer::Absent;
  bool broken_ = false;
  bool closed_ = false;
  bool warned_descriptors_ = false;
  uint64_t check_again_at_ms_ = 0;
  uint64_t retry_at_ms_ = 0;
  uint64_t retry_ms_ = kFirstRetryMs;
};

} // namespace

std::unique_ptr<Sink> makeZmqSink(const std::string& endpoint, int send_hwm,
                                  const std::string& curve_server_key, std::string& error) {
  if (!curve_server_key.empty() && curve_server_key.size() != 40) {
    error = "SHAPETRACE_CURVE_SERVER_KEY must be the 40-character Z85 public key of the collector";
    return nullptr;
  }
  return std::make_unique<ZmqSink>(endpoint, send_hwm, curve_server_key);
}

} // namespace shapetrace::rt
