#include "loom/pcg/gradient_flow.hpp"

#include <set>

namespace loom::pcg {

bool takes_gradient(const Graph& graph, PortRef port) {
  std::vector<NodeId> todo{port.node};
  std::set<NodeId> seen{port.node};
  while (!todo.empty()) {
    const Node& n = graph.node(todo.back());
    todo.pop_back();
    if (n.op == kWeightOp) return true;
    for (PortRef in : n.inputs)
      if (seen.insert(in.node).second) todo.push_back(in.node);
  }
  return false;
}

std::vector<bool> inputs_taking_gradients(const Graph& graph, const Node& node) {
  std::vector<bool> taken;
  for (PortRef in : node.inputs) taken.push_back(takes_gradient(graph, in));
  return taken;
}

}  // namespace loom::pcg
