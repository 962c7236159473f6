#pragma once
// The machine mapping's problem tree: a graph's decision nodes split at nodes every path crosses
// (series) and into parts with no edge between them (parallel), down to single nodes. Each tree
// carries the id of its content, what its cost depends on apart from the choices around it, so
// that equal sub-problems of different graphs are solved once.
#include <cstdint>
#include <vector>

#include "interner.hpp"
#include "loom/search/machine_mapping.hpp"

namespace loom::search::mapping {

// The graph being mapped, with what the decomposition and the costs read of it often.
struct MappedGraph {
  const pcg::Graph* graph = nullptr;
  Pins pins;
  std::vector<std::vector<int>> consumers;  // per node id: each consumer once, in order
  std::vector<int> signature_id;            // per decision node (ConfigTable::signature_id)

  bool decides(int node) const { return !graph->node(node).is_graph_input(); }
};

struct Tree {
  enum Kind { Leaf, Series, Parallel } kind = Leaf;
  pcg::NodeId node = -1;      // Leaf: the node; Series: the split node
  std::vector<int> children;  // Series: {before, after} (-1 when empty); Parallel: the parts
  std::vector<int> members;   // graph nodes, ascending
  std::vector<int> boundary;  // decision nodes outside that share an edge with a member
  int content_id = -1;        // equal for trees whose cost is the same function of their boundary
};

struct PinHash {
  std::size_t operator()(const Pin& pin) const {
    return static_cast<std::size_t>(
        pcg::hash_mix(std::hash<pcg::ParallelShape>{}(pin.shape), static_cast<std::uint64_t>(pin.first_device)));
  }
};

// The ids of tree contents and of pins, shared by every graph a mapper sees.
struct TreeContents {
  Interner<std::vector<std::int64_t>, TokensHash> trees;
  Interner<Pin, PinHash> pins;
};

// Decomposes `members` (decision nodes, ascending) into trees appended to `trees`; returns the
// index of the root.
int decompose(const MappedGraph& graph, std::vector<int> members, TreeContents& contents, std::vector<Tree>& trees);

}  // namespace loom::search::mapping
