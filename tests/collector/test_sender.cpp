// A stand-in for an instrumented process in the collector's integration tests and benchmark: a real
// process that sends real stream messages over the local channel as the runtime does (an ipc://
// endpoint), or over a real ZeroMQ PUSH socket as a forwarding collector does (tcp://)
// (ProcessStart, ModuleTable, per thread ThreadStart / EventBatch... / ThreadEnd, ProcessEnd).
//
//   test_sender ENDPOINT [--threads N] [--batches B] [--events E] [--process KEY]
//               [--malformed M] [--curve-server-key Z85] [--curve-client-key SECRET_Z85]
//               [--no-end] [--pause-after K]
//               [--first-sequence S]
//
// Thread t (tids 1..N) sends B batches of E events; event i of batch s of thread t carries
// timestamp (s * E + i) * 10 + t and function id (s * E + i) % 1000, so a reader can check every
// event exactly. --malformed M also sends M malformed messages of each kind (random bytes, a
// truncated batch, an oversized message, a duplicate and an out-of-order batch). --pause-after K
// stops after K batches of thread 1, prints "paused" and waits for stdin to close (for kill -9
// tests). --first-sequence S numbers the batches from S (as a sender that skipped S batches; the
// collector's memory bound is measured with --threads 3000 --batches 1 --events 1
// --first-sequence 4096, docs/collector.md "Bounds"). Prints "sent MESSAGES EVENTS" on success;
// exit code 1 on a send failure.
#include "support/channel_producer.h"
#include "sender_events.h"
#include "wire/codec.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <chrono>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>
#include <zmq.hpp>

namespace {

using namespace shapetrace;
using testing::senderBatchEvents;

struct Options {
  std::string endpoint;
  uint32_t threads = 1;
  uint64_t batches = 10;
  uint32_t events = 100;
  uint64_t process = 0;
  uint64_t malformed = 0;
  std::string curve_server_key;
  std::string curve_client_key; // the client's secret key (Z85); empty: a fresh key pair
  bool end = true;
  int64_t pause_after = -1;
  uint64_t first_sequence = 0;
};

// Sends messages as a process of the collector's host (an ipc:// endpoint: the local channel, as
// the runtime does) or as a forwarding collector (tcp://: ZeroMQ PUSH). Every send waits for room:
// nothing is dropped on the way.
class Sender {
public:
  virtual ~Sender() = default;
  virtual void send(const std::vector<std::byte>& bytes) = 0;
  uint64_t messages = 0;
};

class ZmqSender final : public Sender {
public:
  ZmqSender(zmq::context_t& context, const Options& o) : socket_(context, zmq::socket_type::push) {
    socket_.set(zmq::sockopt::linger, -1); // deliver everything before exit
    socket_.set(zmq::sockopt::sndhwm, 1000);
    if (!o.curve_server_key.empty()) {
      char public_key[41], secret_key[41];
      zmq_curve_keypair(public_key, secret_key);
      if (!o.curve_client_key.empty()) {
        std::snprintf(secret_key, sizeof secret_key, "%s", o.curve_client_key.c_str());
        zmq_curve_public(public_key, secret_key);
      }
      socket_.set(zmq::sockopt::curve_serverkey, o.curve_server_key);
      socket_.set(zmq::sockopt::curve_publickey, std::string(public_key));
      socket_.set(zmq::sockopt::curve_secretkey, std::string(secret_key));
    }
    socket_.connect(o.endpoint);
  }
  void send(const std::vector<std::byte>& bytes) override {
    socket_.send(zmq::buffer(bytes.data(), bytes.size()), zmq::send_flags::none);
    ++messages;
  }

private:
  zmq::socket_t socket_;
};

class ChannelSender final : public Sender {
public:
  explicit ChannelSender(const Options& o) : producer_(o.endpoint, uint64_t{4} << 20) {}
  void send(const std::vector<std::byte>& bytes) override {
    producer_.send(bytes);
    ++messages;
  }

private:
  testing::ChannelProducer producer_;
};

int run(const Options& o) {
  zmq::context_t context(1);
  std::unique_ptr<Sender> made;
  if (o.endpoint.rfind("ipc://", 0) == 0)
    made = std::make_unique<ChannelSender>(o);
  else
    made = std::make_unique<ZmqSender>(context, o);
  Sender& sender = *made;
  const uint64_t process = o.process ? o.process : (uint64_t{0x5e4d} << 32) + ::getpid();
  auto send = [&](wire::ItemBody body) {
    sender.send(wire::encodeItem(wire::StreamItem{process, std::move(body)}));
  };
  wire::ProcessStart start;
  start.pid = static_cast<uint32_t>(::getpid());
  start.executable = "test_sender";
  send(start);
  wire::ModuleTable table{"test_sender", 0, {}};
  for (uint32_t id = 0; id < 1000; ++id)
    table.functions.push_back({id, "f" + std::to_string(id), "f" + std::to_string(id), "", 0});
  send(table);

  uint64_t events = 0;
  // Threads are interleaved batch by batch, as a runtime's drain thread sends them.
  for (uint32_t t = 1; t <= o.threads; ++t)
    send(wire::ThreadStart{t, 0, "thread-" + std::to_string(t)});
  for (uint64_t s = 0; s < o.batches; ++s) {
    if (o.pause_after >= 0 && s == static_cast<uint64_t>(o.pause_after)) {
      std::printf("paused %llu\n", (unsigned long long)sender.messages);
      std::fflush(stdout);
      char c;
      while (::read(0, &c, 1) > 0) {
      }
    }
    for (uint32_t t = 1; t <= o.threads; ++t) {
      sender.send(wire::encodeEventBatch(process, t, o.first_sequence + s,
                                         senderBatchEvents(t, s, o.events)));
      events += o.events;
    }
  }

  std::mt19937_64 random(process);
  for (uint64_t m = 0; m < o.malformed; ++m) {
    std::vector<std::byte> noise(64);
    for (auto& b : noise)
      b = static_cast<std::byte>(random());
    sender.send(noise);
    auto batch = wire::encodeEventBatch(process, 1, o.batches, senderBatchEvents(1, 0, 64));
    batch.resize(batch.size() / 2 & ~size_t{7});
    sender.send(batch);
    sender.send(std::vector<std::byte>(wire::kMaxMessageBytes + 8));
    // Thread 1's batch 0 again (duplicate), then batch B+1 skipping B, then the late batch B.
    sender.send(wire::encodeEventBatch(process, 1, 0, senderBatchEvents(1, 0, o.events)));
  }
  if (o.malformed) {
    sender.send(wire::encodeEventBatch(process, 1, o.batches + 1, senderBatchEvents(1, 0, 4)));
    sender.send(wire::encodeEventBatch(process, 1, o.batches, senderBatchEvents(1, 0, 4)));
  }

  if (o.end) {
    for (uint32_t t = 1; t <= o.threads; ++t)
      send(wire::ThreadEnd{t, 0, o.batches * o.events, 0, o.batches});
    send(wire::ProcessEnd{0, events, 0, 0, wire::EndReason::Exit, ""});
  }
  std::printf("sent %llu %llu\n", (unsigned long long)sender.messages, (unsigned long long)events);
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: test_sender ENDPOINT [options] (see the source)\n");
    return 2;
  }
  Options o;
  o.endpoint = argv[1];
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (arg == "--threads")
      o.threads = static_cast<uint32_t>(std::stoul(value()));
    else if (arg == "--batches")
      o.batches = std::stoull(value());
    else if (arg == "--events")
      o.events = static_cast<uint32_t>(std::stoul(value()));
    else if (arg == "--process")
      o.process = std::stoull(value());
    else if (arg == "--malformed")
      o.malformed = std::stoull(value());
    else if (arg == "--curve-server-key")
      o.curve_server_key = value();
    else if (arg == "--curve-client-key")
      o.curve_client_key = value();
    else if (arg == "--no-end")
      o.end = false;
    else if (arg == "--pause-after")
      o.pause_after = std::stoll(value());
    else if (arg == "--first-sequence")
      o.first_sequence = std::stoull(value());
    else {
      std::fprintf(stderr, "test_sender: unknown option %s\n", arg.c_str());
      return 2;
    }
  }
  try {
    return run(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "test_sender: %s\n", e.what());
    return 1;
  }
}
