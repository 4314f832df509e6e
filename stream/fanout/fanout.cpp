// Publisher and Subscriber of the live fan-out (see fanout.h for the message format).
#include "fanout/fanout.h"

#include <cstring>
#include <new>

namespace shapetrace::fanout {

namespace {

struct PublishHeader {
  uint64_t sequence;
  uint32_t type;
  uint32_t reserved;
};
static_assert(sizeof(PublishHeader) == kPublishHeaderBytes);

// An item's bytes in ZeroMQ's hands, counted in its publisher's queued bytes until ZeroMQ frees
// them: one allocation, this header followed by the bytes.
struct CountedItem {
  std::shared_ptr<std::atomic<size_t>> queued;
  size_t size = 0;

  std::byte* bytes() { return reinterpret_cast<std::byte*>(this + 1); }
  static void release(void* /*data*/, void* hint) {
    auto* item = static_cast<CountedItem*>(hint);
    item->queued->fetch_sub(item->size, std::memory_order_relaxed);
    item->~CountedItem();
    ::operator delete(item);
  }
};

} // namespace

Publisher::Publisher(zmq::context_t& context, const std::string& endpoint, int send_hwm,
                     const std::string& curve_secret_key, size_t max_queued_bytes)
    : socket_(context, zmq::socket_type::pub), last_send_(std::chrono::steady_clock::now()),
      max_queued_bytes_(max_queued_bytes) {
  socket_.set(zmq::sockopt::sndhwm, send_hwm);
  socket_.set(zmq::sockopt::linger, 200);
  if (!curve_secret_key.empty()) {
    socket_.set(zmq::sockopt::curve_server, true);
    socket_.set(zmq::sockopt::curve_secretkey, curve_secret_key);
  }
  socket_.bind(endpoint);
}

std::string Publisher::endpoint() { return socket_.get(zmq::sockopt::last_endpoint); }

void Publisher::sendHeader(PublishType type, bool more) {
  const PublishHeader header{next_, static_cast<uint32_t>(type), 0};
  zmq::message_t frame(&header, sizeof header);
  // PUB never blocks: at a subscriber's high-water mark the message is dropped for it.
  socket_.send(frame, more ? zmq::send_flags::sndmore | zmq::send_flags::dontwait
                           : zmq::send_flags::dontwait);
  last_send_ = std::chrono::steady_clock::now();
}

void Publisher::publish(std::span<const std::byte> item) {
  if (queuedBytes() + item.size() > max_queued_bytes_) {
    ++not_published_;
    not_published_bytes_ += item.size();
    ++next_; // the number is skipped: subscribers count the item as missed
    return;
  }
  void* memory = ::operator new(sizeof(CountedItem) + item.size());
  auto* counted = new (memory) CountedItem{queued_, item.size()};
  std::memcpy(counted->bytes(), item.data(), item.size());
  queued_->fetch_add(item.size(), std::memory_order_relaxed);
  // From here ZeroMQ owns the bytes, and calls release() once no subscriber's queue holds them
  // (at once when there is no subscriber).
  zmq::message_t message(counted->bytes(), item.size(), &CountedItem::release, counted);
  sendHeader(PublishType::Item, true);
  socket_.send(message, zmq::send_flags::dontwait);
  ++next_;
}

void Publisher::heartbeatIfIdle() {
  if (std::chrono::steady_clock::now() - last_send_ >= kHeartbeatInterval)
    sendHeader(PublishType::Heartbeat, false);
}

void Publisher::end() { sendHeader(PublishType::End, false); }

Subscriber::Subscriber(zmq::context_t& context, const std::string& endpoint,
                       const std::string& curve_server_key, int receive_hwm)
    : socket_(context, zmq::socket_type::sub) {
  socket_.set(zmq::sockopt::rcvhwm, receive_hwm);
  socket_.set(zmq::sockopt::linger, 0);
  if (!curve_server_key.empty()) {
    // A client of a CURVE server needs a key pair of its own; an ephemeral one will do.
    char public_key[41], secret_key[41];
    if (zmq_curve_keypair(public_key, secret_key) != 0)
      throw zmq::error_t();
    socket_.set(zmq::sockopt::curve_serverkey, curve_server_key);
    socket_.set(zmq::sockopt::curve_publickey, std::string(public_key));
    socket_.set(zmq::sockopt::curve_secretkey, std::string(secret_key));
  }
  socket_.set(zmq::sockopt::subscribe, "");
  socket_.connect(endpoint);
}

std::optional<Subscriber::Item> Subscriber::receive(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!ended_) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
    if (zmq::poll(&item, 1, std::max(left, std::chrono::milliseconds(0))) == 0)
      return std::nullopt;
    zmq::message_t header;
    if (!socket_.recv(header, zmq::recv_flags::dontwait))
      continue;
    std::optional<zmq::message_t> body;
    if (header.more()) {
      body.emplace();
      (void)socket_.recv(*body, zmq::recv_flags::none);
      while (body->more()) { // more frames than the format has: drain them
        zmq::message_t extra;
        (void)socket_.recv(extra, zmq::recv_flags::none);
        if (!extra.more())
          break;
      }
    }
    PublishHeader h{};
    if (header.size() != sizeof h) {
      ++malformed_;
      continue;
    }
    std::memcpy(&h, header.data(), sizeof h);
    const auto type = static_cast<PublishType>(h.type);
    if ((type == PublishType::Item) != body.has_value() || h.type > 2) {
      ++malformed_;
      continue;
    }
    // `next` is the sequence the following item will carry.
    const uint64_t next = type == PublishType::Item ? h.sequence + 1 : h.sequence;
    const uint64_t here = h.sequence; // the first sequence this message accounts for
    if (!first_) {
      first_ = here;
      expected_ = here;
    }
    if (here > expected_)
      missed_ += here - expected_;
    expected_ = std::max(expected_, next);
    if (type == PublishType::End)
      ended_ = true;
    if (type != PublishType::Item)
      continue;
    ++received_;
    return Item{h.sequence, std::move(*body)};
  }
  return std::nullopt;
}

} // namespace shapetrace::fanout
