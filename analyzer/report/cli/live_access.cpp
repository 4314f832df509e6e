// The live page's access rules: addresses, Host names and the token.
#include "report/cli/live_access.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace shapetrace::analyzer::report {
namespace {

std::string withoutBrackets(const std::string& host) {
  return host.size() >= 2 && host.front() == '[' && host.back() == ']'
             ? host.substr(1, host.size() - 2)
             : host;
}

// A loopback address written as a Host header writes it: 127.0.0.0/8, [::1], or an IPv4-mapped
// loopback address ([::ffff:127.0.0.1]).
bool isLoopbackLiteral(const std::string& host) {
  unsigned char v4[4], v6[16];
  if (inet_pton(AF_INET, host.c_str(), v4) == 1) return v4[0] == 127;
  if (host.front() != '[' || inet_pton(AF_INET6, withoutBrackets(host).c_str(), v6) != 1)
    return false;
  static const unsigned char kLoopback[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  static const unsigned char kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return std::memcmp(v6, kLoopback, 16) == 0 ||
         (std::memcmp(v6, kMapped, 12) == 0 && v6[12] == 127);
}

// Compares without stopping at the first difference, so that the time taken says nothing of how
// much of a guess was right.
bool sameSecret(const std::string& a, const std::string& b) {
  unsigned char differ = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i)
    differ |= static_cast<unsigned char>(a[i] ^ b[i]);
  return differ == 0;
}

std::string freshToken() {
  unsigned char bytes[32];
  size_t got = 0;
  while (got < sizeof bytes) {
    const ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0 && errno != EINTR) throw std::runtime_error("cannot draw a random token");
    if (n > 0) got += static_cast<size_t>(n);
  }
  static const char* digits = "0123456789abcdef";
  std::string token;
  for (unsigned char b : bytes) {
    token += digits[b >> 4];
    token += digits[b & 15];
  }
  return token;
}

// The value of `name` in a Cookie header ("a=1; shapetrace_token=...").
std::string cookieValue(const std::string& header, const std::string& name) {
  size_t at = 0;
  while (at < header.size()) {
    const size_t end = std::min(header.find(';', at), header.size());
    std::string pair = header.substr(at, end - at);
    pair.erase(0, pair.find_first_not_of(' '));
    if (pair.starts_with(name + "=")) return pair.substr(name.size() + 1);
    at = end + 1;
  }
  return {};
}

} // namespace

std::pair<std::string, int> parseHostPort(const std::string& text) {
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0)
    throw std::invalid_argument("--http wants HOST:PORT (e.g. 127.0.0.1:8470), not '" + text + "'");
  const std::string host = withoutBrackets(text.substr(0, colon)); // [::1]:8470
  const std::string port_text = text.substr(colon + 1);
  size_t used = 0;
  int port = -1;
  try {
    port = std::stoi(port_text, &used);
  } catch (const std::exception&) {
  }
  if (used != port_text.size() || port < 0 || port > 65535)
    throw std::invalid_argument("--http: '" + port_text + "' is not a port number (0-65535)");
  return {host, port};
}

bool isWildcard(const std::string& host) { return host == "0.0.0.0" || host == "::" || host.empty(); }

bool isLoopback(const std::string& host) {
  return host == "127.0.0.1" || host == "localhost" || host == "::1" || host.starts_with("127.");
}

bool hostAllowed(const std::string& header, const std::string& bound_host, int port) {
  std::string name = header;
  // Strip ":PORT" (after a bracketed IPv6 literal, or the only colon).
  if (const size_t colon = name.rfind(':');
      colon != std::string::npos && (name.front() == '[' ? name[colon - 1] == ']'
                                                         : name.find(':') == colon)) {
    if (name.substr(colon + 1) != std::to_string(port))
      return false;
    name.resize(colon);
  }
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (name.empty())
    return false;
  // Another address would let a page of any site whose name resolves to it read ours (DNS
  // rebinding): only loopback, and the names it was told to serve on.
  if (name == "localhost" || isLoopbackLiteral(name) || name == bound_host ||
      "[" + bound_host + "]" == name)
    return true;
  char machine[256] = {};
  return ::gethostname(machine, sizeof machine - 1) == 0 && name == machine;
}

AccessToken AccessToken::fromFile(const std::string& path) {
  // Created private, or left alone if it appeared meanwhile (O_EXCL).
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0600);
  if (fd >= 0) {
    const std::string token = freshToken() + "\n";
    const bool written = ::write(fd, token.data(), token.size()) == ssize_t(token.size());
    ::close(fd);
    if (!written) throw std::runtime_error("cannot write the token file " + path);
  } else if (errno != EEXIST) {
    throw std::runtime_error("cannot create the token file " + path + ": " + std::strerror(errno));
  }
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0)
    throw std::runtime_error("cannot read the token file " + path + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode) || st.st_uid != ::getuid())
    throw std::runtime_error("the token file " + path + " is not a regular file owned by you");
  if ((st.st_mode & 077) != 0)
    throw std::runtime_error("the token file " + path +
                             " is accessible to other users; run 'chmod 600 " + path + "'");
  std::ifstream in(path);
  std::string token;
  std::getline(in, token);
  while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back())))
    token.pop_back();
  if (token.size() < 16)
    throw std::runtime_error("the token file " + path +
                             " must hold a token of at least 16 characters on its first line");
  return AccessToken(std::move(token));
}

bool AccessToken::admits(const httplib::Request& request) const {
  const std::string authorization = request.get_header_value("Authorization");
  if (authorization.starts_with("Bearer ") && sameSecret(authorization.substr(7), value_))
    return true;
  if (sameSecret(cookieValue(request.get_header_value("Cookie"), kCookie), value_)) return true;
  return request.has_param("token") && sameSecret(request.get_param_value("token"), value_);
}

std::string AccessToken::cookie() const {
  return std::string(kCookie) + "=" + value_ + "; HttpOnly; SameSite=Strict; Path=/";
}

httplib::Server::HandlerResponse RequestGuard::check(const httplib::Request& req,
                                                    httplib::Response& res) const {
  // One Host header: with two, which one decides depends on who reads the request.
  if (req.get_header_value_count("Host") != 1 ||
      !hostAllowed(req.get_header_value("Host"), bound_host, port)) {
    res.status = 421; // Misdirected Request
    res.set_content("this server answers to localhost and its addresses only\n", "text/plain");
    return httplib::Server::HandlerResponse::Handled;
  }
  if (token && !token->admits(req)) {
    res.status = 401;
    res.set_header("WWW-Authenticate", "Bearer");
    res.set_content("this page needs its token: open the URL `shapetrace " + command +
                        "` printed\n",
                    "text/plain");
    return httplib::Server::HandlerResponse::Handled;
  }
  // The page's own requests then carry the token without it in their URL.
  if (token && req.has_param("token")) res.set_header("Set-Cookie", token->cookie());
  return httplib::Server::HandlerResponse::Unhandled;
}

} // namespace shapetrace::analyzer::report
