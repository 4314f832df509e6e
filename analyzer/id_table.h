// A table of entries by a 32-bit id that comes from the input (a function id, a module table's
// id): dense where the ids it holds are dense, a hash map for the rest. Its memory is proportional
// to the number of ids it holds, never to their range: one call of function 2^24-1 costs one
// entry, not 2^24 (docs/security.md).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <unordered_map>
#include <vector>

namespace shapetrace::analyzer {

template <typename T> class IdTable {
public:
  // The entry of `id`, nullptr when it has none.
  T* find(uint32_t id) {
    if (id < dense_.size()) [[likely]]
      return present_[id] ? &dense_[id] : nullptr;
    const auto it = sparse_.find(id);
    return it == sparse_.end() ? nullptr : &it->second;
  }
  const T* find(uint32_t id) const { return const_cast<IdTable*>(this)->find(id); }

  // The entry of `id`, value-initialised on first use. References to entries stay valid until
  // the next entry is added.
  T& operator[](uint32_t id) {
    if (id < dense_.size() && present_[id]) [[likely]]
      return dense_[id];
    return add(id);
  }

  size_t size() const { return size_; }
  size_t memoryBytes() const {
    return dense_.capacity() * sizeof(T) + present_.capacity() / 8 +
           sparse_.size() * (sizeof(T) + 4 * sizeof(void*));
  }

  // Every entry, in increasing id order: f(id, entry).
  template <typename F> void forEach(F&& f) const {
    for (uint32_t id = 0; id < dense_.size(); ++id)
      if (present_[id]) f(id, dense_[id]);
    const std::map<uint32_t, const T*> sorted = sortedSparse();
    for (const auto& [id, entry] : sorted)
      f(id, *entry);
  }

private:
  // The dense part covers ids below max(kDenseFloor, kSlack x the entries held): at most kSlack
  // slots per entry beyond the floor.
  static constexpr size_t kDenseFloor = 4096;
  static constexpr size_t kSlack = 8;
  size_t denseLimit() const { return std::max(kDenseFloor, kSlack * (size_ + 1)); }

  [[gnu::noinline]] T& add(uint32_t id) {
    if (id >= dense_.size()) {
      if (const auto it = sparse_.find(id); it != sparse_.end()) return it->second;
      if (id < denseLimit()) grow(id + size_t{1});
    }
    ++size_;
    if (id < dense_.size()) {
      present_[id] = true;
      return dense_[id];
    }
    return sparse_[id];
  }

  // Covers at least ids below `size` densely, doubling, and moves the sparse entries it covers.
  void grow(size_t size) {
    size = std::max(size, std::min(2 * dense_.size(), denseLimit()));
    dense_.resize(size);
    present_.resize(size);
    for (auto it = sparse_.begin(); it != sparse_.end();) {
      if (it->first >= size) {
        ++it;
        continue;
      }
      dense_[it->first] = std::move(it->second);
      present_[it->first] = true;
      it = sparse_.erase(it);
    }
  }

  std::map<uint32_t, const T*> sortedSparse() const {
    std::map<uint32_t, const T*> sorted;
    for (const auto& [id, entry] : sparse_)
      sorted.emplace(id, &entry);
    return sorted;
  }

  std::vector<T> dense_;
  std::vector<bool> present_;
  std::unordered_map<uint32_t, T> sparse_;
  size_t size_ = 0;
};

} // namespace shapetrace::analyzer
