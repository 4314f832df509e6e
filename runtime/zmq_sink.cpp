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
#include <mutex>
#include <pthread.h>
#include <time.h>
#include <sys/stat.h>
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

class ZmqSink;
std::atomic<ZmqSink*> g_active{nullptr};

// The ZeroMQ context and socket exist only from the first send on (nothing is created for a
// process that records nothing), are created on the thread that sends (the drain, whose
// descriptors fd_guard marks as the runtime's), and are torn down when the program closes one of
// their descriptors (drop), then created again after a pause.
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

  bool mayAccept() const override {
    if (broken_)
      return false;
    if (endpoint_.rfind("ipc://", 0) != 0)
      return true;
    struct stat info;
    return ::stat(endpoint_.c_str() + 6, &info) == 0;
  }

  void close(unsigned linger_ms) override {
    std::lock_guard lock(mutex_);
    closed_ = true;
    closeLocked(linger_ms);
  }

  void abandon() override {
    // The mutex may have been held by a thread of the parent: not touched here.
    socket_ = context_ = nullptr;
    closed_ = true;
    ZmqSink* self = this;
    g_active.compare_exchange_strong(self, nullptr);
  }

  void release(unsigned linger_ms) override {
    std::lock_guard lock(mutex_);
    closeLocked(linger_ms);
    retry_at_ms_ = 0; // exec failed, if this is used again: connect at once
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

  void closeLocked(unsigned linger_ms) {
    if (!socket_)
      return;
    TransportScope scope; // ZeroMQ closes its own descriptors
    const int saved_errno = errno;
    const int linger = int(linger_ms);
    zmq_setsockopt(socket_, ZMQ_LINGER, &linger, sizeof linger);
    zmq_close(socket_);
    zmq_ctx_term(context_); // joins ZeroMQ's threads
    forgetRuntimeThreads();
    socket_ = context_ = nullptr;
    errno = saved_errno;
  }

  // Creates the context and connects. False (try again later) while backing off after a drop;
  // false for good when the endpoint or key cannot be used (reported once).
  bool open() {
    if (broken_ || closed_ || nowMs() < retry_at_ms_)
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
      } else if (zmq_setsockopt(socket_, ZMQ_SNDHWM, &send_hwm_, sizeof send_hwm_) != 0 ||
                 zmq_setsockopt(socket_, ZMQ_IMMEDIATE, &immediate, sizeof immediate) != 0 ||
                 zmq_setsockopt(socket_, ZMQ_LINGER, &linger, sizeof linger) != 0 ||
                 zmq_connect(socket_, endpoint_.c_str()) != 0) {
        error = "cannot connect to SHAPETRACE_ENDPOINT '" + endpoint_ + "': " +
                zmq_strerror(zmq_errno());
      }
    }
    if (!error.empty()) {
      if (socket_)
        zmq_close(socket_);
      if (context_)
        zmq_ctx_term(context_);
      socket_ = context_ = nullptr;
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
  bool broken_ = false;
  bool closed_ = false;
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
