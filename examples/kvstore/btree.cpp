// The B+tree: descent, insertion with leaf and internal splits, deletion, range scans, the CLOCK
// eviction sweep over the linked leaves, and page images for the checkpoint.
#include "btree.h"

#include <algorithm>
#include <atomic>
#include <limits>
#include <stdexcept>

namespace kv {

struct BTree::Node {
  bool is_leaf;
  bool dirty = false;
  PageId page_id;
  // Internal nodes: children.size() == separators.size() + 1.
  std::vector<Key> separators;
  std::vector<std::unique_ptr<Node>> children;
  // Leaves: entries in key order, and the next leaf to the right.
  std::vector<Entry> entries;
  Node* next = nullptr;

  Node(bool leaf, PageId id) : is_leaf(leaf), page_id(id) {}

  std::size_t childIndex(Key key) const {
    return static_cast<std::size_t>(
        std::upper_bound(separators.begin(), separators.end(), key) - separators.begin());
  }
  std::vector<Entry>::iterator lowerBound(Key key) {
    return std::lower_bound(entries.begin(), entries.end(), key,
                            [](const Entry& e, Key k) { return e.key < k; });
  }
};

// The result of inserting into a subtree: empty, or the new right sibling and the first key it
// owns, to be linked into the parent.
struct BTree::Split {
  Key separator = 0;
  std::unique_ptr<Node> right;
};

namespace {

// Readers set the reference bit under a shared lock, possibly several at once: a relaxed atomic
// store makes that race-free without making Entry non-movable.
void touch(const Entry& entry) {
  std::atomic_ref<std::uint8_t>(const_cast<std::uint8_t&>(entry.referenced))
      .store(1, std::memory_order_relaxed);
}

} // namespace

BTree::BTree(std::size_t leaf_capacity, std::size_t fanout)
    : leaf_capacity_(leaf_capacity), fanout_(fanout) {
  if (leaf_capacity < 4 || fanout < 4)
    throw std::invalid_argument("B-tree leaf capacity and fanout must be at least 4");
  root_ = newNode(true);
}

BTree::~BTree() = default;

std::unique_ptr<BTree::Node> BTree::newNode(bool is_leaf) {
  if (is_leaf)
    ++leaf_count_;
  return std::make_unique<Node>(is_leaf, next_page_id_++);
}

BTree::Node* BTree::leafFor(Key key) const {
  Node* node = root_.get();
  while (!node->is_leaf)
    node = node->children[node->childIndex(key)].get();
  return node;
}

std::size_t BTree::height() const {
  std::size_t levels = 1;
  for (const Node* node = root_.get(); !node->is_leaf; node = node->children.front().get())
    ++levels;
  return levels;
}

void BTree::markDirty(Node* leaf) {
  if (!leaf->dirty) {
    leaf->dirty = true;
    ++dirty_pages_;
  }
}

const std::string* BTree::find(Key key) const {
  Node* leaf = leafFor(key);
  auto it = leaf->lowerBound(key);
  if (it == leaf->entries.end() || it->key != key)
    return nullptr;
  touch(*it);
  return &it->value;
}

bool BTree::insert(Key key, std::string value) {
  bool inserted = false;
  Split split = insertInto(root_.get(), key, std::move(value), &inserted);
  if (split.right)
    growRoot(std::move(split));
  return inserted;
}

BTree::Split BTree::insertInto(Node* node, Key key, std::string&& value, bool* inserted) {
  if (node->is_leaf)
    return insertIntoLeaf(node, key, std::move(value), inserted);
  std::size_t index = node->childIndex(key);
  Split child_split = insertInto(node->children[index].get(), key, std::move(value), inserted);
  if (!child_split.right)
    return {};
  node->separators.insert(node->separators.begin() + static_cast<std::ptrdiff_t>(index),
                          child_split.separator);
  node->children.insert(node->children.begin() + static_cast<std::ptrdiff_t>(index) + 1,
                        std::move(child_split.right));
  if (node->children.size() > fanout_)
    return splitInternal(node);
  return {};
}

BTree::Split BTree::insertIntoLeaf(Node* leaf, Key key, std::string&& value, bool* inserted) {
  markDirty(leaf);
  auto it = leaf->lowerBound(key);
  if (it != leaf->entries.end() && it->key == key) {
    memory_bytes_ = memory_bytes_ - it->value.size() + value.size();
    it->value = std::move(value);
    it->referenced = 1;
    *inserted = false;
    return {};
  }
  memory_bytes_ += entryCost(value.size());
  leaf->entries.insert(it, Entry{key, std::move(value), 1});
  ++size_;
  *inserted = true;
  if (leaf->entries.size() > leaf_capacity_)
    return splitLeaf(leaf);
  return {};
}

// Moves the upper half of an overfull leaf into a new right sibling. Both halves are dirty: the
// checkpoint must record that the left page no longer owns the right half's range.
BTree::Split BTree::splitLeaf(Node* leaf) {
  ++counters_.leaf_splits;
  std::unique_ptr<Node> right = newNode(true);
  std::size_t half = leaf->entries.size() / 2;
  right->entries.assign(std::make_move_iterator(leaf->entries.begin() + static_cast<std::ptrdiff_t>(half)),
                        std::make_move_iterator(leaf->entries.end()));
  leaf->entries.resize(half);
  right->next = leaf->next;
  leaf->next = right.get();
  markDirty(right.get());
  Key separator = right->entries.front().key;
  return {separator, std::move(right)};
}

// Moves the upper half of an overfull internal node's children into a new sibling; the middle
// separator moves up to the parent.
BTree::Split BTree::splitInternal(Node* node) {
  ++counters_.internal_splits;
  std::unique_ptr<Node> right = newNode(false);
  std::size_t half = node->children.size() / 2;
  Key separator = node->separators[half - 1];
  right->separators.assign(node->separators.begin() + static_cast<std::ptrdiff_t>(half),
                           node->separators.end());
  right->children.assign(
      std::make_move_iterator(node->children.begin() + static_cast<std::ptrdiff_t>(half)),
      std::make_move_iterator(node->children.end()));
  node->separators.resize(half - 1);
  node->children.resize(half);
  return {separator, std::move(right)};
}

void BTree::growRoot(Split split) {
  ++counters_.root_splits;
  std::unique_ptr<Node> root = newNode(false);
  root->separators.push_back(split.separator);
  root->children.push_back(std::move(root_));
  root->children.push_back(std::move(split.right));
  root_ = std::move(root);
}

bool BTree::erase(Key key) {
  Node* leaf = leafFor(key);
  auto it = leaf->lowerBound(key);
  if (it == leaf->entries.end() || it->key != key)
    return false;
  memory_bytes_ -= entryCost(it->value.size());
  leaf->entries.erase(it);
  --size_;
  markDirty(leaf);
  return true;
}

std::size_t BTree::scan(Key start, std::size_t limit,
                        const std::function<void(Key, std::string_view)>& visit) const {
  std::size_t visited = 0;
  Node* leaf = leafFor(start);
  auto it = leaf->lowerBound(start);
  while (leaf && visited < limit) {
    for (; it != leaf->entries.end() && visited < limit; ++it, ++visited) {
      touch(*it);
      visit(it->key, it->value);
    }
    leaf = leaf->next;
    if (leaf)
      it = leaf->entries.begin();
  }
  return visited;
}

SweepResult BTree::sweepClock(Key* cursor, std::size_t bytes_to_free, std::size_t max_examined) {
  SweepResult result;
  Node* leaf = leafFor(*cursor);
  std::size_t start = static_cast<std::size_t>(leaf->lowerBound(*cursor) - leaf->entries.begin());
  std::size_t examined_at_wrap = std::numeric_limits<std::size_t>::max();
  while (result.freed_bytes < bytes_to_free && result.examined < max_examined) {
    std::size_t stopped_at = sweepLeaf(leaf, start, bytes_to_free, max_examined, &result);
    if (stopped_at < leaf->entries.size()) {
      *cursor = leaf->entries[stopped_at].key;
      return result;
    }
    leaf = leaf->next;
    start = 0;
    if (!leaf) {
      // A full turn of the hand that examined nothing means there is nothing left to evict.
      if (result.examined == examined_at_wrap)
        break;
      examined_at_wrap = result.examined;
      leaf = leafFor(0);
    }
  }
  // Leave the hand on the next entry, skipping leaves that deletions emptied.
  for (; leaf && start >= leaf->entries.size(); leaf = leaf->next)
    start = 0;
  *cursor = leaf ? leaf->entries[start].key : 0;
  return result;
}

// Sweeps one leaf from entry `start`; returns the index (after compaction) of the first entry it
// did not examine, or the leaf's size when it examined them all.
std::size_t BTree::sweepLeaf(Node* leaf, std::size_t start, std::size_t bytes_to_free,
                             std::size_t max_examined, SweepResult* result) {
  std::vector<Entry>& entries = leaf->entries;
  std::size_t write = start;
  std::size_t stopped_at = entries.size();
  for (std::size_t read = start; read < entries.size(); ++read) {
    Entry& entry = entries[read];
    bool done = result->freed_bytes >= bytes_to_free || result->examined >= max_examined;
    if (done && stopped_at == entries.size())
      stopped_at = write;
    bool evict = false;
    if (!done) {
      ++result->examined;
      if (entry.referenced)
        entry.referenced = 0; // second chance
      else
        evict = true;
    }
    if (evict) {
      std::size_t cost = entryCost(entry.value.size());
      result->freed_bytes += cost;
      memory_bytes_ -= cost;
      ++result->evicted;
    } else {
      if (write != read)
        entries[write] = std::move(entry);
      ++write;
    }
  }
  std::size_t evicted_here = entries.size() - write;
  if (evicted_here > 0) {
    entries.resize(write);
    size_ -= evicted_here;
    counters_.evicted_entries += evicted_here;
    markDirty(leaf);
  }
  return std::min(stopped_at, entries.size());
}

std::vector<PageImage> BTree::takeDirtyPages(bool all_pages) {
  std::vector<PageImage> pages;
  collectPages(root_.get(), 0, std::numeric_limits<Key>::max(), all_pages, &pages);
  return pages;
}

// Walks the tree carrying each subtree's key range so that every leaf image gets exact fences.
void BTree::collectPages(Node* node, Key low, Key high, bool all_pages,
                         std::vector<PageImage>* out) {
  if (node->is_leaf) {
    if (!node->dirty && !all_pages)
      return;
    PageImage image{node->page_id, low, high, {}};
    image.entries.reserve(node->entries.size());
    for (const Entry& entry : node->entries)
      image.entries.emplace_back(entry.key, entry.value);
    out->push_back(std::move(image));
    if (node->dirty) {
      node->dirty = false;
      --dirty_pages_;
    }
    return;
  }
  for (std::size_t i = 0; i < node->children.size(); ++i) {
    Key child_low = i == 0 ? low : node->separators[i - 1];
    Key child_high = i + 1 < node->children.size() ? node->separators[i] - 1 : high;
    collectPages(node->children[i].get(), child_low, child_high, all_pages, out);
  }
}

std::string BTree::checkInvariants() const {
  std::size_t leaf_depth = 0;
  std::size_t entries = 0;
  std::size_t bytes = 0;
  std::string error =
      checkNode(root_.get(), 0, 0, false, 1, &leaf_depth, &entries, &bytes);
  if (!error.empty())
    return error;
  if (entries != size_)
    return "size() is " + std::to_string(size_) + " but the leaves hold " + std::to_string(entries);
  if (bytes != memory_bytes_)
    return "memoryBytes() is " + std::to_string(memory_bytes_) + " but the entries cost " +
           std::to_string(bytes);
  // The leaf chain must visit every entry once, in strictly increasing key order.
  std::size_t chained = 0;
  bool first = true;
  Key previous = 0;
  for (const Node* leaf = leafFor(0); leaf; leaf = leaf->next) {
    for (const Entry& entry : leaf->entries) {
      if (!first && entry.key <= previous)
        return "leaf chain out of order at key " + std::to_string(entry.key);
      previous = entry.key;
      first = false;
      ++chained;
    }
  }
  if (chained != size_)
    return "the leaf chain holds " + std::to_string(chained) + " entries, not " +
           std::to_string(size_);
  return {};
}

std::string BTree::checkNode(const Node* node, Key low, Key high, bool has_high, std::size_t depth,
                             std::size_t* leaf_depth, std::size_t* entries,
                             std::size_t* bytes) const {
  auto in_range = [&](Key key) { return key >= low && (!has_high || key < high); };
  if (node->is_leaf) {
    if (*leaf_depth == 0)
      *leaf_depth = depth;
    if (depth != *leaf_depth)
      return "leaves at different depths";
    if (node->entries.size() > leaf_capacity_)
      return "overfull leaf " + std::to_string(node->page_id);
    for (std::size_t i = 0; i < node->entries.size(); ++i) {
      const Entry& entry = node->entries[i];
      if (!in_range(entry.key))
        return "key " + std::to_string(entry.key) + " outside its leaf's range";
      if (i > 0 && node->entries[i - 1].key >= entry.key)
        return "leaf " + std::to_string(node->page_id) + " not sorted";
      *bytes += entryCost(entry.value.size());
    }
    *entries += node->entries.size();
    return {};
  }
  if (node->children.size() != node->separators.size() + 1 || node->children.size() < 2)
    return "internal node " + std::to_string(node->page_id) + " has a bad child count";
  if (node->children.size() > fanout_)
    return "overfull internal node " + std::to_string(node->page_id);
  for (std::size_t i = 0; i < node->children.size(); ++i) {
    Key child_low = i == 0 ? low : node->separators[i - 1];
    bool child_has_high = i + 1 < node->children.size() || has_high;
    Key child_high = i + 1 < node->children.size() ? node->separators[i] : high;
    if (i > 0 && !in_range(child_low))
      return "separator outside its node's range";
    std::string error = checkNode(node->children[i].get(), child_low, child_high, child_has_high,
                                  depth + 1, leaf_depth, entries, bytes);
    if (!error.empty())
      return error;
  }
  return {};
}

} // namespace kv
