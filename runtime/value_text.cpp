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

TextRead readTextFaultSafe(uint64_t address, size_t cap, char* out) {
  if (address == 0)
    return {};
  const int saved_errno = errno;
  static const size_t page = size_t(sysconf(_SC_PAGESIZE));
  const pid_t self = getpid(); // not cached: a forked child is another process
  // One byte past the cap tells a string of exactly `cap` bytes from a longer one.
  const size_t wanted = cap + 1;
  size_t read = 0;
  TextRead result{0, wire::TextState::Unreadable};
  while (read < wanted) {
    const uint64_t at = address + read;
    const size_t chunk = std::min(wanted - read, size_t(page - at % page));
    iovec local{out + read, chunk};
    iovec remote{reinterpret_cast<void*>(at), chunk};
    if (process_vm_readv(self, &local, 1, &remote, 1, 0) != ssize_t(chunk)) {
      result.length = read;
      break;
    }
    if (const void* nul = std::memchr(out + read, 0, chunk)) {
      result = {size_t(static_cast<const char*>(nul) - out), wire::TextState::Complete};
      break;
    }
    read += chunk;
    if (read == wanted)
      result = {cap, wire::TextState::Truncated};
  }
  errno = saved_errno;
  return result;
}

} // namespace shapetrace::rt
