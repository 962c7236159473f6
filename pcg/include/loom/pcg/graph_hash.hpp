#pragma once
#include <cstdint>

#include "loom/pcg/graph.hpp"

namespace loom::pcg {

// A structural hash of a graph: equal for graphs that differ only in the order their nodes were
// created (and in the names of operator nodes), so the search can recognise a graph it has seen.
// Graph inputs count by name and shape; operators by op, attributes, output shapes and inputs.
std::uint64_t graph_hash(const Graph& graph);

// The same hash with the names of graph inputs and weights left out too: equal for graphs that
// differ only in creation order and naming, e.g. one model built by two builders.
std::uint64_t unnamed_graph_hash(const Graph& graph);

}  // namespace loom::pcg
