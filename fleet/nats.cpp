// NATS JetStream through libnats: connection options, the summaries' stream, publishing with
// message ids, and the fleet's durable pull consumer.
#include "fleet/nats.h"

#include <nats/nats.h>
#include <stdexcept>

namespace shapetrace::fleet {

namespace {

std::string lastError(natsStatus status) {
  natsStatus last = NATS_OK;
  const char* text = nats_GetLastError(&last);
  return text != nullptr && *text != '\0' ? text : natsStatus_GetText(status);
}

void check(natsStatus status, const std::string& what) {
  if (status != NATS_OK)
    throw std::runtime_error(what + ": " + lastError(status));
}

} // namespace

bool isNatsToken(const std::string& name) {
  if (name.empty())
    return false;
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_'))
      return false;
  return true;
}

struct Connection {
  natsConnection* connection = nullptr;
  jsCtx* js = nullptr;

  // `background`: a first connection that fails is retried in the background (the host's side);
  // otherwise it is an error at once (the fleet view's).
  Connection(const NatsSettings& settings, bool background) {
    natsOptions* options = nullptr;
    check(natsOptions_Create(&options), "NATS options");
    struct Destroy {
      natsOptions* o;
      ~Destroy() { natsOptions_Destroy(o); }
    } destroy{options};
    check(natsOptions_SetURL(options, settings.url.c_str()), "NATS URL " + settings.url);
    if (!settings.creds_file.empty())
      check(natsOptions_SetUserCredentialsFromFiles(options, settings.creds_file.c_str(), nullptr),
            "NATS credentials " + settings.creds_file);
    if (!settings.nkey_seed_file.empty())
      check(natsOptions_SetNKeyFromSeed(options, settings.nkey_public.c_str(),
                                        settings.nkey_seed_file.c_str()),
            "NATS nkey seed " + settings.nkey_seed_file);
    if (!settings.tls_ca_file.empty()) {
      check(natsOptions_SetSecure(options, true), "NATS TLS");
      check(natsOptions_LoadCATrustedCertificates(options, settings.tls_ca_file.c_str()),
            "NATS certificate authority " + settings.tls_ca_file);
    }
    // Keep trying, in the background, for as long as the process runs: a host goes on analysing
    // and recording while NATS is away, and publishes once it is back.
    natsOptions_SetMaxReconnect(options, -1);
    natsOptions_SetReconnectWait(options, 250);
    natsOptions_SetTimeout(options, 2000);
    natsStatus status = natsConnection_Connect(&connection, options);
    // A server that is not there (yet) is retried in the background; one that refuses us (wrong
    // credentials, a certificate we do not trust) is an error at once: retrying cannot fix it.
    if (background && (status == NATS_NO_SERVER || status == NATS_TIMEOUT)) {
      // With a callback the retries are asynchronous (without one, Connect would retry forever).
      natsOptions_SetRetryOnFailedConnect(
          options, true, [](natsConnection*, void*) {}, nullptr);
      status = natsConnection_Connect(&connection, options);
    }
    if (status != NATS_OK && status != NATS_NOT_YET_CONNECTED)
      check(status, "NATS connection to " + settings.url);
    check(natsConnection_JetStream(&js, connection, nullptr), "JetStream context");
  }
  ~Connection() {
    jsCtx_Destroy(js);
    natsConnection_Destroy(connection);
  }
  bool connected() const { return natsConnection_Status(connection) == NATS_CONN_STATUS_CONNECTED; }
  // Why the last attempt to connect failed ("Authorization Violation", a TLS handshake error), or
  // "" when the client has none.
  std::string connectError() const {
    const char* text = nullptr;
    natsConnection_GetLastError(connection, &text);
    return text ? text : "";
  }

  // The summaries' stream: subjects "<stream>.>" (one per host), on disk, and only each host's
  // latest few summaries kept (each holds everything before it). Made when missing; an existing
  // stream is used as it is.
  std::string ensureStream(const std::string& stream) {
    jsStreamInfo* info = nullptr;
    jsErrCode error = static_cast<jsErrCode>(0);
    if (js_GetStreamInfo(&info, js, stream.c_str(), nullptr, &error) == NATS_OK) {
      jsStreamInfo_Destroy(info);
      return "";
    }
    const std::string subjects = stream + ".>";
    const char* subject_list[] = {subjects.c_str()};
    jsStreamConfig config;
    jsStreamConfig_Init(&config);
    config.Name = stream.c_str();
    config.Subjects = subject_list;
    config.SubjectsLen = 1;
    config.Storage = js_FileStorage;
    config.MaxMsgsPerSubject = kKeptPerHost;
    const natsStatus status = js_AddStream(&info, js, &config, nullptr, &error);
    if (status != NATS_OK)
      return "creating stream " + stream + ": " + lastError(status);
    jsStreamInfo_Destroy(info);
    return "";
  }
  static constexpr int64_t kKeptPerHost = 8;
};

SummaryPublisher::SummaryPublisher(const NatsSettings& settings, std::string stream,
                                   std::string host)
    : connection_(std::make_unique<Connection>(settings, true)), stream_(std::move(stream)),
      subject_(stream_ + "." + host), host_(std::move(host)) {}

SummaryPublisher::~SummaryPublisher() = default;

bool SummaryPublisher::connected() const {
  return connection_->connected();
}

std::string SummaryPublisher::publish(std::span<const std::byte> summary, uint64_t run,
                                      uint64_t sequence, std::chrono::milliseconds wait) {
  if (!connection_->connected()) {
    const std::string why = connection_->connectError();
    return "not connected to NATS" + (why.empty() ? "" : ": " + why);
  }
  if (!stream_ready_) {
    if (std::string error = connection_->ensureStream(stream_); !error.empty())
      return error;
    stream_ready_ = true;
  }
  const std::string id = host_ + "-" + std::to_string(run) + "-" + std::to_string(sequence);
  jsPubOptions options;
  jsPubOptions_Init(&options);
  options.MsgId = id.c_str();
  options.MaxWait = wait.count();
  jsPubAck* ack = nullptr;
  jsErrCode error = static_cast<jsErrCode>(0);
  const natsStatus status = js_Publish(&ack, connection_->js, subject_.c_str(), summary.data(),
                                       static_cast<int>(summary.size()), &options, &error);
  jsPubAck_Destroy(ack);
  if (status == NATS_OK)
    return "";
  // A stream deleted under us is made again on the next try.
  if (error == JSStreamNotFoundErr)
    stream_ready_ = false;
  return lastError(status);
}

struct SummarySubscriber::Subscription {
  natsSubscription* subscription = nullptr;
  ~Subscription() { natsSubscription_Destroy(subscription); }
};

SummarySubscriber::SummarySubscriber(const NatsSettings& settings, std::string stream,
                                     std::string durable)
    : connection_(std::make_unique<Connection>(settings, false)), stream_(std::move(stream)),
      durable_(std::move(durable)) {
  if (!connection_->connected())
    throw std::runtime_error("cannot reach NATS at " + settings.url);
  if (std::string error = connection_->ensureStream(stream_); !error.empty())
    throw std::runtime_error(error);
  if (std::string error = subscribe(); !error.empty())
    throw std::runtime_error(error);
}

SummarySubscriber::~SummarySubscriber() = default;

bool SummarySubscriber::connected() const {
  return connection_->connected();
}

std::string SummarySubscriber::subscribe() {
  auto subscription = std::make_unique<Subscription>();
  const std::string subjects = stream_ + ".>";
  jsSubOptions options;
  jsSubOptions_Init(&options);
  options.Stream = stream_.c_str();
  // A new consumer starts at each host's latest summary; an existing one where it left off.
  options.Config.DeliverPolicy = js_DeliverLastPerSubject;
  options.Config.AckPolicy = js_AckExplicit;
  jsErrCode error = static_cast<jsErrCode>(0);
  const natsStatus status =
      js_PullSubscribe(&subscription->subscription, connection_->js, subjects.c_str(),
                       durable_.c_str(), nullptr, &options, &error);
  if (status != NATS_OK)
    return "durable consumer " + durable_ + " on stream " + stream_ + ": " + lastError(status);
  subscription_ = std::move(subscription);
  return "";
}

namespace {

ReceivedSummary receivedOf(natsMsg* message, bool ackable) {
  ReceivedSummary received;
  const auto* data = reinterpret_cast<const std::byte*>(natsMsg_GetData(message));
  received.bytes.assign(data, data + natsMsg_GetDataLength(message));
  received.subject = natsMsg_GetSubject(message);
  if (ackable)
    received.ack = [message] {
      natsMsg_Ack(message, nullptr);
      natsMsg_Destroy(message);
    };
  else
    natsMsg_Destroy(message);
  return received;
}

} // namespace

std::vector<ReceivedSummary> SummarySubscriber::latestPerHost() {
  std::vector<ReceivedSummary> latest;
  const std::string filter = stream_ + ".>";
  jsOptions options;
  jsOptions_Init(&options);
  options.Stream.Info.SubjectsFilter = filter.c_str();
  jsStreamInfo* info = nullptr;
  jsErrCode error = static_cast<jsErrCode>(0);
  check(js_GetStreamInfo(&info, connection_->js, stream_.c_str(), &options, &error),
        "stream " + stream_);
  if (info->State.Subjects != nullptr)
    for (int i = 0; i < info->State.Subjects->Count; ++i) {
      natsMsg* message = nullptr;
      if (js_GetLastMsg(&message, connection_->js, stream_.c_str(),
                        info->State.Subjects->List[i].Subject, nullptr, &error) == NATS_OK)
        latest.push_back(receivedOf(message, false));
    }
  jsStreamInfo_Destroy(info);
  return latest;
}

std::vector<ReceivedSummary> SummarySubscriber::fetch(int batch, std::chrono::milliseconds wait) {
  std::vector<ReceivedSummary> received;
  natsMsgList list{nullptr, 0};
  jsErrCode error = static_cast<jsErrCode>(0);
  const natsStatus status =
      natsSubscription_Fetch(&list, subscription_->subscription, batch, wait.count(), &error);
  if (status != NATS_OK)
    return received; // a timeout, or NATS away: it reconnects by itself
  for (int i = 0; i < list.Count; ++i) {
    received.push_back(receivedOf(list.Msgs[i], true));
    list.Msgs[i] = nullptr; // now owned by the ack
  }
  natsMsgList_Destroy(&list);
  return received;
}

} // namespace shapetrace::fleet
