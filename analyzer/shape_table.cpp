// Open-addressing interning table for shapes and DAG nodes.
#include "shape_table.h"

#include "pair_map.h"

#include <algorithm>

namespace shapetrace::analyzer {
namespace {

// A slot: the hash's top 24 bits as a tag, and 40 bits of record offset (a trillion words).
constexpr unsigned kTagShift = 40;
constexpr uint64_t kOffsetMask = (uint64_t{1} << kTagShift) - 1;
constexpr uint64_t slotTag(uint64_t hash) { return hash & ~kOffsetMask; }
constexpr uint64_t slotRecord(uint64_t slot) { return slot & kOffsetMask; }

} // namespace

ShapeTable::ShapeTable(Depth depth) : depth_(depth) {
  // Id 0 is the null shape: no function, no children, depth 0.
  records_.resize(kHeaderWords);
  record_of_.push_back(0);
  slots_.assign(64, 0);
  mask_ = slots_.size() - 1;
}

ShapeTable::Key ShapeTable::keyOf(uint32_t function, std::span<const ShapeId> children) {
  Hash hash(function);
  for (ShapeId child : children)
    hash.add(child);
  return keyOf(function, children, hash);
}

bool ShapeTable::equals(uint64_t record, const Key& key) const {
  const uint32_t* r = records_.data() + record;
  if (r[kFunction] != key.function || r[kChildCount] != key.children.size()) return false;
  // A plain loop: the lists are short, and a call to memcmp costs more than comparing them.
  const uint32_t* children = r + kHeaderWords;
  for (size_t i = 0; i < key.children.size(); ++i)
    if (children[i] != key.children[i]) return false;
  return true;
}

// The slot holding the key's record, or the empty slot where it would go.
uint64_t ShapeTable::slotOf(const Key& key) const {
  uint64_t slot = key.hash & mask_;
  for (;;) {
    const uint64_t entry = slots_[slot];
    if (entry == 0) return slot;
    if (slotTag(entry) == slotTag(key.hash) && equals(slotRecord(entry), key)) return slot;
    slot = (slot + 1) & mask_;
  }
}

void ShapeTable::prefetchRecord(uint64_t hash) const {
  const uint64_t entry = slots_[hash & mask_];
  if (entry != 0 && slotTag(entry) == slotTag(hash))
    __builtin_prefetch(records_.data() + slotRecord(entry));
}

ShapeId ShapeTable::find(const Key& key) const {
  if (key.children.empty()) return leafOf(key.function);
  const uint64_t entry = slots_[slotOf(key)];
  return entry == 0 ? kNullShape : records_[slotRecord(entry) + kId];
}

ShapeId ShapeTable::intern(const Key& key) { return internNode(key).id; }

ShapeTable::Node ShapeTable::internNode(const Key& key) {
  if (key.children.empty()) {
    ShapeId leaf = leafOf(key.function);
    const bool added = leaf == kNullShape;
    if (added) {
      leaf = leaf_of_function_[key.function] = add(key);
    }
    return {leaf, added, wordOf(leaf)};
  }
  const uint64_t slot = slotOf(key);
  if (slots_[slot] != 0) {
    uint32_t* r = records_.data() + slotRecord(slots_[slot]);
    return {r[kId], false, r + kDepth};
  }
  const ShapeId id = add(key);
  slots_[slot] = slotTag(key.hash) | record_of_[id];
  // Keep the load factor at or below one half so probes stay short.
  if (record_of_.size() * 2 > slots_.size()) rehash(slots_.size() * 2);
  return {id, true, wordOf(id)};
}

ShapeTable::Node ShapeTable::findNode(const Key& key) {
  const ShapeId id = find(key);
  if (id == kNullShape) return {};
  return {id, false, wordOf(id)};
}

// Appends the key's record and gives it the next id.
ShapeId ShapeTable::add(const Key& key) {
  uint32_t depth = 0;
  if (depth_ == Depth::kKept) {
    depth = 1;
    for (ShapeId child : key.children)
      depth = std::max(depth, this->depth(child) + 1);
  }
  const auto id = static_cast<ShapeId>(record_of_.size());
  const size_t at = records_.size();
  record_of_.push_back(at);
  records_.resize(at + kHeaderWords + key.children.size());
  uint32_t* r = records_.data() + at;
  r[kId] = id;
  r[kFunction] = key.function;
  r[kDepth] = depth;
  r[kChildCount] = static_cast<uint32_t>(key.children.size());
  r[kHashLow] = static_cast<uint32_t>(key.hash);
  r[kHashHigh] = static_cast<uint32_t>(key.hash >> 32);
  std::copy(key.children.begin(), key.children.end(), r + kHeaderWords);
  return id;
}

void ShapeTable::rehash(size_t slot_count) {
  slots_ = HugePageVector<uint64_t>(); // the old block goes back before the new one is mapped
  slots_ = zeroedHugePageVector<uint64_t>(slot_count);
  mask_ = slots_.size() - 1;
  for (ShapeId id = 1; id < record_of_.size(); ++id) {
    if (isLeaf(id)) continue; // leaves are found through leaf_of_function_
    const uint64_t hash = this->hash(id);
    uint64_t slot = hash & mask_;
    while (slots_[slot] != 0)
      slot = (slot + 1) & mask_;
    slots_[slot] = slotTag(hash) | record_of_[id];
  }
}

void ShapeTable::reserve(size_t nodes, size_t child_ids) {
  const size_t total = record_of_.size() + nodes;
  records_.makeRoom(records_.size() + nodes * kHeaderWords + child_ids);
  record_of_.makeRoom(total);
  size_t slot_count = slots_.size();
  while (total * 2 > slot_count)
    slot_count *= 2;
  if (slot_count != slots_.size()) rehash(slot_count);
}

size_t ShapeTable::memoryBytes() const {
  return records_.capacity() * sizeof(uint32_t) + record_of_.capacity() * sizeof(uint64_t) +
         leaf_of_function_.memoryBytes() + slots_.capacity() * sizeof(uint64_t);
}

size_t canonicalizeChildSet(std::span<ShapeId> children) {
  // Leaves and loops over one callee, most calls, need no sort.
  if (children.size() <= 1) return children.empty() || children[0] == kNullShape ? 0 : 1;
  auto end = children.begin() + static_cast<ptrdiff_t>(sortDistinct(children));
  // Null is implicit in every shape's children (Def. 5.2); it sorts first.
  auto begin = children.begin();
  if (begin != end && *begin == kNullShape) ++begin;
  const auto size = static_cast<size_t>(end - begin);
  if (begin != children.begin()) std::move(begin, end, children.begin());
  return size;
}

size_t sortDistinct(std::span<uint32_t> values) {
  // Below this, sorting is cheaper than hashing.
  constexpr size_t kHashFrom = 256;
  auto end = values.end();
  if (values.size() >= kHashFrom) {
    PairMap seen;
    end = std::remove_if(values.begin(), values.end(),
                         [&](uint32_t v) { return !seen.tryEmplace(0, v, 0).second; });
  }
  std::sort(values.begin(), end);
  return static_cast<size_t>(std::unique(values.begin(), end) - values.begin());
}

} // namespace shapetrace::analyzer
