// libFuzzer target for the live page's handling of a request (what `shapetrace live` and
// `shapetrace fleet --http` serve): cpp-httplib's request parser (compiled into this target, so
// that it carries the coverage instrumentation), then ours: the guard (report/cli/live_access.h:
// one Host header naming this server, the token in a header, cookie or parameter), the URL query
// of /api/instance (live_instance.h parseInstanceQuery) and the escaping of /metrics' label values
// (cli/prometheus_text.h), which carry names from the traced program.
//
// An input is the bytes a client sends on one connection. The routes here answer as the live
// page's do from the query alone: /api/instance with the query it parsed (400 when malformed),
// /metrics with a sample per parameter, its value as a label value.
//
// Oracles besides "no crash, no sanitizer report, no memory past -rss_limit_mb": a request without
// exactly one Host header is refused; a route answers 200 only to a request that carries the
// token; /metrics' text is valid UTF-8 and each label value is one quoted string without a control
// character.
//
// Build and run (bounded, as CI does):
//   cmake --build build --target http_fuzzer
//   build/tests/report/http_fuzzer -max_total_time=60 -rss_limit_mb=2048 \
//     build/tests/report/http_fuzzer_corpus
#include "cli/prometheus_text.h"
#include "report/cli/live_access.h"
#include "report/cli/page_server.h"
#include "report/live_instance.h"

#include <cstdio>
#include <cstdlib>
#include <source_location>
#include <filesystem>
#include <fstream>
#include <string_view>
#include <unistd.h>

using namespace shapetrace;
using namespace shapetrace::analyzer::report;

namespace {

constexpr std::string_view kToken = "0123456789abcdef0123456789abcdef";

// An oracle that failed names its line (then aborts: libFuzzer keeps the input).
void check(bool condition, std::source_location where = std::source_location::current()) {
  if (condition)
    return;
  std::fprintf(stderr, "check failed: %s:%u\n", where.file_name(), where.line());
  std::abort();
}

// One connection's bytes in, the answer out (discarded).
class FuzzStream final : public httplib::Stream {
public:
  explicit FuzzStream(std::string_view input) : input_(input) {}
  bool is_readable() const override { return true; }
  bool is_writable() const override { return true; }
  ssize_t read(char* ptr, size_t size) override {
    const size_t n = std::min(size, input_.size());
    std::copy_n(input_.data(), n, ptr);
    input_.remove_prefix(n);
    return static_cast<ssize_t>(n);
  }
  ssize_t write(const char*, size_t size) override { return static_cast<ssize_t>(size); }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    ip = "127.0.0.1";
    port = 40000;
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    ip = "127.0.0.1";
    port = 8470;
  }
  socket_t socket() const override { return INVALID_SOCKET; }

private:
  std::string_view input_;
};

class FuzzServer final : public httplib::Server {
public:
  void serve(std::string_view input) {
    FuzzStream stream(input);
    bool closed = false;
    process_request(stream, true, closed, nullptr);
  }
};

AccessToken tokenFromFile() {
  const std::string path = std::filesystem::temp_directory_path() /
                           ("http_fuzzer.token." + std::to_string(::getpid()));
  std::filesystem::remove(path);
  std::ofstream(path) << kToken << "\n";
  std::filesystem::permissions(path, std::filesystem::perms::owner_read |
                                         std::filesystem::perms::owner_write);
  AccessToken token = AccessToken::fromFile(path);
  std::filesystem::remove(path);
  return token;
}

// Valid UTF-8 (cli's escaping replaces what is not), no control character but the newlines that
// end lines, and label values in quotes with only \\, \" and \n escapes.
void checkExposition(std::string_view text) {
  bool in_value = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    check(c >= 0x20 || c == '\n');
    check(c != 0x7F);
    if (c >= 0x80) { // a sequence: lead byte, then continuation bytes
      const size_t length = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
      check(c >= 0xC2 && c <= 0xF4 && i + length <= text.size());
      for (size_t k = 1; k < length; ++k)
        check((static_cast<unsigned char>(text[i + k]) & 0xC0) == 0x80);
      i += length - 1;
      continue;
    }
    if (in_value && c == '\\') {
      check(i + 1 < text.size() && std::string_view("\\\"n").find(text[i + 1]) != std::string_view::npos);
      ++i;
    } else if (c == '"') {
      in_value = !in_value;
    } else if (c == '\n') {
      check(!in_value);
    }
  }
  check(!in_value);
}

FuzzServer& server() {
  static AccessToken token = tokenFromFile();
  static FuzzServer* s = [] {
    auto* fuzz = new FuzzServer;
    fuzz->set_payload_max_length(kMaxPageRequestBytes);
    fuzz->set_pre_routing_handler(
        [guard = RequestGuard{"127.0.0.1", 8470, &token, "live"}](
            const httplib::Request& req, httplib::Response& res) { return guard.check(req, res); });
    fuzz->Get("/api/instance", [](const httplib::Request& req, httplib::Response& res) {
      try {
        const InstanceQuery q = parseInstanceQuery(req.params);
        res.set_content(std::to_string(q.process) + ":" + std::to_string(q.thread), "text/plain");
      } catch (const std::invalid_argument& e) {
        res.status = 400;
        res.set_content(std::string(e.what()) + "\n", "text/plain");
      }
    });
    fuzz->Get("/metrics", [](const httplib::Request& req, httplib::Response& res) {
      cli::PrometheusText text;
      text.family("shapetrace_calls_total", "counter", req.path);
      for (const auto& [name, value] : req.params)
        text.sample("", {{"function", value}, {"parameter", name}}, 1);
      checkExposition(text.text());
      res.set_content(text.text(), std::string(cli::PrometheusText::kContentType));
    });
    fuzz->set_logger([](const httplib::Request& req, const httplib::Response& res) {
      // 421 from the guard, or 400 when cpp-httplib refused the request before it.
      if (req.get_header_value_count("Host") != 1)
        check(res.status >= 400);
      if (res.status == 200 && (req.path == "/api/instance" || req.path == "/metrics")) {
        const bool carries = req.get_header_value("Authorization").find(kToken) != std::string::npos ||
                             req.get_header_value("Cookie").find(kToken) != std::string::npos ||
                             req.get_param_value("token") == kToken;
        check(carries);
      }
    });
    return fuzz;
  }();
  return *s;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  server().serve(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
