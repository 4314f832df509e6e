// A vector of a trivially copyable type that grows with realloc().
//
// Why: the DAG's records and statistics grow one node at a time to tens of megabytes. A
// std::vector grows by allocating a new block, copying into it and freeing the old one, so every
// doubling copies the table and faults in fresh pages for all of it again (on the analyzer
// benchmark, most of the process's page faults). glibc serves blocks this large with mmap and
// grows them with mremap, which moves page mappings instead of bytes: no copy, and pages already
// touched stay touched.
//
// New elements are zero bytes, which must be the value of a default T for the types used here.
#pragma once

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>

namespace shapetrace::analyzer {

template <typename T> class GrowableArray {
  static_assert(std::is_trivially_copyable_v<T>);

public:
  GrowableArray() = default;
  GrowableArray(const GrowableArray& other) { *this = other; }
  GrowableArray(GrowableArray&& other) noexcept { swap(other); }
  GrowableArray& operator=(const GrowableArray& other) {
    if (this != &other) {
      size_ = 0;
      reserve(other.size_);
      if (other.size_ > 0) std::memcpy(data_, other.data_, other.size_ * sizeof(T));
      size_ = other.size_;
    }
    return *this;
  }
  GrowableArray& operator=(GrowableArray&& other) noexcept {
    GrowableArray moved(std::move(other));
    swap(moved);
    return *this;
  }
  ~GrowableArray() { std::free(data_); }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  size_t capacity() const { return capacity_; }
  T* data() { return data_; }
  const T* data() const { return data_; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }

  void reserve(size_t capacity) {
    if (capacity <= capacity_) return;
    void* grown = std::realloc(data_, capacity * sizeof(T));
    if (grown == nullptr) throw std::bad_alloc();
    data_ = static_cast<T*>(grown);
    capacity_ = capacity;
  }
  // Room for `size` elements, the capacity at least doubling when it grows: making room piece by
  // piece (a node, a merged thread) stays linear in all.
  void makeRoom(size_t size) {
    if (size > capacity_) reserve(std::max({size, 2 * capacity_, size_t{16}}));
  }
  // Grows (new elements zero) or shrinks to `size`.
  void resize(size_t size) {
    makeRoom(size);
    if (size > size_) std::memset(static_cast<void*>(data_ + size_), 0, (size - size_) * sizeof(T));
    size_ = size;
  }
  void push_back(const T& value) {
    makeRoom(size_ + 1);
    data_[size_++] = value;
  }

  void swap(GrowableArray& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
    std::swap(capacity_, other.capacity_);
  }

private:
  T* data_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

} // namespace shapetrace::analyzer
