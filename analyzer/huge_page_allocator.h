// An allocator for the analyzer's large, randomly accessed tables (the DAG's hash slots, records
// and statistics): blocks of 2 MiB and more are mapped on their own, aligned to 2 MiB and marked
// for transparent huge pages.
//
// Why: once a table outgrows the caches every look-up also misses the TLB, and under
// virtualisation a page walk costs several memory accesses of its own. With 2 MiB pages the TLB
// covers the tables and a miss is one memory access, not three or four. Measured on the
// analyzer benchmark (docs/BENCHMARKS.md). Smaller blocks go to operator new as usual.
#pragma once

#include <algorithm>
#include <cstddef>
#include <new>
#include <type_traits>
#include <utility>
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
  // Default construction leaves elements as the memory came (see zeroedHugePageVector).
  template <typename U> void construct(U* p) { ::new (static_cast<void*>(p)) U; }
  template <typename U, typename... Args> void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

template <typename T> using HugePageVector = std::vector<T, HugePageAllocator<T>>;

// `size` zeros. A mapped block comes zeroed from the kernel; filling it again would touch every
// page twice (a table of a million nodes is tens of megabytes), so only small blocks are filled.
template <typename T> HugePageVector<T> zeroedHugePageVector(size_t size) {
  static_assert(std::is_trivial_v<T>);
  HugePageVector<T> vector;
  vector.resize(size);
  if (size * sizeof(T) < kHugePageBytes) std::fill(vector.begin(), vector.end(), T{});
  return vector;
}

} // namespace shapetrace::analyzer
