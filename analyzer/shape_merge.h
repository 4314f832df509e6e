// Interning one shape table's nodes into another: what the merge does with each thread's shapes
// and DAG (analysis.cpp), and what folding an ended thread into its process' folded threads does
// (thread_fold.h). `functionOf` maps the local table's function ids to the other table's (the
// merge: a process's ids to the analysis' indices; folding: the same ids).
#pragma once

#include "shape_table.h"

#include <cstdint>
#include <span>
#include <vector>

namespace shapetrace::analyzer {

// Interns every shape of `local` into `global`, returning the local -> global id map.
template <typename FunctionOf>
std::vector<ShapeId> mergeShapes(const ShapeTable& local, ShapeTable& global,
                                 FunctionOf&& functionOf) {
  std::vector<ShapeId> to_global(local.size(), kNullShape);
  std::vector<ShapeId> children;
  for (ShapeId id = 1; id < local.size(); ++id) {
    children.clear();
    for (ShapeId child : local.children(id))
      children.push_back(to_global[child]);
    const size_t size = canonicalizeChildSet(children);
    to_global[id] = global.intern(functionOf(local.function(id)), std::span(children).first(size));
  }
  return to_global;
}

// The same for a DAG, which outgrows the caches: a node's slot is prefetched a few nodes ahead.
// That works because its Merkle hash (over the global function ids) needs only its children's
// hashes, all computed first, never their global ids. A new node keeps its shape (the global id of
// the local node's shape, `shape_map`) in its payload word, as the threads' nodes do.
template <typename FunctionOf>
std::vector<ShapeId> mergeDag(const ShapeTable& local, const std::vector<ShapeId>& shape_map,
                              ShapeTable& global, FunctionOf&& functionOf) {
  std::vector<uint64_t> hashes(local.size());
  for (ShapeId id = 1; id < local.size(); ++id) {
    ShapeTable::Hash hash(functionOf(local.function(id)));
    for (ShapeId child : local.children(id))
      hash.add(hashes[child]);
    hashes[id] = hash.value(local.children(id).size());
  }
  constexpr size_t kAhead = 16;
  std::vector<ShapeId> to_global(local.size(), kNullShape);
  std::vector<ShapeId> children;
  for (ShapeId id = 1; id < local.size(); ++id) {
    if (id + kAhead < local.size()) global.prefetch(hashes[id + kAhead]);
    children.clear();
    for (ShapeId child : local.children(id))
      children.push_back(to_global[child]);
    const ShapeTable::Node node =
        global.internNode(ShapeTable::Key{functionOf(local.function(id)), children, hashes[id]});
    if (node.added) *node.payload = shape_map[local.payload(id)];
    to_global[id] = node.id;
  }
  return to_global;
}

} // namespace shapetrace::analyzer
