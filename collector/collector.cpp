// The collector's receive loop: validate, check sequences, record, publish (see collector.h).
#include "collector.h"

#include "channel/channel.h"
#include "wire/endpoint.h"

#include "wire/format_error.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace shapetrace::collector {

namespace {

// The ZAP domain of the sockets forwarding collectors connect to: only listed keys pass there.
constexpr char kCollectDomain[] = "shapetrace-collect";

std::string trim(std::string s) {
  const auto not_space = [](unsigned char c) { return !std::isspace(c); };
  s.erase(s.begin(), std::find_if(s.begin(), s.end(), not_space));
  s.erase(std::find_if(s.rbegin(), s.rend(), not_space).base(), s.end());
  return s;
}

bool isLoopbackHost(const std::string& host) {
  return host == "localhost" || host == "lo" || host == "::1" || host == "[::1]" ||
         host.rfind("127.", 0) == 0;
}

void add(SenderCounters& into, const SenderCounters& c) {
  into.messages += c.messages;
  into.events += c.events;
  into.bytes += c.bytes;
  into.malformed += c.malformed;
  into.oversized += c.oversized;
  into.out_of_order += c.out_of_order;
  into.duplicate += c.duplicate;
  into.missing_batches += c.missing_batches;
  into.unrecorded += c.unrecorded;
  into.refused += c.refused;
}

nlohmann::json countersJson(const SenderCounters& c) {
  return {{"pid", c.pid},
          {"executable", c.executable},
          {"ended", c.ended},
          {"end", c.end},
          {"exit_status", c.exit_status},
          {"messages", c.messages},
          {"events", c.events},
          {"bytes", c.bytes},
          {"malformed", c.malformed},
          {"oversized", c.oversized},
          {"out_of_order", c.out_of_order},
          {"duplicate", c.duplicate},
          {"missing_batches", c.missing_batches},
          {"unrecorded", c.unrecorded},
          {"refused", c.refused}};
}

} // namespace

SenderCounters CollectorStats::total() const {
  SenderCounters sum;
  for (const auto& [process, c] : senders)
    add(sum, c);
  for (const auto& [peer, c] : unattributed)
    add(sum, c);
  return sum;
}

void checkListenEndpoint(const std::string& endpoint, bool curve) {
  const auto scheme_end = endpoint.find("://");
  if (scheme_end == std::string::npos)
    throw std::runtime_error("endpoint '" + endpoint +
                             "' has no transport (use ipc://PATH or tcp://HOST:PORT)");
  const std::string scheme = endpoint.substr(0, scheme_end);
  if (scheme == "ipc" || scheme == "inproc")
    return;
  if (scheme != "tcp")
    throw std::runtime_error("endpoint '" + endpoint + "': transport '" + scheme +
                             "' is not supported (use ipc:// or tcp://)");
  const std::string address = endpoint.substr(scheme_end + 3);
  const auto colon = address.rfind(':');
  if (colon == std::string::npos)
    throw std::runtime_error("endpoint '" + endpoint + "' has no port (tcp://HOST:PORT)");
  const std::string host = address.substr(0, colon);
  if (!isLoopbackHost(host) && !curve)
    throw std::runtime_error(
        "refusing to listen on '" + endpoint +
        "': it is reachable from other machines and unauthenticated. Use a loopback address "
        "(tcp://127.0.0.1:PORT), an ipc:// endpoint, or give --curve-secret-key FILE (clients "
        "then need SHAPETRACE_CURVE_SERVER_KEY)");
}

void preparePrivateDirectory(const std::string& dir) {
  const std::string problem = wire::claimPrivateDirectory(dir);
  if (!problem.empty())
    throw std::runtime_error(problem + "; refusing to put the collector's socket there");
}

void prepareSocketDirectory(const std::string& endpoint) {
  if (endpoint.rfind("ipc://", 0) != 0)
    return;
  const std::filesystem::path folder = std::filesystem::path(endpoint.substr(6)).parent_path();
  if (folder.empty() || std::filesystem::exists(folder))
    return;
  std::error_code error;
  std::filesystem::create_directories(folder, error);
  if (!error)
    std::filesystem::permissions(folder, std::filesystem::perms::owner_all, error);
  if (error)
    throw std::runtime_error("cannot create the socket folder " + folder.string() + ": " +
                             error.message());
}

std::string readCurveSecretKey(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw std::runtime_error("cannot read CURVE secret key " + path + ": " +
                             std::strerror(errno));
  if ((st.st_mode & 077) != 0)
    throw std::runtime_error("CURVE secret key " + path +
                             " is readable by other users; run 'chmod 600 " + path + "'");
  std::ifstream in(path);
  std::string key;
  std::getline(in, key);
  key = trim(key);
  if (key.size() != 40)
    throw std::runtime_error("CURVE secret key " + path +
                             " must hold a 40-character Z85 key on its first line (see "
                             "'shapetrace keygen')");
  char public_key[41];
  if (zmq_curve_public(public_key, key.c_str()) != 0)
    throw std::runtime_error("CURVE secret key " + path + " is not valid Z85");
  return key;
}

Collector::Collector(CollectorOptions options, zmq::context_t& context)
    : options_(std::move(options)), pull_(context, zmq::socket_type::pull) {
  if (options_.listen.empty())
    throw std::runtime_error("no endpoint to listen on");
  std::string secret;
  if (!options_.curve_secret_key_file.empty()) {
    if (!zmq_has("curve"))
      throw std::runtime_error("this libzmq was built without CURVE support");
    secret = readCurveSecretKey(options_.curve_secret_key_file);
    char public_key[41];
    zmq_curve_public(public_key, secret.c_str());
    curve_public_ = public_key;
  }
  for (const std::string& endpoint : options_.listen)
    checkListenEndpoint(endpoint, !secret.empty());
  if (!options_.publish.empty())
    checkListenEndpoint(options_.publish, !secret.empty());

  if (!options_.curve_clients.empty())
    readAllowedClients();
  for (const std::string& endpoint : options_.listen)
    if (endpoint.rfind("tcp://", 0) == 0 && !isLoopbackHost(endpoint.substr(6, endpoint.rfind(':') - 6)) &&
        options_.curve_clients.empty())
      throw std::runtime_error("refusing to listen on '" + endpoint +
                               "' without --curve-clients: any client that knows the server's "
                               "public key would be accepted. List the forwarding collectors' "
                               "public keys (their 'shapetrace keygen' FILE.pub)");
  if (!options_.curve_clients.empty()) {
    // The ZAP handler must be bound before any CURVE socket takes a connection.
    zap_.emplace(context, zmq::socket_type::rep);
    zap_->set(zmq::sockopt::linger, 0);
    zap_->bind("inproc://zeromq.zap.01");
    pull_.set(zmq::sockopt::zap_domain, std::string(kCollectDomain));
  }
  pull_.set(zmq::sockopt::rcvhwm, options_.receive_hwm);
  // Bounds what one message can make ZeroMQ allocate; messages between kMaxMessageBytes and this
  // still arrive and are counted as oversized, larger ones make ZeroMQ drop the connection.
  pull_.set(zmq::sockopt::maxmsgsize, static_cast<int64_t>(4 * wire::kMaxMessageBytes));
  pull_.set(zmq::sockopt::linger, 0);
  if (!secret.empty()) {
    pull_.set(zmq::sockopt::curve_server, true);
    pull_.set(zmq::sockopt::curve_secretkey, secret);
  }
  // Open the recording before binding, so that a directory in use fails before anyone connects.
  if (!options_.out_dir.empty())
    writer_ = std::make_unique<recording::RecordingWriter>(options_.out_dir, options_.recording);
  std::vector<std::string> local;
  for (const std::string& endpoint : options_.listen) {
    if (endpoint.rfind("ipc://", 0) == 0) {
      local.push_back(endpoint);
      bound_.push_back(endpoint);
      continue;
    }
    pull_.bind(endpoint);
    pull_bound_ = true;
    bound_.push_back(pull_.get(zmq::sockopt::last_endpoint));
  }
  if (!local.empty())
    local_.emplace(local, options_.limits.max_processes);
  if (!options_.publish.empty()) {
    publisher_.emplace(context, options_.publish, options_.publish_hwm, secret,
                       options_.publish_max_queued_bytes);
    publish_bound_ = publisher_->endpoint();
  }
  if (!options_.forward.empty())
    connectForward(context);
}

void Collector::connectForward(zmq::context_t& context) {
  const std::string& endpoint = options_.forward;
  const bool loopback = endpoint.rfind("tcp://", 0) == 0 &&
                        isLoopbackHost(endpoint.substr(6, endpoint.rfind(':') - 6));
  if (endpoint.rfind("tcp://", 0) != 0 && endpoint.rfind("inproc://", 0) != 0)
    throw std::runtime_error("--forward '" + endpoint + "': give tcp://HOST:PORT");
  if (endpoint.rfind("tcp://", 0) == 0 && !loopback && options_.forward_server_key.empty())
    throw std::runtime_error("refusing to forward to '" + endpoint +
                             "' unencrypted: give --forward-server-key with the other "
                             "collector's public key (it prints it when started with "
                             "--curve-secret-key)");
  forward_.emplace(context, zmq::socket_type::push);
  forward_->set(zmq::sockopt::sndhwm, options_.forward_hwm);
  forward_->set(zmq::sockopt::linger, 1000); // what is queued at the end gets a second to leave
  if (!options_.forward_server_key.empty()) {
    if (options_.forward_server_key.size() != 40)
      throw std::runtime_error("--forward-server-key must be a 40-character Z85 public key");
    char public_key[41], secret_key[41];
    if (options_.forward_secret_key_file.empty()) {
      zmq_curve_keypair(public_key, secret_key);
    } else {
      const std::string secret = readCurveSecretKey(options_.forward_secret_key_file);
      std::memcpy(secret_key, secret.c_str(), 41);
      zmq_curve_public(public_key, secret_key);
    }
    forward_->set(zmq::sockopt::curve_serverkey, options_.forward_server_key);
    forward_->set(zmq::sockopt::curve_publickey, std::string(public_key));
    forward_->set(zmq::sockopt::curve_secretkey, std::string(secret_key));
  }
  forward_->connect(endpoint);
}

// To the live subscribers and the collector forwarded to, whichever there are.
void Collector::fanOut(std::span<const std::byte> bytes) {
  if (publisher_) publisher_->publish(bytes);
  if (forward_) {
    zmq::message_t message(bytes.data(), bytes.size());
    if (forward_->send(message, zmq::send_flags::dontwait))
      ++forwarded_;
    else
      ++forward_dropped_;
  }
}

Collector::~Collector() {
  try {
    finish();
  } catch (...) {
    // Destructors must not throw; finish() reports failures through its result when called.
  }
}

void Collector::readAllowedClients() {
  const auto addKeyOf = [this](const std::string& line, const std::string& where) {
    const std::string key = trim(line);
    if (key.empty() || key[0] == '#')
      return;
    uint8_t binary[32];
    if (key.size() != 40 || !zmq_z85_decode(binary, key.c_str()))
      throw std::runtime_error(where + ": not a 40-character Z85 public key");
    allowed_clients_.insert(key);
  };
  const std::filesystem::path path(options_.curve_clients);
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    for (const auto& entry : std::filesystem::directory_iterator(path)) {
      if (!entry.is_regular_file())
        continue;
      std::ifstream in(entry.path());
      std::string line;
      std::getline(in, line);
      addKeyOf(line, entry.path().string());
    }
  } else {
    std::ifstream in(path);
    if (!in)
      throw std::runtime_error("cannot read --curve-clients " + path.string());
    std::string line;
    for (size_t number = 1; std::getline(in, line); ++number)
      addKeyOf(line, path.string() + ":" + std::to_string(number));
  }
  if (allowed_clients_.empty())
    throw std::runtime_error("--curve-clients " + path.string() + " lists no key");
}

// ZAP (RFC 27): libzmq asks about each CURVE handshake. Forwarding collectors (the PULL socket's
// domain) must hold a listed key; subscribers of the fan-out keep needing only the server's key.
void Collector::serveZap() {
  for (;;) {
    std::vector<zmq::message_t> request;
    zmq::message_t frame;
    if (!zap_->recv(frame, zmq::recv_flags::dontwait))
      return;
    request.push_back(std::move(frame));
    while (request.back().more() && request.size() < 16) {
      (void)zap_->recv(frame);
      request.push_back(std::move(frame));
    }
    std::string status = "400", text = "malformed request", user;
    if (request.size() >= 7 && request[5].to_string() == "CURVE" && request[6].size() == 32) {
      char key[41];
      zmq_z85_encode(key, static_cast<const uint8_t*>(request[6].data()), 32);
      if (request[2].to_string() != kCollectDomain || allowed_clients_.count(key)) {
        status = "200";
        text = "OK";
        user = key;
      } else {
        text = "unknown client key";
        ++refused_clients_;
      }
    }
    const std::string id = request.size() > 1 ? request[1].to_string() : "";
    for (const std::string& part : {std::string("1.0"), id, status, text, user})
      zap_->send(zmq::buffer(part), zmq::send_flags::sndmore);
    zap_->send(zmq::message_t(), zmq::send_flags::none);
  }
}

SenderCounters& Collector::unattributed(const std::string& peer) {
  std::string key = peer;
  // Bounded: past kMaxPeers addresses, new ones share one entry.
  if (unattributed_.size() >= kMaxPeers && !unattributed_.count(key))
    key = "(other peers)";
  return unattributed_[key];
}

bool Collector::acceptSequence(SenderState& sender, uint32_t thread, uint64_t sequence) {
  auto found = sender.threads.find(thread);
  if (found == sender.threads.end()) {
    const CollectorLimits& limits = options_.limits;
    if (threads_ >= limits.max_threads || sender.threads.size() >= limits.max_threads_per_process) {
      ++sender.counters.refused;
      return false;
    }
    found = sender.threads.emplace(thread, ThreadSequence{}).first;
    ++threads_;
  }
  ThreadSequence& seq = found->second;
  if (sequence == seq.next) {
    ++seq.next;
    return true;
  }
  if (sequence > seq.next) {
    sender.counters.missing_batches += sequence - seq.next;
    seq.missing.emplace(seq.next, sequence);
    while (seq.missing.size() > options_.limits.max_missing_ranges)
      seq.missing.erase(seq.missing.begin());
    seq.next = sequence + 1;
    return true;
  }
  // A lower number: late if it lies in a remembered missing range (which it splits).
  auto range = seq.missing.upper_bound(sequence);
  if (range != seq.missing.begin() && std::prev(range)->second > sequence) {
    --range;
    const uint64_t first = range->first, end = range->second;
    seq.missing.erase(range);
    if (first < sequence)
      seq.missing.emplace(first, sequence);
    if (sequence + 1 < end)
      seq.missing.emplace(sequence + 1, end);
    while (seq.missing.size() > options_.limits.max_missing_ranges)
      seq.missing.erase(seq.missing.begin());
    ++sender.counters.out_of_order;
    --sender.counters.missing_batches;
  } else {
    ++sender.counters.duplicate;
  }
  return false;
}

size_t Collector::stateBytes() const {
  size_t bytes = (senders_.size() + unattributed_.size()) * kProcessStateBytes +
                 latest_image_.size() * kPidEntryBytes;
  for (const auto& [process, sender] : senders_)
    for (const auto& [thread, seq] : sender.threads)
      bytes += kThreadStateBytes + seq.missing.size() * kMissingRangeBytes;
  return bytes;
}

Collector::SenderState* Collector::admit(uint64_t process, const std::string& client) {
  if (senders_.size() - ended_senders_ >= options_.limits.max_processes ||
      open_by_client_[client] >= options_.limits.max_processes_per_client) {
    ++refused_processes_;
    return nullptr;
  }
  SenderState& sender = senders_.emplace(process, SenderState{}).first->second;
  sender.client = client;
  ++open_by_client_[client];
  return &sender;
}

void Collector::handle(std::span<const std::byte> bytes,
                       const std::function<std::string()>& peer, const std::string& client) {
  wire::ItemHeader header;
  try {
    header = wire::peekItem(bytes);
  } catch (const wire::FormatError& e) {
    SenderCounters& c = unattributed(peer());
    ++(e.reason() == wire::FormatErrorReason::Oversized ? c.oversized : c.malformed);
    return;
  }
  auto known = senders_.find(header.process);
  if (known == senders_.end()) {
    if (!admit(header.process, client))
      return;
    known = senders_.find(header.process);
  } else if (known->second.client != client) {
    ++foreign_messages_; // one sender may not write into another's process
    return;
  }
  SenderState& sender = known->second;
  SenderCounters& c = sender.counters;
  if (header.kind == wire::ItemKind::EventBatch &&
      !acceptSequence(sender, header.thread, header.sequence))
    return;
  if ((header.kind == wire::ItemKind::ProcessStart || header.kind == wire::ItemKind::ProcessEnd ||
       header.kind == wire::ItemKind::ExecFailed || header.kind == wire::ItemKind::ExitStatus ||
       header.kind == wire::ItemKind::ThreadEnd) &&
      !noteLifecycle(bytes, sender))
    return;
  if (header.kind == wire::ItemKind::EventBatch)
    sender.latest_batch_ns = std::max(sender.latest_batch_ns, header.first_ns);
  ++c.messages;
  c.events += header.event_count;
  c.bytes += bytes.size();
  if (writer_) {
    if (!writer_->append(bytes, header)) {
      ++c.unrecorded;
      if (!recording_error_reported_) {
        recording_error_reported_ = true;
        std::fprintf(stderr,
                     "shapetrace collect: error: %s\nshapetrace collect: still receiving (and "
                     "publishing) so that the programs are not blocked; nothing more is "
                     "recorded\n",
                     writer_->error().c_str());
      }
    }
  }
  fanOut(bytes);
  // Ended processes keep their counters, up to a bound; past it they are summed into one entry.
  if (c.ended && ended_senders_ > kMaxEndedKept) {
    const std::string key = "(ended processes)";
    if (!unattributed_.count(key) && unattributed_.size() >= kMaxPeers)
      unattributed_.erase(unattributed_.begin());
    add(unattributed_[key], c);
    if (const auto image = latest_image_.find(c.pid);
        image != latest_image_.end() && image->second == known->first)
      latest_image_.erase(image);
    senders_.erase(known);
    --ended_senders_;
  }
}

bool Collector::noteLifecycle(std::span<const std::byte> bytes, SenderState& sender) {
  SenderCounters& c = sender.counters;
  wire::StreamItem item;
  try {
    item = wire::decodeItem(bytes);
  } catch (const wire::FormatError& e) {
    ++(e.reason() == wire::FormatErrorReason::Oversized ? c.oversized : c.malformed);
    return false;
  }
  if (const auto* start = std::get_if<wire::ProcessStart>(&item.body)) {
    // One entry per process key: a key that starts again under another pid (a forged stream
    // does, endlessly) moves its entry instead of adding one.
    if (const auto old = latest_image_.find(c.pid);
        c.pid != start->pid && old != latest_image_.end() && old->second == item.process)
      latest_image_.erase(old);
    latest_image_[start->pid] = item.process;
    c.pid = start->pid;
    c.executable = start->executable.substr(0, kMaxNameBytes);
  } else if (const auto* end = std::get_if<wire::ProcessEnd>(&item.body)) {
    if (!c.ended) {
      c.ended = true;
      ++ended_senders_;
      if (const auto open = open_by_client_.find(sender.client);
          open != open_by_client_.end() && --open->second == 0)
        open_by_client_.erase(open);
    }
    c.end = end->reason == wire::EndReason::Exec
                ? "exec " + end->exec_path.substr(0, kMaxNameBytes)
                : std::string(wire::endReasonName(end->reason)) + " status " +
                      std::to_string(end->exit_status);
    forgetThreads(sender);
  } else if (const auto* thread_end = std::get_if<wire::ThreadEnd>(&item.body)) {
    // Sums a hostile sender could only make wrap in its own process's end.
    sender.threads_events_recorded += thread_end->events_recorded;
    sender.threads_events_dropped += thread_end->events_dropped;
  }
  return true;
}

// An ended process's per-thread state is no longer needed (a failed exec goes on under a new key);
// its counters stay for the reports.
void Collector::forgetThreads(SenderState& sender) {
  threads_ -= sender.threads.size();
  sender.threads.clear();
}

void Collector::appendOwnItem(const wire::StreamItem& item) {
  const wire::Bytes bytes = wire::encodeItem(item);
  const auto span = std::span<const std::byte>(bytes.data(), bytes.size());
  if (writer_)
    writer_->append(span, wire::peekItem(span));
  fanOut(span);
}

uint64_t Collector::latestImage(uint32_t pid) const {
  const auto image = latest_image_.find(pid);
  return image == latest_image_.end() ? 0 : image->second;
}

uint64_t Collector::recordExitStatus(uint32_t pid, int wait_status, uint64_t reaped_ns) {
  wire::ExitStatus status;
  status.pid = pid;
  status.timestamp_ns = reaped_ns;
  if (WIFSIGNALED(wait_status)) {
    status.signal = WTERMSIG(wait_status);
    status.core_dumped = WCOREDUMP(wait_status);
  } else {
    status.exit_code = WEXITSTATUS(wait_status);
  }
  const uint64_t process = latestImage(pid);
  const auto sender = senders_.find(process);
  if (sender != senders_.end() && !sender->second.counters.exit_status.empty())
    return process; // known already (the collector saw it die, and its parent reaped it later)
  appendOwnItem({process, status});
  if (sender != senders_.end()) {
    sender->second.counters.exit_status = wire::describeExitStatus(status);
    sender->second.wait_status = wait_status;
    writeOwedEnd(process, sender->second, false);
  }
  return process;
}

// Messages forwarded over ZeroMQ that are queued now (at most 100000, so that the caller comes
// back to its heartbeat and the local channels).
size_t Collector::receiveForwarded() {
  size_t handled = 0;
  zmq::message_t message;
  while (handled < 100000 && pull_.recv(message, zmq::recv_flags::dontwait)) {
    const std::span<const std::byte> bytes(static_cast<const std::byte*>(message.data()),
                                           message.size());
    const char* user = zmq_msg_gets(message.handle(), "User-Id"); // the ZAP reply's key
    handle(
        bytes,
        [&] {
          const char* peer = zmq_msg_gets(message.handle(), "Peer-Address");
          return std::string(peer ? peer : "");
        },
        user && *user ? std::string("curve:") + user : std::string("zeromq"));
    ++handled;
  }
  return handled;
}

size_t Collector::serviceLocal() {
  if (!local_)
    return 0;
  const size_t handled = local_->service(
      [this](std::span<const std::byte> bytes, bool oversized, uint32_t pid) {
        const auto peer = [pid] { return "pid " + std::to_string(pid); };
        if (oversized)
          ++unattributed(peer()).oversized;
        else
          handle(bytes, peer, "local");
      },
      [this](uint32_t pid, std::optional<int> wait_status,
             const LocalChannels::RingsFinished& rings) { noteVanished(pid, wait_status, rings); },
      100000);
  local_busy_ = handled > 0;
  return handled;
}

// A local process died without closing its channel: its end, as the kernel kept it (until its
// parent reaps it, which `shapetrace record` may do too: recordExitStatus keeps the first).
// When the collector finished its rings and nothing else was lost, it owes the process its end:
// written once the wait status is known (now, or when `record` reaps it).
void Collector::noteVanished(uint32_t pid, std::optional<int> wait_status,
                             const LocalChannels::RingsFinished& rings) {
  const uint64_t process = latestImage(pid);
  const auto sender = senders_.find(process);
  if (process == 0 || sender == senders_.end())
    return;
  if (rings.complete && !sender->second.counters.ended)
    sender->second.end_owed_ns = std::max(rings.last_event_ns, sender->second.latest_batch_ns);
  if (wait_status)
    recordExitStatus(pid, *wait_status, channel::monotonicNs());
  else
    writeOwedEnd(process, sender->second, false); // `record` may have reaped it already
}

void Collector::writeOwedEnd(uint64_t process, SenderState& sender, bool or_unknown) {
  if (!sender.end_owed_ns || (!sender.wait_status && !or_unknown))
    return;
  wire::ProcessEnd end;
  end.timestamp_ns = *sender.end_owed_ns;
  end.events_recorded = sender.threads_events_recorded;
  end.events_dropped = sender.threads_events_dropped;
  end.reason = wire::EndReason::Signal; // exitStatus 0: the signal is not known
  if (sender.wait_status && WIFSIGNALED(*sender.wait_status)) {
    end.exit_status = WTERMSIG(*sender.wait_status);
  } else if (sender.wait_status) {
    end.reason = wire::EndReason::ExitImmediately; // exited, its runtime never saw how
    end.exit_status = WEXITSTATUS(*sender.wait_status);
  }
  end.written_by_collector = true;
  sender.end_owed_ns.reset();
  // As the process's own item: recorded, published and counted as its end.
  const wire::Bytes bytes = wire::encodeItem({process, end});
  const std::string client = sender.client; // handle() may drop the sender's entry
  handle(std::span<const std::byte>(bytes.data(), bytes.size()), [] { return std::string(); },
         client);
}

size_t Collector::poll(std::chrono::milliseconds timeout) {
  // A channel's ring has no descriptor to wake us: with processes connected, look at least every
  // millisecond while they write, every 10 ms while they are quiet.
  if (local_ && local_->active())
    timeout = std::min(timeout, std::chrono::milliseconds(local_busy_ ? 1 : 10));
  std::vector<zmq::pollitem_t> items;
  if (pull_bound_)
    items.push_back({pull_.handle(), 0, ZMQ_POLLIN, 0});
  if (zap_)
    items.push_back({zap_->handle(), 0, ZMQ_POLLIN, 0});
  if (local_) {
    std::vector<int> fds;
    local_->descriptors(fds);
    for (const int fd : fds)
      items.push_back({nullptr, fd, ZMQ_POLLIN, 0});
  }
  size_t handled = 0;
  try {
    zmq::poll(items.data(), items.size(), timeout);
    if (zap_)
      serveZap();
    handled += serviceLocal();
    if (pull_bound_)
      handled += receiveForwarded();
  } catch (const zmq::error_t& e) {
    if (e.num() != EINTR) // a signal: the caller checks its stop flag
      throw;
  }
  if (publisher_)
    publisher_->heartbeatIfIdle();
  return handled;
}

void Collector::run(const std::atomic<bool>& stop) {
  while (!stop.load(std::memory_order_relaxed))
    poll(std::chrono::milliseconds(100));
}

bool Collector::finish() {
  if (finished_)
    return !writer_ || !writer_->failed();
  finished_ = true;
  // Whatever already arrived is still handled; senders that are gone cannot send more.
  while (poll(std::chrono::milliseconds(0)) > 0) {
  }
  // Ends owed to processes whose wait status no one could read.
  std::vector<uint64_t> owed; // handle() may drop an ended sender's entry: not while iterating
  for (const auto& [process, sender] : senders_)
    if (sender.end_owed_ns)
      owed.push_back(process);
  for (const uint64_t process : owed)
    if (const auto sender = senders_.find(process); sender != senders_.end())
      writeOwedEnd(process, sender->second, true);
  if (local_)
    final_channel_counters_ = local_->counters(); // for the summary after the finish
  local_.reset(); // the processes still connected stop waiting for us, and the sockets go
  if (publisher_)
    publisher_->end();
  bool ok = true;
  if (writer_) {
    ok = writer_->close();
    writeStatsFile();
  }
  return ok;
}

CollectorStats Collector::stats() const {
  CollectorStats s;
  for (const auto& [process, sender] : senders_)
    s.senders[process] = sender.counters;
  s.unattributed = unattributed_;
  s.refused_processes = refused_processes_;
  s.refused_clients = refused_clients_;
  s.foreign_messages = foreign_messages_;
  s.channels = local_ ? local_->counters() : final_channel_counters_;
  s.forwarded = forwarded_;
  s.forward_dropped = forward_dropped_;
  s.published = publisher_ ? publisher_->published() : 0;
  s.not_published = publisher_ ? publisher_->notPublished() : 0;
  s.not_published_bytes = publisher_ ? publisher_->notPublishedBytes() : 0;
  if (writer_) {
    s.recording_error = writer_->error();
    s.recording = writer_->stats();
  }
  return s;
}

void Collector::writeStatsFile() const {
  const CollectorStats s = stats();
  nlohmann::json senders = nlohmann::json::array();
  for (const auto& [process, c] : s.senders) {
    nlohmann::json j = countersJson(c);
    j["process"] = process;
    senders.push_back(j);
  }
  nlohmann::json unattributed = nlohmann::json::array();
  for (const auto& [peer, c] : s.unattributed) {
    nlohmann::json j = countersJson(c);
    j["peer"] = peer;
    unattributed.push_back(j);
  }
  nlohmann::json doc = {
      {"senders", senders},
      {"unattributed", unattributed},
      {"published", s.published},
      {"not_published", s.not_published},
      {"not_published_bytes", s.not_published_bytes},
      {"refused_processes", s.refused_processes},
      {"refused_clients", s.refused_clients},
      {"foreign_messages", s.foreign_messages},
      {"recording_error", s.recording_error},
      {"recorded_items", s.recording.items_written},
      {"refused_items", s.recording.refused_items},
      // What retention deleted (the same as DIR/retention.json, which is kept current while
      // recording); recorded_items counts them, the segments no longer hold them.
      {"retention",
       {{"deleted_segments", s.recording.retention.segments},
        {"deleted_bytes", s.recording.retention.bytes},
        {"deleted_batches", s.recording.retention.batches},
        {"deleted_events", s.recording.retention.events},
        {"gap_items", s.recording.retention.gap_items},
        {"error", s.recording.retention_error}}},
  };
  // Written next to the segments; a failure here (disk full) must not hide the recording.
  const std::string path = options_.out_dir + "/collector.json";
  // Created with the recording's mode (private by default), then written.
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
                        recording::recordingFileMode(options_.recording));
  if (fd >= 0)
    ::close(fd);
  std::ofstream out(path);
  out << doc.dump(2) << '\n';
}

} // namespace shapetrace::collector
