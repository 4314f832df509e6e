// The ordered index of the key-value store: an in-memory B+tree of 64-bit keys and string values.
//
// Leaves hold the entries and are linked left to right for range scans; internal nodes hold
// separators (child i holds the keys k with separators[i-1] <= k < separators[i]). An insert into
// a full leaf splits it and may split its ancestors up to the root, which is where a put becomes
// slow. Deletes and evictions shrink leaves without merging them (as many in-memory stores do):
// leaves never move between key ranges, so a leaf's fences stay exact, which the checkpoint relies
// on. Every leaf is a "page": it has an id and a dirty bit that the flusher clears when it writes
// the page out. Entries carry a CLOCK reference bit that reads set and the evictor sweeps.
//
// The tree is not thread-safe; Store wraps it with a reader-writer lock. The one exception is the
// reference bit, which readers holding a shared lock set with a relaxed atomic store.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace kv {

using Key = std::uint64_t;
using PageId = std::uint64_t;

// Bytes charged to the memory budget for one entry besides its value: the key, the std::string
// header and the reference bit, rounded to what a leaf slot really costs.
inline constexpr std::size_t kEntryOverhead = 48;

struct Entry {
  Key key = 0;
  std::string value;
  std::uint8_t referenced = 0; // CLOCK bit: set by reads and writes, cleared by the evictor
};

// A serialisable image of one leaf: its id, the key range it owns (both ends inclusive) and its
// entries in key order. A later image of the same range supersedes every earlier one.
struct PageImage {
  PageId page_id = 0;
  Key low = 0;
  Key high = 0;
  std::vector<std::pair<Key, std::string>> entries;
};

struct BTreeCounters {
  std::uint64_t leaf_splits = 0;
  std::uint64_t internal_splits = 0;
  std::uint64_t root_splits = 0;
  std::uint64_t evicted_entries = 0;
};

// What one CLOCK sweep did.
struct SweepResult {
  std::size_t freed_bytes = 0;
  std::size_t evicted = 0;
  std::size_t examined = 0;
};

class BTree {
public:
  // leaf_capacity: entries per leaf; fanout: children per internal node. Both at least 4.
  explicit BTree(std::size_t leaf_capacity = 64, std::size_t fanout = 64);
  ~BTree();
  BTree(const BTree&) = delete;
  BTree& operator=(const BTree&) = delete;

  // Returns a pointer to the value (valid until the next modification) or nullptr, and sets the
  // entry's reference bit.
  const std::string* find(Key key) const;
  // Inserts or replaces. Returns true when the key was new.
  bool insert(Key key, std::string value);
  // Returns true when the key was present.
  bool erase(Key key);
  // Calls visit for up to limit entries with keys >= start, in key order; returns how many.
  std::size_t scan(Key start, std::size_t limit,
                   const std::function<void(Key, std::string_view)>& visit) const;

  // Advances the CLOCK hand from *cursor: entries with the reference bit set get a second chance
  // (the bit is cleared), the others are evicted, until bytes_to_free are freed or max_examined
  // entries were looked at. The hand wraps around at the end of the key space; *cursor is left at
  // the next entry to examine.
  SweepResult sweepClock(Key* cursor, std::size_t bytes_to_free, std::size_t max_examined);

  // Images of the dirty leaves (or of every leaf), left to right; their dirty bits are cleared.
  std::vector<PageImage> takeDirtyPages(bool all_pages);

  std::size_t size() const { return size_; }
  std::size_t memoryBytes() const { return memory_bytes_; }
  std::size_t dirtyPages() const { return dirty_pages_; }
  std::size_t leafCount() const { return leaf_count_; }
  std::size_t height() const;
  const BTreeCounters& counters() const { return counters_; }

  // Checks every structural invariant (sorted keys, separators bounding their children, uniform
  // depth, leaf links, size and memory accounting). Returns an empty string or what is wrong.
  std::string checkInvariants() const;

  static std::size_t entryCost(std::size_t value_size) { return kEntryOverhead + value_size; }

private:
  struct Node;
  struct Split;

  Node* leafFor(Key key) const;
  Split insertInto(Node* node, Key key, std::string&& value, bool* inserted);
  Split insertIntoLeaf(Node* leaf, Key key, std::string&& value, bool* inserted);
  Split splitLeaf(Node* leaf);
  Split splitInternal(Node* node);
  void growRoot(Split split);
  void markDirty(Node* leaf);
  std::size_t sweepLeaf(Node* leaf, std::size_t start, std::size_t bytes_to_free,
                        std::size_t max_examined, SweepResult* result);
  void collectPages(Node* node, Key low, Key high, bool all_pages, std::vector<PageImage>* out);
  std::string checkNode(const Node* node, Key low, Key high, bool has_high, std::size_t depth,
                        std::size_t* leaf_depth, std::size_t* entries, std::size_t* bytes) const;
  std::unique_ptr<Node> newNode(bool is_leaf);

  std::size_t leaf_capacity_;
  std::size_t fanout_;
  std::unique_ptr<Node> root_;
  std::size_t size_ = 0;
  std::size_t memory_bytes_ = 0;
  std::size_t dirty_pages_ = 0;
  std::size_t leaf_count_ = 0;
  PageId next_page_id_ = 1;
  BTreeCounters counters_;
};

} // namespace kv
