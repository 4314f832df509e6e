// An allocator for the analyzer's large, randomly accessed tables (the DAG's hash slots, records
// and statistics): blocks of 2 MiB and more are mapped on their own, aligned to 2 MiB and marked
// for transparent huge pages.
//
// Why: once a table outgrows the caches every look-up also misses the TLB, and under
// virtualisation a page walk costs several memory accesses of its own. With 2 MiB pages the TLB
// covers the tables and a miss is one memory access, not three or four. Measured on the
// analyzer benchmark (docs/BENCHMARKS.md). Smaller blocks go to operator new as usual.
#pragma once

#include <cstddef>
#include <new>
#include <vector>

namespace shapetrace::analyzer {

void* allocateHuge(size_t bytes);
void deallocateHuge(void* p, size_t bytes);
inline constexpr size_t kHugePageBytes = size_t{2} << 20;

template <typename T> struct HugePageAllocator {
  using value_type = T;
  HugePageAllocator() = default;
  template <typename U> HugePageAllocator(const HugePageAllocator<U>&) {}

  T* allocate(size_t n) {
    if (n * sizeof(T) < kHugePageBytes) return static_cast<T*>(::operator new(n * sizeof(T)));
    return static_cast<T*>(allocateHuge(n * sizeof(T)));
  }
  void deallocate(T* p, size_t n) {
    if (n * sizeof(T) < kHugePageBytes)
      ::operator delete(p);
    else
      deallocateHuge(p, n * sizeof(T));
  }
  template <typename U> bool operator==(const HugePageAllocator<U>&) const { return true; }
};

template <typename T> using HugePageVector = std::vector<T, HugePageAllocator<T>>;

} // namespace shapetrace::analyzer
