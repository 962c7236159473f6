#pragma once
#include <vector>

#include "loom/pcg/graph.hpp"

namespace loom::pcg {

// One node that must run ahead of another although neither reads the other.
struct RunsAhead {
  NodeId before;
  NodeId after;
};

// The graph with its nodes renumbered so that creation order, which every pass follows, runs each
// `before` ahead of its `after` as well as each node after what it reads. Nodes keep their relative
// order wherever the constraints allow, so a graph that already honors them comes back unchanged.
// `new_ids`, when given, receives each old node's id in the result. Throws LoomError naming the
// nodes left waiting for each other when the constraints and the data close a cycle.
Graph ordered_by(const Graph& graph, const std::vector<RunsAhead>& constraints, std::vector<NodeId>* new_ids = nullptr);

}  // namespace loom::pcg
