// The runtime's descriptors, kept safe from the program (see fd_guard.cpp and docs/runtime.md,
// "Descriptors").
//
// The runtime's one descriptor towards a collector is the local channel's control socket
// (channel_sink.cpp); losing it costs nothing, but the program must see what it would see without
// the runtime. Programs close descriptors they did not open: daemons close everything from 3 up at
// start, a child between fork and exec does the same, dup2 replaces a descriptor. So
// libshapetrace-rt.so interposes the libc functions that create or destroy descriptors: a
// descriptor created on a runtime thread is marked as the runtime's; when a program thread closes
// or replaces a marked descriptor, the runtime lets it go first, then the program's call proceeds
// and sees exactly what it would see without the runtime (EBADF for a close). Raw system calls are
// not seen: the channel sink checks its socket's identity before each use instead.
#pragma once

#include <atomic>
#include <cstdint>

namespace shapetrace::rt {

// Whether this thread acts for the runtime: its descriptors are the runtime's and its closes pass
// straight through. True on the drain thread (and cached on the threads started from it, see
// fd_guard.cpp); set for a scope (TransportScope) when a program thread plays the drain at exit or
// tears the transport down.
extern constinit thread_local bool t_transport_owner __attribute__((tls_model("initial-exec")));

class TransportScope {
public:
  TransportScope() : previous_(t_transport_owner) { t_transport_owner = true; }
  ~TransportScope() { t_transport_owner = previous_; }
  TransportScope(const TransportScope&) = delete;
  TransportScope& operator=(const TransportScope&) = delete;

private:
  bool previous_;
};

// Called (with no runtime lock held) when a program thread is about to close or replace one of the
// runtime's descriptors: must release every runtime descriptor before returning. Installed by the
// runtime at start; until then nothing is marked.
using DropTransportFn = void (*)();
void setDropTransport(DropTransportFn drop);

// Whether the calling thread is one of the runtime's own (the drain, and threads started from
// runtime threads such as the recording writer): such threads record nothing. A thread whose
// creation by a runtime thread is still under way is waited for, so the answer is exact from the
// thread's first instruction on. Not for the hot path: the hooks ask once per thread, when it
// attaches.
bool isRuntimeThread();

// Marks `fd`, made by the runtime with a call fd_guard does not interpose (fcntl's F_DUPFD), as
// the runtime's.
void markRuntimeDescriptor(int fd);

// While alive, the runtime is making descriptors that are not marked as they appear (F_DUPFD,
// memfd_create) and handing them over in a message (the channel's Hello): a program thread that
// closes or replaces a descriptor meanwhile waits until the scope ends, as it waits for a mark.
// Only around system calls that do not block (the program's close waits for them).
class RuntimeDescriptorSetup {
public:
  RuntimeDescriptorSetup();
  ~RuntimeDescriptorSetup();
  RuntimeDescriptorSetup(const RuntimeDescriptorSetup&) = delete;
  RuntimeDescriptorSetup& operator=(const RuntimeDescriptorSetup&) = delete;
};

// Where the runtime's own descriptors go: above the range programs use and close (half the soft
// RLIMIT_NOFILE, at most 512), so that "close everything from 3 up to N" rarely meets them.
int lowestRuntimeFd();

// Fork child: the parent's descriptors are inherited but are no longer the runtime's here.
void forgetRuntimeDescriptors();
// The transport's threads have ended (its context was terminated): their ids may be reused by
// the program's threads.
void forgetRuntimeThreads();

// How many times the program closed or replaced a runtime descriptor (each tore the transport down).
uint64_t transportDrops();

} // namespace shapetrace::rt
