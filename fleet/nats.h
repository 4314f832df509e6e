// The fleet's transport: NATS JetStream through the NATS C client (libnats). A host publishes its
// summaries to subject "<stream>.<host>" of stream <stream> (created when missing, with a message
// id per summary so that JetStream's duplicate window drops re-sends); the fleet view reads them
// with a durable pull consumer, after the latest summary of every host (docs/fleet.md).
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace shapetrace::fleet {

// How to reach NATS: the server's URL (nats://host:4222, tls://...) and, when it asks for them,
// credentials (a .creds file with a user JWT and its nkey seed, or an nkey seed file with its
// public key) and the certificate authority a TLS server is checked against.
struct NatsSettings {
  std::string url = "nats://127.0.0.1:4222";
  std::string creds_file;
  std::string nkey_public, nkey_seed_file;
  std::string tls_ca_file;
};

// Stream and host names become subject tokens: letters, digits, '-' and '_' only.
bool isNatsToken(const std::string& name);

struct Connection; // the libnats connection and its JetStream context

// One summary as it arrived, and how to acknowledge it.
struct ReceivedSummary {
  std::vector<std::byte> bytes;
  std::string subject;
  std::function<void()> ack; // empty when there is nothing to acknowledge
};

// A host's side. Connects in the background (and reconnects forever): while NATS is away,
// publish() fails fast and the caller keeps its latest summary to send later.
class SummaryPublisher {
public:
  SummaryPublisher(const NatsSettings& settings, std::string stream, std::string host);
  ~SummaryPublisher();
  // Publishes with message id "<host>-<run>-<sequence>" and waits for JetStream's acknowledgement
  // (at most `wait`). Returns "" when stored (or dropped by JetStream as a duplicate), else why
  // not.
  std::string publish(std::span<const std::byte> summary, uint64_t run, uint64_t sequence,
                      std::chrono::milliseconds wait);
  bool connected() const;

private:
  std::string ensureStream();
  std::unique_ptr<Connection> connection_;
  std::string stream_, subject_, host_;
  bool stream_ready_ = false;
};

// The fleet's side: every host's latest summary first, then new ones through the durable consumer.
class SummarySubscriber {
public:
  // Throws std::runtime_error when NATS cannot be reached or the consumer not made.
  SummarySubscriber(const NatsSettings& settings, std::string stream, std::string durable);
  ~SummarySubscriber();
  // The latest message of every host's subject (what the fleet starts from).
  std::vector<ReceivedSummary> latestPerHost();
  // Up to `batch` new messages, waiting at most `wait` for the first. Empty on a timeout or while
  // NATS is away (it reconnects by itself).
  std::vector<ReceivedSummary> fetch(int batch, std::chrono::milliseconds wait);
  bool connected() const;

private:
  std::string subscribe();
  std::unique_ptr<Connection> connection_;
  std::string stream_, durable_;
  struct Subscription;
  std::unique_ptr<Subscription> subscription_;
};

} // namespace shapetrace::fleet
