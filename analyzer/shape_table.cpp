// Open-addressing interning table for shapes and DAG nodes.
#include "shape_table.h"

#include <xxhash.h>

#include <algorithm>
#include <cstring>

namespace shapetrace::analyzer {

ShapeTable::ShapeTable() {
  // Id 0 is the null shape: no function, no children, depth 0.
  nodes_.push_back(Node{0, 0, 0, 0, 0});
  slots_.assign(64, kNullShape);
  mask_ = slots_.size() - 1;
}

uint64_t ShapeTable::hashOf(uint32_t function, std::span<const ShapeId> children) {
  // Most child lists are short: mix them inline, two ids per multiply; long ones go to XXH3.
  if (children.size() > 16)
    return XXH3_64bits_withSeed(children.data(), children.size_bytes(), function);
  constexpr uint64_t kMul = 0x9E3779B97F4A7C15ull;
  uint64_t h = (uint64_t{function} + children.size()) * kMul;
  size_t i = 0;
  for (; i + 1 < children.size(); i += 2) {
    const uint64_t pair = (uint64_t{children[i]} << 32) | children[i + 1];
    h = (h ^ pair) * kMul;
    h ^= h >> 29;
  }
  if (i < children.size()) h = ((h ^ children[i]) * kMul) ^ (h >> 31);
  // Final avalanche (from MurmurHash3's fmix64): the table uses the low bits.
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return h;
}

bool ShapeTable::equals(const Node& node, uint32_t function,
                        std::span<const ShapeId> children) const {
  return node.function == function && node.child_count == children.size() &&
         (children.empty() ||
          std::memcmp(pool_.data() + node.child_offset, children.data(), children.size_bytes()) == 0);
}

// The slot holding (function, children), or the empty slot where it would go.
namespace {
constexpr uint64_t slotTag(uint64_t hash) { return hash & 0xffffffff00000000ull; }
constexpr ShapeId slotId(uint64_t slot) { return static_cast<ShapeId>(slot); }
} // namespace

uint64_t ShapeTable::slotOf(uint64_t hash, uint32_t function,
                            std::span<const ShapeId> children) const {
  uint64_t slot = hash & mask_;
  for (;;) {
    const uint64_t entry = slots_[slot];
    if (slotId(entry) == kNullShape) break;
    if (slotTag(entry) == slotTag(hash)) {
      const Node& node = nodes_[slotId(entry)];
      if (node.hash == hash && equals(node, function, children)) break;
    }
    slot = (slot + 1) & mask_;
  }
  return slot;
}

ShapeId ShapeTable::find(uint32_t function, std::span<const ShapeId> children) const {
  return slotId(slots_[slotOf(hashOf(function, children), function, children)]);
}

ShapeId ShapeTable::intern(uint32_t function, std::span<const ShapeId> children) {
  const uint64_t hash = hashOf(function, children);
  const uint64_t slot = slotOf(hash, function, children);
  if (slotId(slots_[slot]) != kNullShape) return slotId(slots_[slot]);
  uint32_t depth = 1;
  for (ShapeId child : children)
    depth = std::max(depth, nodes_[child].depth + 1);
  const auto id = static_cast<ShapeId>(nodes_.size());
  nodes_.push_back(Node{hash, function, depth, pool_.size(), static_cast<uint32_t>(children.size())});
  pool_.insert(pool_.end(), children.begin(), children.end());
  slots_[slot] = slotTag(hash) | id;
  // Keep the load factor at or below one half so probes stay short.
  if (nodes_.size() * 2 > slots_.size()) rehash();
  return id;
}

void ShapeTable::rehash() {
  slots_.assign(slots_.size() * 2, kNullShape);
  mask_ = slots_.size() - 1;
  for (ShapeId id = 1; id < nodes_.size(); ++id) {
    uint64_t slot = nodes_[id].hash & mask_;
    while (slotId(slots_[slot]) != kNullShape)
      slot = (slot + 1) & mask_;
    slots_[slot] = slotTag(nodes_[id].hash) | id;
  }
}

size_t ShapeTable::memoryBytes() const {
  return nodes_.capacity() * sizeof(Node) + pool_.capacity() * sizeof(ShapeId) +
         slots_.capacity() * sizeof(uint64_t);
}

size_t canonicalizeChildSet(std::span<ShapeId> children) {
  std::sort(children.begin(), children.end());
  auto end = std::unique(children.begin(), children.end());
  // Null is implicit in every shape's children (Def. 5.2); it sorts first.
  auto begin = children.begin();
  if (begin != end && *begin == kNullShape) ++begin;
  const auto size = static_cast<size_t>(end - begin);
  if (begin != children.begin()) std::move(begin, end, children.begin());
  return size;
}

} // namespace shapetrace::analyzer
