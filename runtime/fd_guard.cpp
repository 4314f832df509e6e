// Interposed libc functions that keep the runtime's descriptors safe from the program (fd_guard.h).
//
// Exported from libshapetrace-rt.so (exports.map). The program links the runtime before libc, so
// its calls reach these first; the real functions are
// found with dlsym(RTLD_NEXT). On a close-like call that does not touch a runtime descriptor the
// added cost is one thread-local load, one relaxed load of a bitmap word (or of a counter) and an
// indirect call; a creation by a program thread also compares its id with a table of at most 16:
// nothing next to the system call itself.
//
// Marking: a descriptor created on a thread that acts for the runtime (t_transport_owner) is marked
// in a bitmap; the threads started from such a thread (the recording writer's) act for the runtime
// too: pthread_create
// is interposed to note their ids (not to wrap their start routine, which would run before a
// sanitizer's own thread set-up), and a thread finds itself in that table on its first descriptor
// call (then caches it in t_transport_owner). g_creating closes the window between a descriptor's
// creation and its mark: a program thread that closes while a runtime creation is under way waits
// for the mark.
//
// Releasing: when a program thread closes (close, close_range, closefrom) or replaces (dup2, dup3)
// a marked descriptor (the channel's control socket), the installed DropTransportFn lets it go
// first; the program's call then proceeds on a descriptor that is no longer open, exactly as in
// the untraced program (its close fails with EBADF). The channel itself goes on: its shared memory
// depends on no descriptor.
#include "fd_guard.h"
#include "interpose.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdarg>
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

namespace shapetrace::rt {

constinit thread_local bool t_transport_owner __attribute__((tls_model("initial-exec"))) = false;

namespace {

// Descriptors below this bound can be marked (1 Mi, the usual hard RLIMIT_NOFILE); a runtime
// descriptor above it is not protected (documented).
constexpr unsigned kMaxFd = 1u << 20;
constinit std::atomic<uint64_t> g_marked[kMaxFd / 64] = {};
constinit std::atomic<unsigned> g_marked_end{0}; // one past the highest descriptor ever marked
constinit std::atomic<int> g_creating{0};        // runtime creations between syscall and mark
constinit std::atomic<uint64_t> g_drops{0};
constinit std::atomic<DropTransportFn> g_drop{nullptr};
// Threads started by runtime threads (the recording writer), 0 for a free slot.
constexpr size_t kMaxRuntimeThreads = 16;
constinit std::atomic<pthread_t> g_runtime_threads[kMaxRuntimeThreads] = {};
// Runtime threads between pthread_create and their entry in g_runtime_threads: a new thread can
// run (and reach a hook) before its creator has noted it.
constinit std::atomic<int> g_runtime_thread_creations{0};

// Whether the calling thread acts for the runtime (the rare path: a descriptor call that is not
// obviously the program's).
bool actsForRuntime() {
  if (t_transport_owner)
    return true;
  const pthread_t self = pthread_self();
  for (auto& slot : g_runtime_threads)
    if (slot.load(std::memory_order_acquire) == self)
      return t_transport_owner = true;
  return false;
}

bool isMarked(int fd) {
  return unsigned(fd) < kMaxFd &&
         (g_marked[unsigned(fd) / 64].load(std::memory_order_acquire) >> (unsigned(fd) % 64)) & 1;
}

void mark(int fd) {
  if (fd < 0 || unsigned(fd) >= kMaxFd)
    return;
  g_marked[unsigned(fd) / 64].fetch_or(uint64_t(1) << (unsigned(fd) % 64));
  unsigned end = g_marked_end.load();
  while (end < unsigned(fd) + 1 && !g_marked_end.compare_exchange_weak(end, unsigned(fd) + 1)) {
  }
}

void unmark(int fd) {
  if (fd >= 0 && unsigned(fd) < kMaxFd)
    g_marked[unsigned(fd) / 64].fetch_and(~(uint64_t(1) << (unsigned(fd) % 64)));
}

bool anyMarkedIn(unsigned first, unsigned last) { // inclusive
  const unsigned end = g_marked_end.load();
  for (unsigned fd = first; fd <= last && fd < end; ++fd) {
    if (fd % 64 == 0 && g_marked[fd / 64].load() == 0) {
      fd += 63;
      continue;
    }
    if (isMarked(int(fd)))
      return true;
  }
  return false;
}

// The program is about to close or replace descriptors [first, last]: if one is the runtime's,
// the transport goes first. Waits out a runtime creation whose mark may not be visible yet.
void releaseForProgram(unsigned first, unsigned last) {
  if (actsForRuntime())
    return;
  while (g_creating.load() != 0)
    sched_yield();
  if (!anyMarkedIn(first, last))
    return;
  const DropTransportFn drop = g_drop.load();
  if (!drop)
    return;
  const int saved_errno = errno;
  g_drops.fetch_add(1, std::memory_order_relaxed);
  {
    TransportScope scope; // the transport's own closes during the drop pass straight through
    drop();
  }
  errno = saved_errno;
}

// The fast check of every close-like call: nothing to do for the runtime's own threads (they only
// unmark afterwards) and for descriptors never marked, unless a runtime creation is under way.
inline bool programTouches(unsigned first, unsigned last) {
  if (t_transport_owner)
    return false;
  if (g_creating.load(std::memory_order_relaxed) != 0)
    return true;
  if (first >= g_marked_end.load(std::memory_order_relaxed))
    return false;
  return first == last ? isMarked(int(first)) : true;
}

template <class Fn> Fn real(std::atomic<void*>& cache, const char* name) {
  // Benign race: every thread resolves the same address.
  void* found = cache.load(std::memory_order_relaxed);
  if (!found) {
    found = dlsym(RTLD_NEXT, name);
    cache.store(found, std::memory_order_relaxed);
  }
  return reinterpret_cast<Fn>(found);
}
// The real `name`, looked up once. The cache is a static of each expansion (a lambda of its own),
// never one shared by the functions of one type: epoll_create and epoll_create1, socket and dup3
// have the same type, and one cache per type called whichever had been looked up first.
#define REAL(name)                                                                                 \
  ([]() -> decltype(&::name) {                                                                     \
    static std::atomic<void*> cache{nullptr};                                                      \
    return real<decltype(&::name)>(cache, #name);                                                  \
  }())

// A creation on a runtime thread: counted while between the syscall and the mark.
template <class Create> int created(Create create) {
  if (!actsForRuntime())
    return create();
  g_creating.fetch_add(1);
  const int fd = create();
  mark(fd);
  g_creating.fetch_sub(1);
  return fd;
}

} // namespace

void setDropTransport(DropTransportFn drop) { g_drop.store(drop); }

void markRuntimeDescriptor(int fd) { mark(fd); }

RuntimeDescriptorSetup::RuntimeDescriptorSetup() { g_creating.fetch_add(1); }

RuntimeDescriptorSetup::~RuntimeDescriptorSetup() { g_creating.fetch_sub(1); }

int lowestRuntimeFd() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY)
    return 512;
  return int(std::min<rlim_t>(limit.rlim_cur / 2, 512));
}

void forgetRuntimeDescriptors() {
  const unsigned end = g_marked_end.load();
  for (unsigned word = 0; word < (end + 63) / 64; ++word)
    g_marked[word].store(0);
  g_marked_end.store(0);
  g_creating.store(0); // a creation under way in the parent's threads never ends here
  g_runtime_thread_creations.store(0);
  g_drops.store(0);    // the child's own count
  forgetRuntimeThreads();
}

void forgetRuntimeThreads() {
  for (auto& slot : g_runtime_threads)
    slot.store(0, std::memory_order_release);
}

uint64_t transportDrops() { return g_drops.load(std::memory_order_relaxed); }

bool isRuntimeThread() {
  if (actsForRuntime())
    return true;
  if (g_runtime_thread_creations.load() == 0)
    return false;
  while (g_runtime_thread_creations.load() != 0)
    sched_yield();
  return actsForRuntime();
}

} // namespace shapetrace::rt

using namespace shapetrace::rt;

SHAPETRACE_INTERPOSE int close(int fd) {
  const bool touches = fd >= 0 && programTouches(unsigned(fd), unsigned(fd));
  if (touches)
    releaseForProgram(unsigned(fd), unsigned(fd));
  const int rc = REAL(close)(fd);
  if (rc == 0 && (t_transport_owner || (touches && actsForRuntime())))
    unmark(fd);
  return rc;
}

SHAPETRACE_INTERPOSE int close_range(unsigned first, unsigned last, int flags) noexcept {
  // CLOSE_RANGE_CLOEXEC only marks descriptors close-on-exec: the runtime's already are.
  if (!(flags & CLOSE_RANGE_CLOEXEC) && first <= last && programTouches(first, last))
    releaseForProgram(first, last);
  return REAL(close_range)(first, last, flags);
}

SHAPETRACE_INTERPOSE void closefrom(int lowfd) noexcept {
  const unsigned first = lowfd < 0 ? 0u : unsigned(lowfd);
  if (programTouches(first, ~0u))
    releaseForProgram(first, ~0u);
  REAL(closefrom)(lowfd);
}

SHAPETRACE_INTERPOSE int dup2(int oldfd, int newfd) noexcept {
  if (newfd >= 0 && oldfd != newfd && programTouches(unsigned(newfd), unsigned(newfd)))
    releaseForProgram(unsigned(newfd), unsigned(newfd));
  return REAL(dup2)(oldfd, newfd);
}

SHAPETRACE_INTERPOSE int dup3(int oldfd, int newfd, int flags) noexcept {
  if (newfd >= 0 && oldfd != newfd && programTouches(unsigned(newfd), unsigned(newfd)))
    releaseForProgram(unsigned(newfd), unsigned(newfd));
  return REAL(dup3)(oldfd, newfd, flags);
}

// Creations on runtime threads are marked (the control socket; anything a runtime thread makes).
SHAPETRACE_INTERPOSE int socket(int domain, int type, int protocol) noexcept {
  return created([&] { return REAL(socket)(domain, type, protocol); });
}

SHAPETRACE_INTERPOSE int socketpair(int domain, int type, int protocol, int fds[2]) noexcept {
  if (!actsForRuntime())
    return REAL(socketpair)(domain, type, protocol, fds);
  int rc = -1;
  created([&] {
    rc = REAL(socketpair)(domain, type, protocol, fds);
    if (rc == 0)
      mark(fds[1]);
    return rc == 0 ? fds[0] : -1;
  });
  return rc;
}

SHAPETRACE_INTERPOSE int eventfd(unsigned initval, int flags) noexcept {
  return created([&] { return REAL(eventfd)(initval, flags); });
}

SHAPETRACE_INTERPOSE int epoll_create(int size) noexcept {
  return created([&] { return REAL(epoll_create)(size); });
}

SHAPETRACE_INTERPOSE int epoll_create1(int flags) noexcept {
  return created([&] { return REAL(epoll_create1)(flags); });
}

SHAPETRACE_INTERPOSE int pipe2(int fds[2], int flags) noexcept {
  if (!actsForRuntime())
    return REAL(pipe2)(fds, flags);
  int rc = -1;
  created([&] {
    rc = REAL(pipe2)(fds, flags);
    if (rc == 0)
      mark(fds[1]);
    return rc == 0 ? fds[0] : -1;
  });
  return rc;
}

// Threads started by a runtime thread (the recording writer) act for the runtime: each is in the
// table before it makes a descriptor; a hook it reaches earlier waits for the entry
// (isRuntimeThread).
SHAPETRACE_INTERPOSE int pthread_create(pthread_t* thread, const pthread_attr_t* attributes,
                                        void* (*routine)(void*), void* argument) noexcept {
  if (!t_transport_owner)
    return REAL(pthread_create)(thread, attributes, routine, argument);
  g_runtime_thread_creations.fetch_add(1);
  const int rc = REAL(pthread_create)(thread, attributes, routine, argument);
  if (rc == 0)
    for (auto& slot : g_runtime_threads) {
      pthread_t empty = 0;
      if (slot.compare_exchange_strong(empty, *thread))
        break;
    }
  g_runtime_thread_creations.fetch_sub(1);
  return rc;
}
