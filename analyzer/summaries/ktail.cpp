// k-tail automaton inference with self loops, post-processing and minimization.
#include "summaries/ktail.h"

#include <algorithm>
#include <deque>
#include <map>
#include <set>
#include <stdexcept>

namespace shapetrace::analyzer::summaries {

namespace {
constexpr uint32_t kNoState = UINT32_MAX;
constexpr uint32_t kNoSymbol = UINT32_MAX; // tail padding past k
} // namespace

size_t KTailBuilder::TailHash::operator()(const Tail& t) const {
  uint64_t h = 0;
  for (uint32_t s : t) {
    h = (h ^ s) * 0x9E3779B97F4A7C15ull;
    h ^= h >> 31;
  }
  return static_cast<size_t>(h);
}

uint32_t KTailBuilder::Graph::find(uint32_t s) {
  while (parent[s] != s) {
    parent[s] = parent[parent[s]];
    s = parent[s];
  }
  return s;
}

uint32_t KTailBuilder::Graph::add() {
  const auto id = static_cast<uint32_t>(parent.size());
  parent.push_back(id);
  states.emplace_back();
  return id;
}

uint32_t KTailBuilder::Graph::target(uint32_t s, uint32_t symbol) {
  for (const auto& [sym, to] : states[find(s)].out)
    if (sym == symbol) return find(to);
  return kNoState;
}

void KTailBuilder::Graph::addTransition(uint32_t from, uint32_t symbol, uint32_t to) {
  states[from].out.push_back({symbol, to});
  auto& in = states[to].incoming;
  const auto at = std::lower_bound(in.begin(), in.end(), symbol);
  if (at == in.end() || *at != symbol) in.insert(at, symbol);
}

// Merges two states and, to keep the automaton deterministic, the targets of their transitions on
// the same symbol. The smaller id survives, so that the result does not depend on argument order.
void KTailBuilder::Graph::merge(uint32_t a, uint32_t b) {
  std::vector<std::pair<uint32_t, uint32_t>> work{{a, b}};
  while (!work.empty()) {
    auto [x, y] = work.back();
    work.pop_back();
    x = find(x);
    y = find(y);
    if (x == y) continue;
    if (y < x) std::swap(x, y);
    parent[y] = x;
    State absorbed = std::move(states[y]);
    states[y] = {};
    for (const auto& [symbol, to] : absorbed.out) {
      bool found = false;
      for (const auto& [sym, existing] : states[x].out)
        if (sym == symbol) {
          work.push_back({existing, to});
          found = true;
          break;
        }
      if (!found) states[x].out.push_back({symbol, to});
    }
    auto& in = states[x].incoming;
    std::vector<uint32_t> merged;
    std::set_union(in.begin(), in.end(), absorbed.incoming.begin(), absorbed.incoming.end(),
                   std::back_inserter(merged));
    in = std::move(merged);
  }
}

KTailBuilder::KTailBuilder(Options options) : options_(options) {
  if (options_.k < 1 || options_.k > kMaxTail)
    throw std::invalid_argument("k must be between 1 and " + std::to_string(kMaxTail));
  graph_.add(); // the start state
}

void KTailBuilder::beginSequence() {
  current_ = 0;
  pending_.clear();
  in_sequence_ = true;
}

void KTailBuilder::push(uint32_t symbol) {
  pending_.push_back(symbol);
  ++symbols_;
  if (pending_.size() == options_.k) step();
}

void KTailBuilder::endSequence() {
  if (!in_sequence_) return;
  // Pad with k end symbols; the position whose tail is all "$" reads the one "$" of the automaton.
  for (uint32_t i = 0; i < options_.k; ++i) {
    pending_.push_back(kEndSymbol);
    if (pending_.size() != options_.k) continue;
    const bool last = pending_.front() == kEndSymbol;
    step();
    if (last) break;
  }
  in_sequence_ = false;
  ++sequences_;
}

// One position: map its tail to the current state, then read its symbol.
void KTailBuilder::step() {
  Tail tail;
  tail.fill(kNoSymbol);
  std::copy(pending_.begin(), pending_.end(), tail.begin());
  uint32_t q = graph_.find(current_);
  const auto [it, added] = state_of_tail_.try_emplace(tail, q);
  if (!added) {
    const uint32_t p = graph_.find(it->second);
    if (p != q) {
      graph_.merge(p, q);
      q = graph_.find(q);
    }
    it->second = q;
  }
  const uint32_t symbol = pending_.front();
  pending_.erase(pending_.begin());
  uint32_t next = graph_.target(q, symbol);
  if (next == kNoState) {
    const auto& in = graph_.states[q].incoming;
    if (options_.self_loops && symbol != kEndSymbol &&
        std::binary_search(in.begin(), in.end(), symbol)) {
      next = q; // it already has an input on this symbol: a repetition
    } else {
      next = graph_.add();
    }
    graph_.addTransition(q, symbol, next);
  }
  if (symbol == kEndSymbol) final_ = next;
  current_ = next;
}

namespace {
bool loopsOnlyAfterItsSymbol(const KTailBuilder::Options& options) {
  return options.self_loops && options.keep_loop_entries;
}
} // namespace

// Merges the states that share a k-tail. Returns whether anything merged.
//
// Without the second modification a merge only adds tails, so the tails enumerated at the start
// of a round are still there after its other merges: every pair found is merged. With it, a merge
// can also take tails away (a transition between the two states becomes a loop, which reads no
// first symbol), so a round merges only the first pair found, in a fixed order: states by number
// (breadth-first from the start, as the automaton is numbered), each one's tails in symbol order.
bool KTailBuilder::postMerge(Graph& graph, uint32_t final, const Options& options,
                             bool& truncated) {
  const uint32_t k = options.k;
  const uint32_t fin = graph.find(final);
  const bool first_only = loopsOnlyAfterItsSymbol(options);
  // Tail -> the states that have it.
  std::unordered_map<Tail, std::vector<uint32_t>, TailHash> owners;
  uint64_t enumerated = 0;
  for (uint32_t s = 0; s < graph.parent.size(); ++s) {
    if (graph.find(s) != s || s == fin) continue;
    if (first_only)
      std::sort(graph.states[s].out.begin(), graph.states[s].out.end());
    // Depth-first over paths of length k; the final state reads "$" forever (the padding).
    struct Frame {
      uint32_t state;
      size_t next_out;
    };
    Tail tail;
    tail.fill(kNoSymbol);
    std::vector<Frame> stack{{s, 0}};
    while (!stack.empty() && enumerated < options.max_tails) {
      Frame& f = stack.back();
      const size_t depth = stack.size() - 1;
      if (depth == k) {
        auto& states = owners[tail];
        if (first_only && !states.empty()) {
          graph.merge(states.front(), s);
          return true;
        }
        states.push_back(s);
        ++enumerated;
        stack.pop_back();
        continue;
      }
      uint32_t symbol, to;
      if (f.state == fin) {
        if (f.next_out > 0) {
          stack.pop_back();
          continue;
        }
        symbol = kEndSymbol;
        to = fin;
      } else {
        const auto& out = graph.states[f.state].out;
        if (f.next_out >= out.size()) {
          stack.pop_back();
          continue;
        }
        symbol = out[f.next_out].first;
        to = graph.find(out[f.next_out].second);
        // 002's second modification: the first X of a run enters a loop state on X by a
        // transition, it is not part of the loop; the loop only reads the X's after it. A tail
        // that takes the loop must have read X just before, within the tail.
        if (to == f.state && loopsOnlyAfterItsSymbol(options) &&
            (depth == 0 || tail[depth - 1] != symbol)) {
          ++f.next_out;
          continue;
        }
      }
      ++f.next_out;
      tail[depth] = symbol;
      stack.push_back({to, 0});
    }
    if (enumerated >= options.max_tails) {
      truncated = true;
      break;
    }
  }
  bool merged = false;
  for (auto& [tail, states] : owners) {
    for (size_t i = 0; i < states.size(); ++i)
      for (size_t j = i + 1; j < states.size(); ++j) {
        const uint32_t p = graph.find(states[i]), q = graph.find(states[j]);
        if (p == q) continue;
        graph.merge(p, q);
        merged = true;
      }
  }
  return merged;
}

Automaton KTailBuilder::extract(Graph graph, uint32_t final, const Options& options, bool minimize,
                                uint64_t sequences, uint64_t symbols, bool truncated) {
  Automaton a;
  a.k = options.k;
  a.sequences = sequences;
  a.symbols = symbols;
  if (minimize) {
    // Post-processing: tail merges until none apply (each round merges at least two states).
    if (final != kNoState)
      while (postMerge(graph, final, options, truncated)) {
      }
  }
  a.tails_truncated = truncated;
  // Reachable states in breadth-first order from the start, transitions by symbol.
  const uint32_t fin = final == kNoState ? kNoState : graph.find(final);
  std::vector<uint32_t> order;
  std::map<uint32_t, uint32_t> number;
  std::deque<uint32_t> queue{graph.find(0)};
  number[graph.find(0)] = 0;
  auto sortedOut = [&](uint32_t s) {
    std::vector<std::pair<uint32_t, uint32_t>> out;
    for (const auto& [sym, to] : graph.states[s].out)
      out.push_back({sym, graph.find(to)});
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
  };
  while (!queue.empty()) {
    const uint32_t s = queue.front();
    queue.pop_front();
    order.push_back(s);
    for (const auto& [sym, to] : sortedOut(s))
      if (number.try_emplace(to, static_cast<uint32_t>(number.size())).second) queue.push_back(to);
  }
  // Minimization: Moore's refinement of {final} and the others by (class, transitions' classes).
  std::vector<uint32_t> cls(order.size(), 0);
  if (minimize) {
    for (size_t i = 0; i < order.size(); ++i)
      cls[i] = order[i] == fin ? 1 : 0;
    for (;;) {
      std::map<std::vector<uint32_t>, uint32_t> signature_class;
      std::vector<uint32_t> next(order.size());
      for (size_t i = 0; i < order.size(); ++i) {
        std::vector<uint32_t> sig{cls[i]};
        for (const auto& [sym, to] : sortedOut(order[i])) {
          sig.push_back(sym);
          sig.push_back(cls[number.at(to)]);
        }
        next[i] = signature_class.try_emplace(sig, static_cast<uint32_t>(signature_class.size()))
                      .first->second;
      }
      const size_t before = std::set<uint32_t>(cls.begin(), cls.end()).size();
      cls = next;
      if (signature_class.size() == before) break;
    }
  } else {
    for (size_t i = 0; i < order.size(); ++i)
      cls[i] = static_cast<uint32_t>(i);
  }
  // Classes numbered in the breadth-first order of their first state.
  std::map<uint32_t, uint32_t> class_number;
  for (size_t i = 0; i < order.size(); ++i)
    class_number.try_emplace(cls[i], static_cast<uint32_t>(class_number.size()));
  a.states = static_cast<uint32_t>(class_number.size());
  a.start = class_number.at(cls[0]);
  a.final = fin == kNoState ? kNoState : class_number.at(cls[number.at(fin)]);
  std::vector<bool> listed(a.states, false);
  for (size_t i = 0; i < order.size(); ++i) {
    const uint32_t c = class_number.at(cls[i]);
    if (listed[c]) continue;
    listed[c] = true;
    for (const auto& [sym, to] : sortedOut(order[i]))
      a.transitions.push_back({c, sym, class_number.at(cls[number.at(to)])});
  }
  std::sort(a.transitions.begin(), a.transitions.end(), [](const auto& x, const auto& y) {
    return x.from != y.from ? x.from < y.from : x.symbol < y.symbol;
  });
  return a;
}

Automaton KTailBuilder::automaton() const {
  if (!loopsOnlyAfterItsSymbol(options_) || final_ == kNoState)
    return extract(graph_, final_, options_, true, sequences_, symbols_, false);
  // The order of the merges matters (postMerge): states numbered as the automaton is, first.
  const Automaton numbered = built();
  Graph graph;
  for (uint32_t s = 0; s < numbered.states; ++s)
    graph.add();
  for (const auto& t : numbered.transitions)
    graph.addTransition(t.from, t.symbol, t.to);
  return extract(std::move(graph), numbered.final, options_, true, sequences_, symbols_, false);
}

Automaton KTailBuilder::built() const {
  return extract(graph_, final_, options_, false, sequences_, symbols_, false);
}

namespace {
std::string dotEscape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}
std::string label(uint32_t symbol, const TerminalNamer& name) {
  return symbol == kEndSymbol ? "$" : name(symbol);
}
} // namespace

std::string automatonDot(const Automaton& a, const TerminalNamer& name) {
  std::string out = "digraph fsa {\n  rankdir=LR;\n  node [shape=circle, fontname=\"sans-serif\"];\n"
                    "  edge [fontname=\"sans-serif\"];\n";
  for (uint32_t s = 0; s < a.states; ++s) {
    out += "  s" + std::to_string(s) + " [label=\"" + std::to_string(s) + "\"";
    if (s == a.final) out += ", shape=doublecircle";
    if (s == a.start) out += ", style=bold";
    out += "];\n";
  }
  for (const auto& t : a.transitions)
    out += "  s" + std::to_string(t.from) + " -> s" + std::to_string(t.to) + " [label=\"" +
           dotEscape(label(t.symbol, name)) + "\"];\n";
  out += "}\n";
  return out;
}

nlohmann::ordered_json automatonJson(const Automaton& a, const TerminalNamer& name) {
  using Json = nlohmann::ordered_json;
  Json transitions = Json::array();
  for (const auto& t : a.transitions)
    transitions.push_back({{"from", t.from},
                           {"to", t.to},
                           {"symbol", label(t.symbol, name)},
                           {"code", t.symbol == kEndSymbol ? Json(nullptr)
                                                           : Json(terminalCode(t.symbol))}});
  return Json{{"k", a.k},
              {"states", a.states},
              {"start", a.start},
              {"final", a.final == kNoState ? Json(nullptr) : Json(a.final)},
              {"sequences", a.sequences},
              {"symbols", a.symbols},
              {"tails_truncated", a.tails_truncated},
              {"transitions", std::move(transitions)}};
}

} // namespace shapetrace::analyzer::summaries
