#pragma once
// Which values take a gradient in training: those computed, through any chain of nodes, from a
// weight. A value made from data inputs alone takes none, so an operator reading it computes no
// gradient for that input (a first layer's data input). The cost model and the profiles key a
// task's backward by it.
#include <vector>

#include "loom/pcg/graph.hpp"

namespace loom::pcg {

bool takes_gradient(const Graph& graph, PortRef port);

// Per input of `node`, in order.
std::vector<bool> inputs_taking_gradients(const Graph& graph, const Node& node);

}  // namespace loom::pcg
