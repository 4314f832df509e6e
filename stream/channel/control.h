// The local channel's control socket (see channel.h): a unix-domain SOCK_SEQPACKET socket at the
// path of an ipc:// endpoint. The process connects and sends a Hello with the channel's memfd
// (SCM_RIGHTS); the collector maps it and answers with a Reply. After that the socket only tells
// each side that the other is still there (its hang-up is a process's end, or the collector's).
//
// Every function here keeps errno as it found it (the runtime calls them inside the program) and
// creates descriptors with CLOEXEC.
#pragma once

#include "channel/channel.h"

#include <string>

namespace shapetrace::channel {

// The socket path of "ipc://PATH" (or of a bare absolute path); empty when `endpoint` is neither.
std::string controlPath(const std::string& endpoint);

// --- the process's side -----------------------------------------------------------------------
enum class ConnectResult { Connected, NoCollector, Busy, Failed };
// Connects to the control socket at `path`, without waiting. NoCollector: no socket there, or one
// nobody listens on (a collector killed with -9 leaves its socket file). Busy: a collector listens
// but takes no more connections now (its queue of pending ones is full). The descriptor is moved
// to `lowest_fd` or above when it can be (out of the range programs usually use and close).
ConnectResult connectControl(const std::string& path, int lowest_fd, int& fd, std::string& error);
// Sends a Hello with `memfd` attached (none when negative) and `rings_fd` after it (none when
// negative); false with `error` on failure.
bool sendHello(int fd, const Hello& hello, int memfd, int rings_fd, std::string& error);
// A new channel's memory: kHeaderBytes + data_bytes of a memfd sealed against resizing (so that
// the collector's reads of it can never fault), mapped shared, its header initialised.
struct Memory {
  void* base = nullptr;
  size_t bytes = 0;
};
// Makes a new channel's memory and its memfd (`memfd`, CLOEXEC), which the caller sends with the
// Hello and then closes. False with `error` (nothing made) on failure.
bool createMemory(uint64_t data_bytes, Memory& memory, int& memfd, std::string& error);
// Waits up to `timeout_ms` (0: only looks) for the collector's Reply on `fd`; false with `error`
// when none came, the collector hung up, or the answer is malformed.
bool receiveReply(int fd, Reply& reply, int timeout_ms, std::string& error);
// Makes the memory and hands it to the collector over the connected control socket `fd`: sends
// the Hello with the memfd (and the rings' memfd `rings_fd` of `rings_bytes`, when not negative),
// waits up to `timeout_ms` for the Reply, and closes the memfd (the mapping keeps the memory).
// False with `error` (nothing left mapped) when any step failed or the collector refused.
bool createAndHandOver(int fd, uint64_t data_bytes, int rings_fd, uint64_t rings_bytes,
                       int timeout_ms, Memory& memory, std::string& error);

// --- the collector's side ---------------------------------------------------------------------
// Binds and listens at `path` (non-blocking). A socket file nobody listens on is replaced; one a
// live collector listens on is an error. Throws std::runtime_error naming the path.
int listenControl(const std::string& path);
// Accepts one connection (non-blocking, CLOEXEC); -1 when none is pending. `uid` and `pid` are the
// peer's credentials as the kernel gives them (SO_PEERCRED).
int acceptControl(int listen_fd, uint32_t& uid, uint32_t& pid);
enum class HelloResult { Received, NotYet, Broken };
// Reads the Hello and its descriptors: the channel's memfd and, when the Hello announces rings,
// the rings' memfd (-1 otherwise; extra descriptors are closed). Broken: the peer hung up or sent
// something else (`error` says what).
HelloResult receiveHello(int fd, Hello& hello, int& memfd, int& rings_fd, std::string& error);
void sendReply(int fd, const Reply& reply);
// Whether the peer hung up (poll reports POLLHUP or POLLERR, or a read finds the end).
bool peerHungUp(int fd);

} // namespace shapetrace::channel
