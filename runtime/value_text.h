// Reading a string argument (FUNCTION@argN/s) at an address the program passed, which may be
// anything: a bad pointer must never crash the traced program.
#pragma once

#include "wire/items.h"

#include <cstddef>
#include <cstdint>

namespace shapetrace::rt {

// The most bytes of one string value (SHAPETRACE_VALUE_TEXT_MAX's bound).
inline constexpr uint32_t kValueTextHardMax = 1024;
static_assert(kValueTextHardMax <= wire::kMaxValueText);

struct TextRead {
  size_t length = 0; // bytes written to the buffer (no NUL)
  wire::TextState state = wire::TextState::Complete;
};

// The NUL-terminated string at `address`, at most `cap` bytes of it, copied to `out` (cap + 1
// bytes) with process_vm_readv on this process, page by page: an unmapped page ends the read as
// Unreadable instead of faulting. Null reads as an empty Complete text. errno is kept.
TextRead readTextFaultSafe(uint64_t address, size_t cap, char* out);

// The `length` bytes at `address` (a std::string_view's characters), at most `cap` of them,
// copied to `out` (cap bytes) the same way: a NUL among them is copied like any byte, Truncated
// when length > cap. A null address reads as an empty Complete text when length is 0 (an empty
// view), as Unreadable otherwise.
TextRead readBytesFaultSafe(uint64_t address, uint64_t length, size_t cap, char* out);

} // namespace shapetrace::rt
