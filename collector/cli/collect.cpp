// `shapetrace collect`: the collector daemon. Receives from every runtime that connects, records
// to --out, fans out to --publish, until SIGINT or SIGTERM.
#include "cli/command.h"
#include "cli/signals.h"
#include "cli/summary.h"
#include "collector.h"
#include "retention_options.h"
#include "wire/endpoint.h"

#include <cstdio>

namespace shapetrace::cli {
namespace {

struct CollectOptions {
  std::vector<std::string> listen;
  std::string out;
  std::string publish;
  size_t publish_queue_mb = fanout::kDefaultMaxQueuedBytes >> 20;
  std::string curve_secret_key;
  std::string curve_clients;
  std::string forward;
  std::string forward_server_key;
  std::string forward_secret_key;
  uint64_t segment_mb = 256;
  unsigned fsync_ms = 1000;
  bool readable = false;
  RetentionFlags retention;
};

int runCollect(const CollectOptions& o) {
  collector::CollectorOptions options;
  options.listen = o.listen;
  if (options.listen.empty()) {
    collector::preparePrivateDirectory(wire::defaultEndpointDirectory());
    options.listen.push_back(wire::defaultEndpoint());
  }
  for (const std::string& endpoint : options.listen)
    collector::prepareSocketDirectory(endpoint);
  if (o.out.empty() && o.publish.empty() && o.forward.empty())
    throw std::runtime_error("nothing to do: give --out DIR to record, --publish ENDPOINT to "
                             "fan out, --forward ENDPOINT to send on to another collector, or "
                             "several of them");
  options.forward = o.forward;
  options.forward_server_key = o.forward_server_key;
  options.forward_secret_key_file = o.forward_secret_key;
  options.out_dir = o.out;
  options.publish = o.publish;
  options.publish_max_queued_bytes = o.publish_queue_mb << 20;
  options.curve_secret_key_file = o.curve_secret_key;
  options.curve_clients = o.curve_clients;
  if (!o.curve_clients.empty() && o.curve_secret_key.empty())
    throw std::invalid_argument("--curve-clients needs --curve-secret-key (CURVE)");
  options.recording.segment_bytes = o.segment_mb << 20;
  options.recording.fsync_interval = std::chrono::milliseconds(o.fsync_ms);
  options.recording.readable_by_others = o.readable;
  if ((o.retention.gib > 0 || o.retention.hours > 0) && o.out.empty())
    throw std::invalid_argument(
        "--retain-gib and --retain-hours limit a recording: give --out DIR");
  applyRetention(o.retention, options.recording);

  zmq::context_t context(1);
  collector::Collector collector(options, context);
  installStopHandlers();
  for (const std::string& endpoint : collector.boundEndpoints())
    std::fprintf(stderr, "shapetrace collect: listening on %s\n", endpoint.c_str());
  if (!collector.publishEndpoint().empty())
    std::fprintf(stderr, "shapetrace collect: publishing on %s\n",
                 collector.publishEndpoint().c_str());
  if (!collector.curvePublicKey().empty())
    std::fprintf(stderr, "shapetrace collect: CURVE on; subscribers need "
                         "SHAPETRACE_CURVE_SERVER_KEY=%s, forwarding collectors "
                         "--forward-server-key with the same key\n",
                 collector.curvePublicKey().c_str());
  if (!o.out.empty())
    std::fprintf(stderr, "shapetrace collect: recording to %s\n", o.out.c_str());
  if (!o.forward.empty())
    std::fprintf(stderr, "shapetrace collect: forwarding to %s%s\n", o.forward.c_str(),
                 o.forward_server_key.empty() ? "" : " (CURVE)");

  while (stop_signal.load(std::memory_order_relaxed) == 0)
    collector.poll(std::chrono::milliseconds(100));
  const bool ok = collector.finish();
  printCollectorSummary(stderr, collector.stats(), o.out);
  return ok ? 0 : 1;
}

Runner setupCollect(CLI::App& command) {
  auto o = std::make_shared<CollectOptions>();
  command.add_option("--listen,-l", o->listen,
                     "endpoint to receive on (repeatable): ipc://PATH for the programs of this "
                     "host (default " +
                         wire::defaultEndpoint() +
                         "; a missing folder is created 0700), tcp://HOST:PORT for collectors "
                         "forwarding over ZeroMQ (non-loopback needs --curve-secret-key)");
  command.add_option("--out,-o", o->out, "record into this directory (new or empty)");
  command.add_option("--publish,-p", o->publish,
                     "ZeroMQ PUB endpoint for live subscribers (e.g. the analyzer)");
  command.add_option("--publish-queue-mb", o->publish_queue_mb,
                     "MiB of items the live subscribers' queues may hold, together; past it items "
                     "are not published (counted here, and as missed by the subscribers)")
      ->capture_default_str()
      ->check(CLI::Range(size_t{1}, size_t{1} << 20));
  command.add_option("--curve-secret-key", o->curve_secret_key,
                     "file with the server's Z85 CURVE secret key (see 'shapetrace keygen'); "
                     "encrypts and allows non-loopback tcp")
      ->check(CLI::ExistingFile);
  command.add_option("--curve-clients", o->curve_clients,
                     "the forwarding collectors' public keys that tcp:// accepts (a file, one Z85 "
                     "key a line, or a directory of 'keygen' FILE.pub files); others are refused "
                     "and counted. Required off loopback")
      ->check(CLI::ExistingPath);
  command.add_option("--forward", o->forward,
                     "send everything received on to another collector (tcp://HOST:PORT over "
                     "ZeroMQ; non-loopback needs --forward-server-key)");
  command.add_option("--forward-server-key", o->forward_server_key,
                     "the other collector's Z85 CURVE public key: encrypts what is forwarded");
  command.add_option("--forward-secret-key", o->forward_secret_key,
                     "file with this collector's own Z85 CURVE secret key as the other's client "
                     "(default: a fresh key pair each run)")
      ->check(CLI::ExistingFile);
  command.add_option("--segment-size", o->segment_mb, "segment file size in MiB")
      ->default_val(256)
      ->check(CLI::Range(1, 1 << 20));
  command.add_option("--fsync-interval", o->fsync_ms,
                     "fdatasync the open segment this often, in ms (0: only when a segment closes)")
      ->default_val(1000);
  command.add_flag("--readable", o->readable,
                   "let other local users read the recording (directory 0755, files 0644; "
                   "default: 0700 and 0600)");
  addRetentionOptions(command, o->retention);
  return usageErrorsExit2("collect", [o] { return runCollect(*o); });
}

const Registration collect{"collect", "Receive traces from running programs: record and fan out",
                           setupCollect};

} // namespace
} // namespace shapetrace::cli
