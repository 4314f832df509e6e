// Large blocks mapped on their own, 2 MiB aligned, with transparent huge pages asked for.
#include "huge_page_allocator.h"

#include <sys/mman.h>

#include <cstdint>

namespace shapetrace::analyzer {
namespace {
size_t roundUp(size_t bytes) { return (bytes + kHugePageBytes - 1) & ~(kHugePageBytes - 1); }
} // namespace

void* allocateHuge(size_t bytes) {
  const size_t size = roundUp(bytes);
  // Map one huge page more than needed and trim both ends, so the block starts on a boundary.
  void* mapped = mmap(nullptr, size + kHugePageBytes, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapped == MAP_FAILED) throw std::bad_alloc();
  const auto start = reinterpret_cast<uintptr_t>(mapped);
  const uintptr_t aligned = (start + kHugePageBytes - 1) & ~uintptr_t{kHugePageBytes - 1};
  if (aligned > start) munmap(mapped, aligned - start);
  const uintptr_t tail = aligned + size;
  const uintptr_t mapped_end = start + size + kHugePageBytes;
  if (mapped_end > tail) munmap(reinterpret_cast<void*>(tail), mapped_end - tail);
  // Advice only: where transparent huge pages are off this changes nothing.
  madvise(reinterpret_cast<void*>(aligned), size, MADV_HUGEPAGE);
  return reinterpret_cast<void*>(aligned);
}

void deallocateHuge(void* p, size_t bytes) { munmap(p, roundUp(bytes)); }

} // namespace shapetrace::analyzer
