// A real nats-server for a test: JetStream on, storing in a directory of the test's, listening on
// 127.0.0.1 on a port that was free; stopped (or killed) and started again on the same port and
// directory, as an operator restarting it would.
#pragma once

#include <arpa/inet.h>
#include <chrono>
#include <filesystem>
#include <netinet/in.h>
#include <signal.h>
#include <stdexcept>
#include <string>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace shapetrace::fleet::testing {

inline int freePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof address;
  ::bind(fd, reinterpret_cast<sockaddr*>(&address), size);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size);
  ::close(fd);
  return ntohs(address.sin_port);
}

inline bool accepts(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
  ::close(fd);
  return ok;
}

class NatsServer {
public:
  // `config`: a configuration file (authorization, tls) passed with -c; the address, port and
  // store are the test's whatever it says.
  explicit NatsServer(std::filesystem::path store, std::string config = "")
      : store_(std::move(store)), config_(std::move(config)), port_(freePort()) {
    start();
  }
  ~NatsServer() { stop(SIGTERM); }

  std::string url(const std::string& scheme = "nats") const {
    return scheme + "://127.0.0.1:" + std::to_string(port_);
  }

  void start() {
    pid_ = ::fork();
    if (pid_ == 0) {
      const std::string port = std::to_string(port_), log = (store_ / "nats.log").string();
      if (config_.empty())
        ::execlp("nats-server", "nats-server", "-a", "127.0.0.1", "-p", port.c_str(), "-js",
                 "-sd", store_.c_str(), "-l", log.c_str(), static_cast<char*>(nullptr));
      else
        ::execlp("nats-server", "nats-server", "-c", config_.c_str(), "-a", "127.0.0.1", "-p",
                 port.c_str(), "-js", "-sd", store_.c_str(), "-l", log.c_str(),
                 static_cast<char*>(nullptr));
      ::_exit(127);
    }
    for (int i = 0; i < 200 && !accepts(port_); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (!accepts(port_))
      throw std::runtime_error("nats-server did not start (is it installed?)");
  }
  // SIGKILL: NATS dies mid-run; SIGTERM: it shuts down.
  void stop(int signal) {
    if (pid_ <= 0)
      return;
    ::kill(pid_, signal);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

private:
  std::filesystem::path store_;
  std::string config_;
  int port_;
  pid_t pid_ = -1;
};

} // namespace shapetrace::fleet::testing
