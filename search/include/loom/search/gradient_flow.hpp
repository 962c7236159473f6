#pragma once
// Which values take a gradient in training: those computed, through any chain of nodes, from a
// weight. A value made from data inputs alone takes none, so an operator reading it computes no
// gradient for that input (a first layer's data input). In a segment of a graph cut for the search,
// an input standing for a value computed from weights outside the segment takes one too. The cost
// model and the profiles key a task's backward by it.
//
// An input the operator's spec notes `@detached` (stop_gradient) passes no gradient back: a value
// read only through such inputs on its way to the graph's outputs (a recycling pass that only
// feeds the next one) takes none, and runs no backward.
#include <functional>
#include <vector>

#include "loom/pcg/graph.hpp"

namespace loom::search {

// Whether training updates a weight node (CostModel::trains); empty: every weight. A weight it
// keeps fixed is no source of gradients.
using TrainedWeight = std::function<bool(const pcg::Node&)>;
// Whether input `slot` of a node passes no gradient back (spec::detached_input); empty: none.
using DetachedInput = std::function<bool(const pcg::Node&, std::size_t)>;

bool takes_gradient(const pcg::Graph& graph, pcg::PortRef port, const TrainedWeight& trained = {}, const DetachedInput& detached = {});

// Per node id, whether its values take a gradient: made from a source through inputs that pass
// gradients back, and not cut off from the graph's outputs by detached inputs. `source`: where
// gradients start (the weights training updates, or the executor's differentiable inputs).
std::vector<bool> gradient_flow(const pcg::Graph& graph, const std::function<bool(const pcg::Node&)>& source,
                                const DetachedInput& detached = {});

// Per node id, whether the node leads to the graph's outputs only through detached inputs (a
// recycling pass that only feeds the next): no gradient reaches it, whatever it is made from.
std::vector<bool> cut_off_from_gradients(const pcg::Graph& graph, const DetachedInput& detached);

// The same for one node, walking only the nodes after it.
bool cut_off_from_gradients(const pcg::Graph& graph, const pcg::Node& node, const DetachedInput& detached);

// Per node id, whether its values can be freed once the forward pass has read them: no gradient
// reaches it (cut_off_from_gradients), and no reader whose values take one (`taking`, per node, as
// gradient_flow gives it) reads it in its own backward pass.
std::vector<bool> freed_after_forward(const pcg::Graph& graph, const DetachedInput& detached, const std::vector<bool>& taking);

// gradient_flow from the trained weights (and segment inputs standing for values made from them).
std::vector<bool> values_taking_gradients(const pcg::Graph& graph, const TrainedWeight& trained = {}, const DetachedInput& detached = {});

// Per input of `node`, in order: whether its gradient is computed (takes_gradient, and not
// detached). Whether the node is cut off from the outputs' gradients is left to the callers that
// see the whole graph (a plan's layout, a segment's inputs, CostModel::local_seconds): asked for
// every node of a plan, the walk would cost each plan costed a pass over the graph per node.
std::vector<bool> inputs_taking_gradients(const pcg::Graph& graph, const pcg::Node& node, const TrainedWeight& trained = {},
                                          const DetachedInput& detached = {});

}  // namespace loom::search
