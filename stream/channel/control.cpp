#include "channel/control.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <stdexcept>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

namespace shapetrace::channel {
namespace {

// Keeps errno as the caller had it, whatever the scope's system calls do to it.
class SavedErrno {
public:
  SavedErrno() : saved_(errno) {}
  ~SavedErrno() { errno = saved_; }

private:
  int saved_;
};

std::string describe(const char* what, const std::string& path) {
  return std::string(what) + " " + path + ": " + std::strerror(errno);
}

bool makeAddress(const std::string& path, sockaddr_un& address) {
  if (path.empty() || path.size() >= sizeof address.sun_path)
    return false;
  std::memset(&address, 0, sizeof address);
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  return true;
}

// Moves `fd` to `lowest_fd` or above (CLOEXEC), closing the original; keeps it where it is when
// that cannot be done (descriptors short).
int moveHigh(int fd, int lowest_fd) {
  if (fd >= lowest_fd)
    return fd;
  const int moved = fcntl(fd, F_DUPFD_CLOEXEC, lowest_fd);
  if (moved < 0)
    return fd;
  ::close(fd);
  return moved;
}

} // namespace

std::string controlPath(const std::string& endpoint) {
  if (endpoint.rfind("ipc://", 0) == 0)
    return endpoint.substr(6);
  if (!endpoint.empty() && endpoint[0] == '/')
    return endpoint;
  return {};
}

ConnectResult connectControl(const std::string& path, int lowest_fd, int& fd,
                             std::string& error) {
  SavedErrno saved;
  sockaddr_un address;
  if (!makeAddress(path, address)) {
    error = "socket path '" + path + "' is empty or too long";
    return ConnectResult::Failed;
  }
  struct stat info;
  if (::stat(path.c_str(), &info) != 0)
    return ConnectResult::NoCollector;
  // Non-blocking for the connect: a unix socket connects at once or, when the listener's queue is
  // full (a collector stopped, or swamped), would wait until it accepts; blocking again after.
  fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    error = describe("cannot create a socket for", path);
    return ConnectResult::Failed;
  }
  fd = moveHigh(fd, lowest_fd);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    const int reason = errno;
    ::close(fd);
    fd = -1;
    if (reason == ECONNREFUSED || reason == ENOENT)
      return ConnectResult::NoCollector;
    if (reason == EAGAIN)
      return ConnectResult::Busy;
    errno = reason;
    error = describe("cannot connect to", path);
    return ConnectResult::Failed;
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return ConnectResult::Connected;
}

bool sendHello(int fd, const Hello& hello, int memfd, int rings_fd, std::string& error) {
  SavedErrno saved;
  iovec data{const_cast<Hello*>(&hello), sizeof hello};
  int fds[2];
  size_t count = 0;
  for (const int attached : {memfd, rings_fd})
    if (attached >= 0)
      fds[count++] = attached;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof fds)] = {};
  msghdr message{};
  message.msg_iov = &data;
  message.msg_iovlen = 1;
  if (count > 0) {
    message.msg_control = control;
    message.msg_controllen = CMSG_SPACE(count * sizeof(int));
    cmsghdr* rights = CMSG_FIRSTHDR(&message);
    rights->cmsg_level = SOL_SOCKET;
    rights->cmsg_type = SCM_RIGHTS;
    rights->cmsg_len = CMSG_LEN(count * sizeof(int));
    std::memcpy(CMSG_DATA(rights), fds, count * sizeof(int));
  }
  if (::sendmsg(fd, &message, MSG_NOSIGNAL) != ssize_t(sizeof hello)) {
    error = std::string("cannot send the channel to the collector: ") + std::strerror(errno);
    return false;
  }
  return true;
}

bool receiveReply(int fd, Reply& reply, int timeout_ms, std::string& error) {
  SavedErrno saved;
  pollfd ready{fd, POLLIN, 0};
  int rc;
  while ((rc = ::poll(&ready, 1, timeout_ms)) < 0 && errno == EINTR) {
  }
  if (rc <= 0) {
    error = "the collector did not answer within " + std::to_string(timeout_ms) + " ms";
    return false;
  }
  const ssize_t got = ::recv(fd, &reply, sizeof reply, MSG_DONTWAIT);
  if (got != ssize_t(sizeof reply) || reply.magic != kMagic) {
    error = got == 0 ? "the collector hung up" : "the collector's answer is malformed";
    return false;
  }
  reply.reason[sizeof reply.reason - 1] = '\0';
  return true;
}

bool createMemory(uint64_t data_bytes, Memory& memory, int& memfd, std::string& error) {
  SavedErrno saved;
  const size_t bytes = kHeaderBytes + data_bytes;
  memfd = ::memfd_create("shapetrace-channel", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  void* base = MAP_FAILED;
  const bool ok =
      memfd >= 0 && ::ftruncate(memfd, off_t(bytes)) == 0 &&
      ::fcntl(memfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) == 0 &&
      (base = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0)) != MAP_FAILED;
  if (!ok) {
    error = std::string("cannot make the channel's memory: ") + std::strerror(errno);
    if (memfd >= 0)
      ::close(memfd);
    memfd = -1;
    return false;
  }
  Writer::initialise(base, data_bytes, uint32_t(::getpid()));
  memory = {base, bytes};
  return true;
}

bool createAndHandOver(int fd, uint64_t data_bytes, int rings_fd, uint64_t rings_bytes,
                       int timeout_ms, Memory& memory, std::string& error) {
  SavedErrno saved;
  int memfd = -1;
  Memory made;
  if (!createMemory(data_bytes, made, memfd, error))
    return false;
  Hello hello;
  hello.pid = uint32_t(::getpid());
  hello.data_bytes = data_bytes;
  hello.rings_bytes = rings_fd >= 0 ? rings_bytes : 0;
  Reply reply;
  bool ok = sendHello(fd, hello, memfd, rings_fd, error) &&
            receiveReply(fd, reply, timeout_ms, error);
  if (ok && !reply.accepted) {
    error = std::string("the collector refused this process: ") + reply.reason;
    ok = false;
  }
  ::close(memfd);
  if (!ok) {
    ::munmap(made.base, made.bytes);
    return false;
  }
  memory = made;
  return true;
}

int listenControl(const std::string& path) {
  sockaddr_un address;
  if (!makeAddress(path, address))
    throw std::runtime_error("socket path '" + path + "' is empty or too long (at most " +
                             std::to_string(sizeof address.sun_path - 1) + " bytes)");
  struct stat info;
  if (::lstat(path.c_str(), &info) == 0) {
    if (!S_ISSOCK(info.st_mode))
      throw std::runtime_error(path + " exists and is not a socket; refusing to replace it");
    int fd = -1;
    std::string ignored;
    const ConnectResult probe = connectControl(path, 0, fd, ignored);
    if (probe == ConnectResult::Connected || probe == ConnectResult::Busy) {
      if (fd >= 0)
        ::close(fd);
      throw std::runtime_error("another collector listens on " + path);
    }
    ::unlink(path.c_str()); // a socket nobody listens on (its collector was killed)
  }
  const int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0)
    throw std::runtime_error(describe("cannot create the socket", path));
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0 ||
      ::listen(fd, 128) != 0) {
    const std::string message = describe("cannot listen on", path);
    ::close(fd);
    throw std::runtime_error(message);
  }
  return fd;
}

int acceptControl(int listen_fd, uint32_t& uid, uint32_t& pid) {
  const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (fd < 0)
    return -1;
  ucred credentials{};
  socklen_t size = sizeof credentials;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &size) != 0) {
    ::close(fd);
    return -1;
  }
  uid = credentials.uid;
  pid = uint32_t(credentials.pid);
  return fd;
}

HelloResult receiveHello(int fd, Hello& hello, int& memfd, int& rings_fd, std::string& error) {
  memfd = -1;
  rings_fd = -1;
  iovec data{&hello, sizeof hello};
  // Room for a few descriptors, so that extra ones arrive and are closed rather than leak.
  alignas(cmsghdr) char control[CMSG_SPACE(4 * sizeof(int))] = {};
  msghdr message{};
  message.msg_iov = &data;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = sizeof control;
  const ssize_t got = ::recvmsg(fd, &message, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
  if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
    return HelloResult::NotYet;
  for (cmsghdr* c = CMSG_FIRSTHDR(&message); c; c = CMSG_NXTHDR(&message, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
      continue;
    const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int received;
      std::memcpy(&received, CMSG_DATA(c) + i * sizeof(int), sizeof received);
      if (memfd < 0)
        memfd = received;
      else if (rings_fd < 0)
        rings_fd = received;
      else
        ::close(received);
    }
  }
  const bool whole = got == ssize_t(sizeof hello) && !(message.msg_flags & (MSG_TRUNC | MSG_CTRUNC));
  if (!whole || hello.magic != kMagic || memfd < 0) {
    error = got == 0 ? "hung up before its hello"
                     : "sent no valid hello with channel memory";
    for (int* received : {&memfd, &rings_fd}) {
      if (*received >= 0)
        ::close(*received);
      *received = -1;
    }
    return HelloResult::Broken;
  }
  if (hello.rings_bytes == 0 && rings_fd >= 0) { // not announced: not taken
    ::close(rings_fd);
    rings_fd = -1;
  }
  return HelloResult::Received;
}

void sendReply(int fd, const Reply& reply) {
  ::send(fd, &reply, sizeof reply, MSG_DONTWAIT | MSG_NOSIGNAL);
}

bool peerHungUp(int fd) {
  pollfd ready{fd, POLLIN, 0};
  if (::poll(&ready, 1, 0) <= 0)
    return false;
  if (ready.revents & (POLLHUP | POLLERR | POLLNVAL))
    return true;
  char byte;
  const ssize_t got = ::recv(fd, &byte, 1, MSG_DONTWAIT | MSG_PEEK);
  return got == 0;
}

} // namespace shapetrace::channel
