#include "loom/search/gradient_flow.hpp"

#include <set>

#include "loom/search/graph_split.hpp"

namespace loom::search {
namespace {

// Where gradients start: trained weights, and segment inputs standing for values made from them.
bool gradient_source(const pcg::Node& n, const TrainedWeight& trained) {
  return (n.op == pcg::kWeightOp && (!trained || trained(n))) || stands_for_a_value_with_gradient(n);
}

}  // namespace

bool takes_gradient(const pcg::Graph& graph, pcg::PortRef port, const TrainedWeight& trained) {
  std::vector<pcg::NodeId> todo{port.node};
  std::set<pcg::NodeId> seen{port.node};
  while (!todo.empty()) {
    const pcg::Node& n = graph.node(todo.back());
    todo.pop_back();
    if (gradient_source(n, trained)) return true;
    for (pcg::PortRef in : n.inputs)
      if (seen.insert(in.node).second) todo.push_back(in.node);
  }
  return false;
}

std::vector<bool> values_taking_gradients(const pcg::Graph& graph, const TrainedWeight& trained) {
  std::vector<bool> taken(graph.size(), false);
  for (const pcg::Node& n : graph.nodes()) {
    bool t = gradient_source(n, trained);
    for (pcg::PortRef in : n.inputs) t = t || taken[in.node.index()];
    taken[n.id.index()] = t;
  }
  return taken;
}

std::vector<bool> inputs_taking_gradients(const pcg::Graph& graph, const pcg::Node& node, const TrainedWeight& trained) {
  std::vector<bool> taken;
  for (pcg::PortRef in : node.inputs) taken.push_back(takes_gradient(graph, in, trained));
  return taken;
}

}  // namespace loom::search
