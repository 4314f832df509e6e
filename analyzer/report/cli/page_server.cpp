// PageServer (page_server.h): cpp-httplib with a thread per connection, timeouts, the Host and
// token checks of live_access.h, and SO_REUSEADDR without SO_REUSEPORT.
#include "report/cli/page_server.h"

#include "report/cli/live_access.h"

#include <condition_variable>
#include <cstdio>
#include <deque>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <sys/socket.h>

namespace shapetrace::analyzer::report {
namespace {

constexpr size_t kMaxConnections = 128;
constexpr time_t kReadTimeoutSeconds = 2;

} // namespace

// A thread per connection, up to kMaxConnections at once (more wait in order): cpp-httplib's
// default pool has a few threads, which as many clients trickling a header (or idle keep-alive
// connections) occupy until they go.
class PageServer::ConnectionThreads final : public httplib::TaskQueue {
public:
  void enqueue(std::function<void()> task) override {
    std::unique_lock lock(mutex_);
    if (running_ >= kMaxConnections) {
      waiting_.push_back(std::move(task));
      return;
    }
    start(std::move(task));
  }
  void shutdown() override {
    // Every connection ends within the read timeout once the listening socket is closed, unless a
    // client keeps trickling: the server is then left to the process exit.
    std::unique_lock lock(mutex_);
    idle_.wait_for(lock, std::chrono::seconds(kReadTimeoutSeconds + 1),
                   [&] { return running_ == 0; });
    abandoned_ = running_ > 0;
  }
  bool abandoned() const { return abandoned_; }

private:
  void start(std::function<void()> task) { // mutex_ held
    ++running_;
    std::thread([this, task = std::move(task)]() mutable {
      for (;;) {
        task();
        std::unique_lock lock(mutex_);
        if (waiting_.empty()) {
          --running_;
          idle_.notify_all();
          return;
        }
        task = std::move(waiting_.front());
        waiting_.pop_front();
      }
    }).detach();
  }

  std::mutex mutex_;
  std::condition_variable idle_;
  std::deque<std::function<void()>> waiting_;
  size_t running_ = 0;
  bool abandoned_ = false;
};

namespace {

// What cpp-httplib owns (and deletes when listening ends): a handle on the ConnectionThreads,
// which outlive it while a connection is still being served.
class ConnectionQueue final : public httplib::TaskQueue {
public:
  explicit ConnectionQueue(httplib::TaskQueue& threads) : threads_(threads) {}
  void enqueue(std::function<void()> task) override { threads_.enqueue(std::move(task)); }
  void shutdown() override { threads_.shutdown(); }

private:
  httplib::TaskQueue& threads_;
};

} // namespace

void addPageServerFlags(CLI::App& command, PageServerOptions& options) {
  command.add_option("--http", options.http,
                     "Serve the live page on HOST:PORT (port 0: any free port); any address but "
                     "loopback needs --token-file")
      ->capture_default_str();
  command.add_option("--tls-cert", options.tls_cert,
                     "Serve HTTPS with this PEM certificate (chain), with --tls-key")
      ->check(CLI::ExistingFile);
  command.add_option("--tls-key", options.tls_key, "The PEM private key of --tls-cert")
      ->check(CLI::ExistingFile);
  command.add_option("--token-file", options.token_file,
                     "Require the access token in FILE (mode 0600; created with a random token "
                     "when missing) from every request: ?token=, a cookie, or Authorization: "
                     "Bearer");
}

PageServer::PageServer(const PageServerOptions& options) : options_(options) {
  if (options.tls_cert.empty() != options.tls_key.empty())
    throw std::invalid_argument("--tls-cert and --tls-key go together");
  // A malformed address and an open one without a token are errors the user must see before
  // anything is bound.
  const auto [host, port] = parseHostPort(options.http);
  const bool open = isWildcard(host) || !isLoopback(host);
  if (open && options.token_file.empty())
    throw std::runtime_error(
        "refusing to serve the live page on " + options.http +
        ": it is reachable from other hosts and would be unauthenticated. Give --token-file "
        "FILE (created with a random token when missing), or serve on 127.0.0.1 and reach it "
        "through an ssh tunnel (docs/security.md)");
  if (!options.token_file.empty())
    token_ = std::make_unique<AccessToken>(AccessToken::fromFile(options.token_file));

  connections_ = new ConnectionThreads;
  const bool tls = !options.tls_cert.empty();
  server_ = tls ? new httplib::SSLServer(options.tls_cert.c_str(), options.tls_key.c_str())
                : new httplib::Server;
  if (!server_->is_valid())
    throw std::runtime_error("cannot use the TLS certificate " + options.tls_cert +
                             " with the key " + options.tls_key + " (PEM files expected)");
  server_->new_task_queue = [threads = connections_] { return new ConnectionQueue(*threads); };
  server_->set_read_timeout(kReadTimeoutSeconds, 0);
  server_->set_write_timeout(kReadTimeoutSeconds, 0);
  server_->set_keep_alive_timeout(kReadTimeoutSeconds);
  server_->set_keep_alive_max_count(100);
  server_->set_payload_max_length(kMaxPageRequestBytes);
  // cpp-httplib sets SO_REUSEPORT by default, which lets a second server bind a port in use and
  // share its connections at random; SO_REUSEADDR alone makes "port in use" an error.
  server_->set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  const int bound =
      port == 0 ? server_->bind_to_any_port(host) : (server_->bind_to_port(host, port) ? port : -1);
  if (bound < 0)
    throw std::runtime_error("cannot listen on " + options.http +
                             ": the port is in use or the address is not local");
  const char* command = options.command.c_str();
  if (isWildcard(host))
    std::fprintf(stderr,
                 "shapetrace %s: warning: serving on every address (%s), reachable from other "
                 "hosts (with the token)\n",
                 command, host.c_str());
  else if (open)
    std::fprintf(stderr,
                 "shapetrace %s: warning: serving on %s, reachable from other hosts (with the "
                 "token)\n",
                 command, host.c_str());
  // A wildcard address is not one to open: this machine answers on localhost.
  const std::string shown = isWildcard(host) ? "localhost" : host;
  url_ = std::string(tls ? "https://" : "http://") +
         (shown.find(':') != std::string::npos ? "[" + shown + "]" : shown) + ":" +
         std::to_string(bound) + "/";
  server_->set_pre_routing_handler(
      [guard = RequestGuard{host, bound, token_.get(), options.command}](
          const httplib::Request& req, httplib::Response& res) { return guard.check(req, res); });
  // Browsers ask for an icon; an empty answer keeps their consoles free of 404s.
  server_->Get("/favicon.ico",
               [](const httplib::Request&, httplib::Response& res) { res.status = 204; });
}

PageServer::~PageServer() {
  stop();
  if (!connections_->abandoned()) {
    delete server_;
    delete connections_;
  }
}

void PageServer::start() {
  thread_ = std::thread([server = server_] { server->listen_after_bind(); });
  std::printf("shapetrace %s: serving %s%s (Ctrl-C to stop)\n", options_.command.c_str(),
              url_.c_str(), token_ ? ("?token=" + token_->value()).c_str() : "");
  std::fflush(stdout);
}

void PageServer::stop() {
  if (!thread_.joinable())
    return;
  server_->stop();
  thread_.join();
}

} // namespace shapetrace::analyzer::report
