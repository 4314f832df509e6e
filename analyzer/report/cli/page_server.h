// The HTTP server of the live page, shared by `shapetrace live` and `shapetrace fleet --http`:
// binds HOST:PORT (loopback unless told otherwise; any other address needs a token file),
// optionally with TLS, guards every request (live_access.h: the Host check against DNS rebinding,
// the access token), and serves the routes its command registers on a thread of its own.
//
// Hardening (docs/security.md, docs/report.md): each connection has a thread of its own (up to
// kMaxConnections), reads time out after two seconds, and request bodies are refused past 64 KiB,
// so that slow, idle or oversized clients cannot keep the page from answering anyone else. Only
// the routes the command registers are served.
#pragma once

#include <CLI/CLI.hpp>
#include <httplib.h>

#include <memory>
#include <optional>
#include <string>
#include <thread>

namespace shapetrace::analyzer::report {

class AccessToken;

// The largest request body the page takes: no documented request has one.
inline constexpr size_t kMaxPageRequestBytes = 64 * 1024;

struct PageServerOptions {
  std::string command;    // "live", "fleet": named in messages
  std::string http;       // HOST:PORT (port 0: any free port)
  std::string token_file; // required unless HOST is loopback
  std::string tls_cert, tls_key;
};

// --http (default: options.http as given), --tls-cert, --tls-key, --token-file.
void addPageServerFlags(CLI::App& command, PageServerOptions& options);

class PageServer {
public:
  // Binds. Throws std::invalid_argument (a malformed address, --tls-cert without --tls-key) or
  // std::runtime_error (an open address without a token file, a port in use, a bad certificate).
  explicit PageServer(const PageServerOptions& options);
  // Stops serving (stop()).
  ~PageServer();
  PageServer(const PageServer&) = delete;
  PageServer& operator=(const PageServer&) = delete;

  // Where the command registers its routes, before start().
  httplib::Server& routes() { return *server_; }
  // Serves on a thread of its own and prints "shapetrace CMD: serving URL?token=... (Ctrl-C to
  // stop)" on stdout: the only place the token is shown.
  void start();
  // Stops listening and waits for the serving thread. Idempotent.
  void stop();
  // "http://127.0.0.1:8470/" (without the token).
  const std::string& url() const { return url_; }

private:
  class ConnectionThreads;
  PageServerOptions options_;
  // Leaked on purpose when a client still holds a connection at exit (ConnectionThreads).
  ConnectionThreads* connections_ = nullptr;
  httplib::Server* server_ = nullptr;
  std::unique_ptr<AccessToken> token_;
  std::string url_;
  std::thread thread_;
};

} // namespace shapetrace::analyzer::report
