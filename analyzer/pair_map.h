// A map from a pair of 32-bit ids to a 32-bit value, for the look-ups the call streams' sinks make
// per call (a flame tree's child of a node for a function, a caller's edge to a callee).
//
// Open addressing with linear probing in one flat array, kept at most half full, never erased:
// a look-up is one multiplicative hash and about one probe of one cache line, where
// std::unordered_map allocates a node per entry and follows a pointer per look-up.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace shapetrace::analyzer {

class PairMap {
public:
  // Not a value: marks an empty slot, and find()'s "absent".
  static constexpr uint32_t kAbsent = UINT32_MAX;

  // The value of (a, b), or kAbsent.
  uint32_t find(uint32_t a, uint32_t b) const {
    if (slots_.empty()) return kAbsent;
    const uint64_t key = keyOf(a, b);
    for (size_t i = home(key);; i = (i + 1) & mask_) {
      const Slot& slot = slots_[i];
      if (slot.value == kAbsent) return kAbsent;
      if (slot.key == key) return slot.value;
    }
  }

  // The value of (a, b), and false; or, when absent, `value` (not kAbsent) inserted, and true.
  std::pair<uint32_t, bool> tryEmplace(uint32_t a, uint32_t b, uint32_t value) {
    if (2 * (size_ + 1) > slots_.size()) grow();
    const uint64_t key = keyOf(a, b);
    for (size_t i = home(key);; i = (i + 1) & mask_) {
      Slot& slot = slots_[i];
      if (slot.value == kAbsent) {
        slot = {key, value};
        ++size_;
        return {value, true};
      }
      if (slot.key == key) return {slot.value, false};
    }
  }

  size_t size() const { return size_; }

private:
  struct Slot {
    uint64_t key = 0;
    uint32_t value = kAbsent;
  };

  static uint64_t keyOf(uint32_t a, uint32_t b) { return uint64_t{a} << 32 | b; }
  // Fibonacci hashing: the product's high bits mix both ids.
  size_t home(uint64_t key) const {
    return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_) & mask_;
  }

  void grow() {
    std::vector<Slot> old = std::move(slots_);
    const size_t capacity = old.empty() ? 16 : 2 * old.size();
    slots_.assign(capacity, Slot{});
    mask_ = capacity - 1;
    shift_ = 64 - static_cast<unsigned>(__builtin_ctzll(capacity));
    for (const Slot& slot : old)
      if (slot.value != kAbsent) {
        size_t i = home(slot.key);
        while (slots_[i].value != kAbsent)
          i = (i + 1) & mask_;
        slots_[i] = slot;
      }
  }

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  unsigned shift_ = 64;
  size_t size_ = 0;
};

} // namespace shapetrace::analyzer
