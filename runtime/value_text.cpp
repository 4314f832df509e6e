// Fault-safe reads of string arguments (value_text.h).
//
// process_vm_readv on our own pid copies from our own address space through the kernel, which
// returns EFAULT for an unmapped address instead of raising SIGSEGV: no signal handler to install
// (the program may own SIGSEGV), nothing to undo. It moves whole iovecs only, so each read stays
// within one page and a fault ends the text at the last readable page.
#include "value_text.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sys/uio.h>
#include <unistd.h>

namespace shapetrace::rt {

namespace {

// Copies up to `wanted` bytes at `address` to `out`, page by page, stopping after the chunk that
// holds a NUL when `stop_at_nul`: the bytes copied, and whether a page could not be read.
struct Copied {
  size_t bytes = 0;
  bool faulted = false;
};
Copied copyFaultSafe(uint64_t address, size_t wanted, char* out, bool stop_at_nul) {
  static const size_t page = size_t(sysconf(_SC_PAGESIZE));
  const pid_t self = getpid(); // not cached: a forked child is another process
  Copied copied;
  while (copied.bytes < wanted) {
    const uint64_t at = address + copied.bytes;
    const size_t chunk = std::min(wanted - copied.bytes, size_t(page - at % page));
    iovec local{out + copied.bytes, chunk};
    iovec remote{reinterpret_cast<void*>(at), chunk};
    if (process_vm_readv(self, &local, 1, &remote, 1, 0) != ssize_t(chunk)) {
      copied.faulted = true;
      break;
    }
    copied.bytes += chunk;
    if (stop_at_nul && std::memchr(out + copied.bytes - chunk, 0, chunk))
      break;
  }
  return copied;
}

} // namespace

TextRead readTextFaultSafe(uint64_t address, size_t cap, char* out) {
  if (address == 0)
    return {};
  const int saved_errno = errno;
  // One byte past the cap tells a string of exactly `cap` bytes from a longer one.
  const Copied copied = copyFaultSafe(address, cap + 1, out, /*stop_at_nul=*/true);
  errno = saved_errno;
  if (const void* nul = std::memchr(out, 0, copied.bytes))
    return {size_t(static_cast<const char*>(nul) - out), wire::TextState::Complete};
  if (copied.faulted)
    return {copied.bytes, wire::TextState::Unreadable};
  return {cap, wire::TextState::Truncated};
}

TextRead readBytesFaultSafe(uint64_t address, uint64_t length, size_t cap, char* out) {
  if (length == 0)
    return {};
  if (address == 0)
    return {0, wire::TextState::Unreadable};
  const int saved_errno = errno;
  const size_t wanted = size_t(std::min<uint64_t>(length, cap));
  const Copied copied = copyFaultSafe(address, wanted, out, /*stop_at_nul=*/false);
  errno = saved_errno;
  if (copied.faulted)
    return {copied.bytes, wire::TextState::Unreadable};
  return {wanted, length > cap ? wire::TextState::Truncated : wire::TextState::Complete};
}

} // namespace shapetrace::rt
