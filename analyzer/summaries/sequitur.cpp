// Sequitur: digram index, substitution, rule utility.
#include "summaries/sequitur.h"

#include "summaries/symbols.h"

#include <stdexcept>

namespace shapetrace::analyzer::summaries {

BracketProfile BracketProfile::ofTerminal(uint32_t terminal) {
  return isOpenSymbol(terminal) ? BracketProfile{1, 0} : BracketProfile{-1, -1};
}

std::vector<uint32_t> expand(const Grammar& grammar, uint32_t rule) {
  std::vector<uint32_t> out;
  // Iterative: a grammar can nest deeply.
  struct Frame {
    uint32_t rule;
    size_t at;
  };
  std::vector<Frame> stack{{rule, 0}};
  while (!stack.empty()) {
    Frame& f = stack.back();
    const auto& body = grammar.rules[f.rule];
    if (f.at == body.size()) {
      stack.pop_back();
      continue;
    }
    const GrammarSymbol s = body[f.at++];
    if (isRuleRef(s))
      stack.push_back({ruleIndex(s), 0});
    else
      out.push_back(s);
  }
  return out;
}

// ---- the digram index

namespace {
uint64_t mix(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 33;
  return h;
}
} // namespace

size_t Sequitur::DigramIndex::home(uint64_t key) const {
  return static_cast<size_t>(mix(key)) & (slots_.size() - 1);
}

uint32_t Sequitur::DigramIndex::find(uint64_t key) const {
  if (slots_.empty()) return kNone;
  const size_t mask = slots_.size() - 1;
  for (size_t i = home(key);; i = (i + 1) & mask) {
    if (slots_[i].key == key) return slots_[i].node;
    if (slots_[i].key == kEmpty) return kNone;
  }
}

void Sequitur::DigramIndex::set(uint64_t key, uint32_t node) {
  if ((size_ + 1) * 2 > slots_.size()) grow();
  const size_t mask = slots_.size() - 1;
  for (size_t i = home(key);; i = (i + 1) & mask) {
    if (slots_[i].key == key) {
      slots_[i].node = node;
      return;
    }
    if (slots_[i].key == kEmpty) {
      slots_[i] = {key, node};
      ++size_;
      return;
    }
  }
}

void Sequitur::DigramIndex::eraseIf(uint64_t key, uint32_t node) {
  if (slots_.empty()) return;
  const size_t mask = slots_.size() - 1;
  size_t i = home(key);
  for (;; i = (i + 1) & mask) {
    if (slots_[i].key == kEmpty) return;
    if (slots_[i].key == key) break;
  }
  if (slots_[i].node != node) return;
  // Backward shift: move later entries of the probe sequence into the hole.
  for (size_t j = i;;) {
    j = (j + 1) & mask;
    if (slots_[j].key == kEmpty) break;
    const size_t k = home(slots_[j].key);
    const bool stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
    if (stays) continue;
    slots_[i] = slots_[j];
    i = j;
  }
  slots_[i].key = kEmpty;
  --size_;
}

void Sequitur::DigramIndex::grow() {
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(old.empty() ? 64 : old.size() * 2, Slot{kEmpty, kNone});
  size_ = 0;
  for (const Slot& s : old)
    if (s.key != kEmpty) set(s.key, s.node);
}

void Sequitur::DigramIndex::clear() {
  for (Slot& s : slots_)
    s.key = kEmpty;
  size_ = 0;
}

// ---- the grammar

Sequitur::Sequitur(Options options) : options_(options) { clear(); }

void Sequitur::clear() {
  nodes_.clear();
  free_nodes_ = kNone;
  rules_.clear();
  free_rules_.clear();
  index_.clear();
  symbols_ = 0;
  live_rules_ = 0;
  length_ = 0;
  newRule(); // S
}

uint32_t Sequitur::newNode(uint32_t value) {
  uint32_t node;
  if (free_nodes_ != kNone) {
    node = free_nodes_;
    free_nodes_ = nodes_[node].next;
  } else {
    if (nodes_.size() >= kGuard) throw std::length_error("Sequitur: grammar too large");
    node = static_cast<uint32_t>(nodes_.size());
    nodes_.push_back({});
  }
  nodes_[node] = {value, kNone, kNone};
  if (isRuleRef(value)) ++rules_[ruleIndex(value)].uses;
  return node;
}

uint32_t Sequitur::newRule() {
  uint32_t rule;
  if (!free_rules_.empty()) {
    rule = free_rules_.back();
    free_rules_.pop_back();
  } else {
    rule = static_cast<uint32_t>(rules_.size());
    rules_.push_back({});
  }
  const uint32_t guard = newNode(kGuard | rule);
  nodes_[guard].prev = nodes_[guard].next = guard;
  rules_[rule] = {guard, 0, {}};
  ++live_rules_;
  return rule;
}

BracketProfile Sequitur::profileOf(uint32_t v) const {
  return isRuleRef(v) ? rules_[ruleIndex(v)].profile : BracketProfile::ofTerminal(v);
}

bool Sequitur::considered(uint32_t node) const {
  if (!options_.balanced) return true;
  return profileOf(value(node)).then(profileOf(value(next(node)))).low >= 0;
}

void Sequitur::deleteDigram(uint32_t node) {
  if (isGuard(node) || isGuard(next(node))) return;
  index_.eraseIf(digramKey(node), node);
}

void Sequitur::indexDigram(uint32_t node) {
  if (isGuard(node) || isGuard(next(node)) || !considered(node)) return;
  index_.set(digramKey(node), node);
}

void Sequitur::join(uint32_t left, uint32_t right) {
  if (next(left) != kNone) {
    deleteDigram(left);
    // Of the overlapping digrams of a triple ("bbb") only the first is indexed; when one of them
    // goes, the other must be indexed again, or a later "bb" would not be found (abbbabcbb).
    const uint32_t rp = prev(right), rn = next(right);
    if (rp != kNone && rn != kNone && value(right) == value(rp) && value(right) == value(rn))
      indexDigram(right);
    const uint32_t lp = prev(left), ln = next(left);
    if (lp != kNone && ln != kNone && value(left) == value(ln) && value(left) == value(lp))
      indexDigram(lp);
  }
  next(left) = right;
  prev(right) = left;
}

void Sequitur::insertAfter(uint32_t node, uint32_t inserted) {
  join(inserted, next(node));
  join(node, inserted);
}

void Sequitur::removeNode(uint32_t node) {
  join(prev(node), next(node));
  if (!isGuard(node)) {
    deleteDigram(node);
    if (isRuleRef(value(node))) --rules_[ruleIndex(value(node))].uses;
    --symbols_;
  }
  nodes_[node].next = free_nodes_;
  free_nodes_ = node;
}

bool Sequitur::push(uint32_t terminal) {
  if (symbols_ >= options_.max_symbols) return false;
  ++length_;
  ++symbols_;
  const uint32_t node = newNode(terminal);
  const uint32_t tail = last(0);
  insertAfter(tail, node);
  check(tail);
  return true;
}

// The digram starting at `node`: indexed if new; replaced by a rule if it repeats.
bool Sequitur::check(uint32_t node) {
  if (isGuard(node) || isGuard(next(node)) || !considered(node)) return false;
  const uint64_t key = digramKey(node);
  const uint32_t other = index_.find(key);
  if (other == kNone) {
    index_.set(key, node);
    return false;
  }
  if (other == node || next(other) == node || next(node) == other) return false; // overlap
  uint32_t rule;
  if (isGuard(prev(other)) && isGuard(next(next(other)))) {
    // The repeat is a whole rule: use it.
    rule = value(prev(other)) & ~kGuard;
    substitute(node, rule);
  } else {
    rule = newRule();
    const uint32_t a = value(node), b = value(next(node));
    rules_[rule].profile = profileOf(a).then(profileOf(b));
    insertAfter(last(rule), newNode(a));
    insertAfter(last(rule), newNode(b));
    symbols_ += 2;
    substitute(other, rule);
    substitute(node, rule);
    index_.set(digramKey(first(rule)), first(rule));
  }
  expandUnderused(rule);
  return true;
}

void Sequitur::substitute(uint32_t node, uint32_t rule) {
  const uint32_t before = prev(node);
  removeNode(next(before));
  removeNode(next(before));
  const uint32_t reference = newNode(kRuleRef | rule);
  ++symbols_;
  insertAfter(before, reference);
  if (!check(before)) check(next(before));
}

// Rule utility: the two uses of each symbol of the replaced digram became one (in the rule), so a
// rule at either end of it may now be used only there.
void Sequitur::expandUnderused(uint32_t rule) {
  if (rules_[rule].guard == kNone) return;
  const uint32_t head = first(rule);
  if (isRuleRef(value(head)) && rules_[ruleIndex(value(head))].uses == 1) expand(head);
  if (rules_[rule].guard == kNone) return;
  const uint32_t tail = last(rule);
  if (!isGuard(tail) && isRuleRef(value(tail)) && rules_[ruleIndex(value(tail))].uses == 1)
    expand(tail);
}

// `node` is its rule's last use: the rule's body takes its place and the rule goes.
void Sequitur::expand(uint32_t node) {
  const uint32_t left = prev(node), right = next(node);
  const uint32_t rule = ruleIndex(value(node));
  const uint32_t guard = rules_[rule].guard;
  const uint32_t head = next(guard), tail = prev(guard);
  deleteDigram(left);
  deleteDigram(node);
  // Unlink without the bookkeeping of removeNode: the rule's body moves, it is not deleted.
  nodes_[node].next = free_nodes_;
  free_nodes_ = node;
  --symbols_;
  nodes_[guard].next = free_nodes_;
  free_nodes_ = guard;
  rules_[rule] = {};
  free_rules_.push_back(rule);
  --live_rules_;
  next(left) = head;
  prev(head) = left;
  next(tail) = right;
  prev(right) = tail;
  indexDigram(left);
  indexDigram(tail);
}

Grammar Sequitur::grammar() const {
  Grammar out;
  std::vector<uint32_t> number(rules_.size(), kNone); // rule -> its number in `out`
  number[0] = 0;
  out.rules.emplace_back();
  // Post-order from S: a rule is numbered once every rule of its body is.
  uint32_t next_number = 1;
  struct Frame {
    uint32_t rule;
    uint32_t at; // node
  };
  std::vector<Frame> stack{{0, first(0)}};
  std::vector<uint32_t> order; // rules in post-order
  while (!stack.empty()) {
    Frame& f = stack.back();
    if (isGuard(f.at)) {
      order.push_back(f.rule);
      stack.pop_back();
      continue;
    }
    const uint32_t v = value(f.at);
    f.at = next(f.at);
    if (isRuleRef(v) && number[ruleIndex(v)] == kNone) {
      number[ruleIndex(v)] = 0; // visiting
      stack.push_back({ruleIndex(v), first(ruleIndex(v))});
    }
  }
  for (uint32_t rule : order)
    if (rule != 0) number[rule] = next_number++;
  out.rules.resize(next_number);
  for (uint32_t rule : order) {
    auto& body = out.rules[number[rule]];
    for (uint32_t n = first(rule); !isGuard(n); n = next(n)) {
      const uint32_t v = value(n);
      body.push_back(isRuleRef(v) ? (kRuleRef | number[ruleIndex(v)]) : v);
    }
  }
  return out;
}

} // namespace shapetrace::analyzer::summaries
