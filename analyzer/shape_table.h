// Interning of shapes (Def. 5.2/5.3) and of the exact-sequence DAG nodes of Reiss & Renieris' "Dag
// Compaction": one mechanism, two kinds of key.
//
// A node is a base function and a list of child node ids. For shapes the list is the *set* of the
// children's shapes (sorted, without repeats; the null shape, always a member by Def. 5.2, is
// implicit), for DAG nodes it is the exact *sequence* of the children's nodes. Ids are dense and
// given in order of first appearance: id 0 is the null shape, the first interned node gets 1. A
// child is always interned before its parent, so every child id is smaller than its parent's id.
//
// Interning a finished call costs one hash of its child list and one probe of an open-addressing
// table; memory grows with the number of distinct nodes, never with the number of calls.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace shapetrace::analyzer {

using ShapeId = uint32_t;
inline constexpr ShapeId kNullShape = 0;
// The fictitious base function of null when it is compared with a shape (Listing 5.4: -1).
inline constexpr int64_t kNullFunction = -1;

class ShapeTable {
public:
  ShapeTable();

  // The id of the node (function, children), interned if new. `children` must already be in the
  // table's canonical form: for shapes sorted and unique with no kNullShape; for sequences, as is.
  ShapeId intern(uint32_t function, std::span<const ShapeId> children);
  // The id of (function, children) when already interned, kNullShape otherwise.
  ShapeId find(uint32_t function, std::span<const ShapeId> children) const;

  // Number of ids, the null shape included (so the first real node is id 1).
  size_t size() const { return nodes_.size(); }
  uint32_t function(ShapeId id) const { return nodes_[id].function; }
  std::span<const ShapeId> children(ShapeId id) const {
    return {pool_.data() + nodes_[id].child_offset, nodes_[id].child_count};
  }
  // Def. 5.2: null has depth 0, [f, {null}] depth 1, otherwise 1 + the deepest child.
  uint32_t depth(ShapeId id) const { return nodes_[id].depth; }
  // [f, {null}]: a call without children. Tables 1 and 2 leave these out.
  bool isLeaf(ShapeId id) const { return id != kNullShape && nodes_[id].child_count == 0; }

  size_t memoryBytes() const;

private:
  struct Node {
    uint64_t hash;
    uint32_t function;
    uint32_t depth;
    uint64_t child_offset;
    uint32_t child_count;
  };
  static uint64_t hashOf(uint32_t function, std::span<const ShapeId> children);
  bool equals(const Node& node, uint32_t function, std::span<const ShapeId> children) const;
  void rehash();
  uint64_t slotOf(uint64_t hash, uint32_t function, std::span<const ShapeId> children) const;

  std::vector<Node> nodes_;
  std::vector<ShapeId> pool_;
  // Open addressing, linear probing. A slot holds a node id (low 32 bits; kNullShape: empty) and
  // the high 32 bits of the node's hash, so a probe that does not match is rejected without
  // touching the node (a cache miss once the table outgrows the caches).
  std::vector<uint64_t> slots_;
  uint64_t mask_ = 0;
};

// Brings a shape's child list into canonical form in place (sort, drop repeats and null) and
// returns the new size.
size_t canonicalizeChildSet(std::span<ShapeId> children);

} // namespace shapetrace::analyzer
