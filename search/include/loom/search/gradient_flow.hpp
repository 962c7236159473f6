#pragma once
// Which values take a gradient in training: those computed, through any chain of nodes, from a
// weight. A value made from data inputs alone takes none, so an operator reading it computes no
// gradient for that input (a first layer's data input). In a segment of a graph cut for the search,
// an input standing for a value computed from weights outside the segment takes one too. The cost
// model and the profiles key a task's backward by it.
#include <functional>
#include <vector>

#include "loom/pcg/graph.hpp"

namespace loom::search {

// Whether training updates a weight node (CostModel::trains); empty: every weight. A weight it
// keeps fixed is no source of gradients.
using TrainedWeight = std::function<bool(const pcg::Node&)>;

bool takes_gradient(const pcg::Graph& graph, pcg::PortRef port, const TrainedWeight& trained = {});

// Per node id, whether its values take a gradient: takes_gradient of every node, in one pass.
std::vector<bool> values_taking_gradients(const pcg::Graph& graph, const TrainedWeight& trained = {});

// Per input of `node`, in order.
std::vector<bool> inputs_taking_gradients(const pcg::Graph& graph, const pcg::Node& node, const TrainedWeight& trained = {});

}  // namespace loom::search
