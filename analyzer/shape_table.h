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
// table; memory grows with the number of distinct nodes, never with the number of calls. The DAG
// of a long run outgrows the caches, so the look-up is shaped to miss as little as possible:
// - a node without children (most calls) is found by its function in a plain array, no hashing;
// - a slot points straight at the node's record, which holds the id, the function and the
//   children side by side: a hit reads the slot and one record, usually one cache line;
// - the hash is a separate step (Key) so that the caller can prefetch the slot and do other work
//   while it arrives;
// - each record keeps its node's hash, so growing the table never recomputes one.
//
// The hash is the caller's choice, provided equal keys always get equal hashes and one table sees
// one kind: keyOf() hashes the child ids; the DAG uses a Merkle hash (of the children's hashes),
// which a call's parent can compute before the child's id is known, and which any thread and
// the merge compute alike from the structure alone.
#pragma once

#include "growable_array.h"
#include "huge_page_allocator.h"
#include "id_table.h"

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
  // A node's identity and its hash, computed once.
  struct Key {
    uint32_t function;
    std::span<const ShapeId> children;
    uint64_t hash;
  };

  // The hash of a node, built one child at a time: a call's DAG children arrive one by one, so
  // its hash is ready (and its slot can be prefetched) before the call ends.
  class Hash {
  public:
    explicit Hash(uint32_t function) : h_((uint64_t{function} + 1) * kMul) {}
    void add(uint64_t child) {
      h_ = (h_ ^ child) * kMul;
      h_ ^= h_ >> 29;
    }
    // Final avalanche (from MurmurHash3's fmix64): the table uses the low bits, the tag the high.
    uint64_t value(size_t child_count) const {
      uint64_t h = h_ ^ (child_count * kMul);
      h ^= h >> 33;
      h *= 0xff51afd7ed558ccdull;
      h ^= h >> 33;
      return h;
    }

  private:
    static constexpr uint64_t kMul = 0x9E3779B97F4A7C15ull;
    uint64_t h_;
  };

  // Whether nodes know their depth: shapes need it (Def. 5.2, clustering); the DAG does not, and
  // finding it costs a look-up of every child of every new node, in tables that outgrow the caches.
  enum class Depth : bool { kNotKept, kKept };
  explicit ShapeTable(Depth depth = Depth::kKept);

  // `children` must already be in the table's canonical form: for shapes sorted and unique with
  // no kNullShape; for sequences, as is.
  static Key keyOf(uint32_t function, std::span<const ShapeId> children);
  // The key when its hash was built along the way.
  static Key keyOf(uint32_t function, std::span<const ShapeId> children, const Hash& hash) {
    return {function, children, hash.value(children.size())};
  }
  // Starts loading the slot a node with this hash will probe; intern or find it a little later.
  void prefetch(uint64_t hash) const { __builtin_prefetch(&slots_[hash & mask_]); }
  // Once that slot is in cache: starts loading the record it points to when the tag matches (the
  // node is most likely there), so the comparison does not wait for it either.
  void prefetchRecord(uint64_t hash) const;
  // Makes room for `nodes` more nodes with `child_ids` child ids in all, so that interning them
  // never grows the table.
  void reserve(size_t nodes, size_t child_ids);
  // The id of the node, interned if new.
  ShapeId intern(const Key& key);
  ShapeId intern(uint32_t function, std::span<const ShapeId> children) {
    return intern(keyOf(function, children));
  }
  // The id of the node when already interned, kNullShape otherwise.
  ShapeId find(const Key& key) const;
  ShapeId find(uint32_t function, std::span<const ShapeId> children) const {
    return find(keyOf(function, children));
  }
  // intern() and find() for a table built with Depth::kNotKept, whose nodes each keep a word of
  // the owner's (the DAG keeps the node's shape there): the node, whether it was just added (its
  // word is then 0), and where its word is, until the next node is added.
  struct Node {
    ShapeId id = kNullShape;
    bool added = false;
    uint32_t* payload = nullptr;
  };
  Node internNode(const Key& key);
  Node findNode(const Key& key);
  uint32_t payload(ShapeId id) const { return *wordOf(id); }

  // Number of ids, the null shape included (so the first real node is id 1).
  size_t size() const { return record_of_.size(); }
  // Child ids over all nodes (what reserve() takes).
  size_t childIds() const { return records_.size() - record_of_.size() * kHeaderWords; }
  uint32_t function(ShapeId id) const { return records_[record_of_[id] + kFunction]; }
  std::span<const ShapeId> children(ShapeId id) const {
    const uint64_t at = record_of_[id];
    return {records_.data() + at + kHeaderWords, records_[at + kChildCount]};
  }
  // Def. 5.2: null has depth 0, [f, {null}] depth 1, otherwise 1 + the deepest child. Only for a
  // table built with Depth::kKept (the word is the owner's otherwise, see payload()).
  uint32_t depth(ShapeId id) const { return *wordOf(id); }
  // The hash the node was interned with (0 for null).
  uint64_t hash(ShapeId id) const {
    const uint32_t* r = records_.data() + record_of_[id];
    return uint64_t{r[kHashHigh]} << 32 | r[kHashLow];
  }
  // [f, {null}]: a call without children. Tables 1 and 2 leave these out.
  bool isLeaf(ShapeId id) const {
    return id != kNullShape && records_[record_of_[id] + kChildCount] == 0;
  }

  size_t memoryBytes() const;

private:
  // A record in records_: its header words, then the child ids.
  static constexpr unsigned kId = 0, kFunction = 1, kDepth = 2, kChildCount = 3, kHashLow = 4,
                            kHashHigh = 5, kHeaderWords = 6;

  // The node's depth, or payload, word.
  const uint32_t* wordOf(ShapeId id) const { return records_.data() + record_of_[id] + kDepth; }
  uint32_t* wordOf(ShapeId id) { return records_.data() + record_of_[id] + kDepth; }
  ShapeId leafOf(uint32_t function) const {
    const ShapeId* leaf = leaf_of_function_.find(function);
    return leaf != nullptr ? *leaf : kNullShape;
  }
  bool equals(uint64_t record, const Key& key) const;
  uint64_t slotOf(const Key& key) const;
  ShapeId add(const Key& key);
  void rehash(size_t slot_count);

  GrowableArray<uint32_t> records_;   // every node's record, in id order; the null node's first
  GrowableArray<uint64_t> record_of_; // id -> offset of its record in records_
  IdTable<ShapeId> leaf_of_function_; // function -> its [f, {null}] node
  // Open addressing, linear probing, for nodes with children. A slot holds the high bits of the
  // node's hash (kTagShift and up) and the offset of its record (below); 0 is an empty slot (no
  // record with children sits at offset 0, the null node's). A probe that does not match is
  // rejected by the tag, without touching the record.
  HugePageVector<uint64_t> slots_;
  uint64_t mask_ = 0;
  Depth depth_;
};

// Brings a shape's child list into canonical form in place (sort, drop repeats and null) and
// returns the new size.
size_t canonicalizeChildSet(std::span<ShapeId> children);

// Sorts `values` and drops repeats, in place; returns how many distinct values lead it. A long
// list with few distinct values (a thread's loop's children) is filtered through a hash set
// before the sort: linear in its length rather than n log n.
size_t sortDistinct(std::span<uint32_t> values);

} // namespace shapetrace::analyzer
