// The ZeroMQ PUSH sink (see sink.h). Uses libzmq's C API: the runtime must never throw, and it
// needs errno-level control of every call.
#include "sink.h"

#include <cerrno>
#include <sys/stat.h>
#include <zmq.h>

namespace shapetrace::rt {
namespace {

class ZmqSink final : public Sink {
public:
  ZmqSink(void* context, void* socket, std::string endpoint)
      : context_(context), socket_(socket), endpoint_(std::move(endpoint)) {}
  ~ZmqSink() override { close(0); }

  bool send(std::span<const std::byte> message) override {
    if (!socket_)
      return false;
    const int saved_errno = errno;
    const int rc = zmq_send(socket_, message.data(), message.size(), ZMQ_DONTWAIT);
    errno = saved_errno;
    return rc >= 0;
  }

  bool mayAccept() const override {
    if (endpoint_.rfind("ipc://", 0) != 0)
      return true;
    struct stat info;
    return ::stat(endpoint_.c_str() + 6, &info) == 0;
  }

  void close(unsigned linger_ms) override {
    if (!socket_)
      return;
    const int linger = int(linger_ms);
    zmq_setsockopt(socket_, ZMQ_LINGER, &linger, sizeof linger);
    zmq_close(socket_);
    zmq_ctx_term(context_);
    socket_ = context_ = nullptr;
  }

  void abandon() override { socket_ = context_ = nullptr; }

  std::string describe() const override { return "collector at " + endpoint_; }

private:
  void* context_;
  void* socket_;
  std::string endpoint_;
};

} // namespace

namespace {

// Makes `socket` a CURVE client of the server whose public key is `server_key`.
bool setCurveClient(void* socket, const std::string& server_key, std::string& error) {
  if (server_key.size() != 40) {
    error = "SHAPETRACE_CURVE_SERVER_KEY must be the 40-character Z85 public key of the collector";
    return false;
  }
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

} // namespace

std::unique_ptr<Sink> makeZmqSink(const std::string& endpoint, int send_hwm,
                                  const std::string& curve_server_key, std::string& error) {
  void* context = zmq_ctx_new();
  if (!context) {
    error = std::string("cannot create a ZeroMQ context: ") + zmq_strerror(zmq_errno());
    return nullptr;
  }
  // One I/O thread is plenty for one PUSH socket; block signals in it like any runtime thread
  // (ZeroMQ does that itself), and never keep the process alive at exit beyond our own linger.
  zmq_ctx_set(context, ZMQ_IO_THREADS, 1);
  void* socket = zmq_socket(context, ZMQ_PUSH);
  const int immediate = 1, linger = 0;
  if (socket && !curve_server_key.empty() && !setCurveClient(socket, curve_server_key, error)) {
    zmq_close(socket);
    zmq_ctx_term(context);
    return nullptr;
  }
  if (!socket || zmq_setsockopt(socket, ZMQ_SNDHWM, &send_hwm, sizeof send_hwm) != 0 ||
      zmq_setsockopt(socket, ZMQ_IMMEDIATE, &immediate, sizeof immediate) != 0 ||
      zmq_setsockopt(socket, ZMQ_LINGER, &linger, sizeof linger) != 0 ||
      zmq_connect(socket, endpoint.c_str()) != 0) {
    error = "cannot connect to SHAPETRACE_ENDPOINT '" + endpoint + "': " + zmq_strerror(zmq_errno());
    if (socket)
      zmq_close(socket);
    zmq_ctx_term(context);
    return nullptr;
  }
  return std::make_unique<ZmqSink>(context, socket, endpoint);
}

} // namespace shapetrace::rt
