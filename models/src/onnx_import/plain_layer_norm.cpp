#include "onnx_import/plain_layer_norm.hpp"

#include <optional>

#include "onnx_import/graph_copy.hpp"
#include "onnx_import/library_epsilon.hpp"

namespace loom::models::onnx_import {

void use_library_layer_norm(pcg::Graph& graph, NamedValues& constants, const std::function<double()>& library_epsilon) {
  std::optional<double> epsilon;
  auto at_library_epsilon = [&](const pcg::Node& n) {
    if (n.op != "layer_norm_eps" || n.inputs.size() != 4) return false;
    const pcg::Node& eps = graph.node(n.inputs[3].node);
    auto value = constants.find(eps.name);
    if (!eps.is_graph_input() || value == constants.end() || value->second.size() != 1) return false;
    if (!epsilon) epsilon = library_epsilon();
    return same_epsilon(value->second.data.front(), *epsilon);
  };
  bool any = false;
  for (const pcg::Node& n : graph.nodes()) any |= at_library_epsilon(n);
  if (!any) return;
  graph = copy_graph(
      graph, [](const pcg::Node&) { return false; },
      [&](pcg::Node& n) {
        if (!at_library_epsilon(n)) return;
        n.op = "layer_norm";
        n.inputs.resize(3);
      });
  graph = without_unread_constants(graph, constants);
}

}  // namespace loom::models::onnx_import
