// Who may read the live page (docs/security.md): the address it is served on, the names it answers
// to, and the access token that any address other than loopback requires.
//
// The page carries the traced service's function names, executable, arguments, timings and
// annotations, so it is guarded like the collector: on a loopback address any local user's browser
// may open it (as the collector's default socket, it is the user's machine); anywhere else
// `shapetrace live` refuses to start without a token, and answers 401 to every request that does
// not carry it. A request whose Host header names another site is refused (421) wherever it is
// served, so that a page of another site cannot read ours through DNS rebinding.
#pragma once

#include <httplib.h>

#include <string>
#include <utility>

namespace shapetrace::analyzer::report {

// "HOST:PORT", "[v6]:PORT" -> (host without brackets, port). Throws std::invalid_argument.
std::pair<std::string, int> parseHostPort(const std::string& text);
bool isWildcard(const std::string& host); // 0.0.0.0, ::, empty: every address
bool isLoopback(const std::string& host);
// Whether a request's Host header names this server (bound to `bound_host`:`port`): localhost, a
// loopback address, the bound name or address (--http HOST), or this machine's name. Any other
// name or address is refused, IP literals included: a rebound name can point at any of them.
bool hostAllowed(const std::string& header, const std::string& bound_host, int port);

class AccessToken {
public:
  static constexpr const char* kCookie = "shapetrace_token";

  // The token in `path`'s first line. A file that does not exist is created (mode 0600) with a
  // fresh random token (256 bits from getrandom, hex). Throws std::runtime_error, naming the file,
  // when it is not a regular file owned by the user, is accessible to other users, or holds a
  // token shorter than 16 characters.
  static AccessToken fromFile(const std::string& path);

  const std::string& value() const { return value_; }
  // Whether the request carries the token: "Authorization: Bearer TOKEN", the cookie
  // shapetrace_token=TOKEN (set by the first answer to a request with ?token=), or ?token=TOKEN.
  bool admits(const httplib::Request& request) const;
  // The Set-Cookie value that lets the page's own requests carry the token.
  std::string cookie() const;

private:
  explicit AccessToken(std::string value) : value_(std::move(value)) {}
  std::string value_;
};

// What every request to the page passes before its route answers (PageServer's pre-routing
// handler): one Host header that hostAllowed() takes (else 421), then the token when there is one
// (else 401). A request with ?token= that passes is answered with the token's cookie.
struct RequestGuard {
  std::string bound_host;
  int port = 0;
  const AccessToken* token = nullptr; // none: no token required
  std::string command;                // "live", "fleet": named in the 401's text

  httplib::Server::HandlerResponse check(const httplib::Request& request,
                                         httplib::Response& response) const;
};

} // namespace shapetrace::analyzer::report
