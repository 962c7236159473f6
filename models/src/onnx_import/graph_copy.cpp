#include "onnx_import/graph_copy.hpp"

#include <vector>

namespace loom::models::onnx_import {

pcg::Graph copy_graph(const pcg::Graph& graph, const std::function<bool(const pcg::Node&)>& drop,
                      const std::function<void(pcg::Node&)>& change) {
  pcg::Graph out;
  std::vector<int> renumbered(graph.size(), -1);
  auto moved = [&](pcg::PortRef p) { return pcg::PortRef{renumbered.at(p.node.index()), p.port}; };
  for (const pcg::Node& original : graph.nodes()) {
    const auto id = original.id.index();
    if (original.is_graph_input()) {
      if (!drop(original)) renumbered[id] = out.add_input_like(original, original.output_shapes.at(0));
      continue;
    }
    pcg::Node n = original;
    change(n);
    std::vector<pcg::PortRef> inputs;
    for (pcg::PortRef in : n.inputs) inputs.push_back(moved(in));
    renumbered[id] = out.add_node_with_shapes(n.op, n.attrs, std::move(inputs), n.output_shapes, n.name);
  }
  for (pcg::PortRef o : graph.outputs()) out.mark_output(moved(o));
  return out;
}

pcg::Graph without_unread_constants(const pcg::Graph& graph, NamedValues& constants) {
  std::vector<bool> read(graph.size(), false);
  for (const pcg::Node& n : graph.nodes())
    for (pcg::PortRef in : n.inputs) read[in.node.index()] = true;
  for (pcg::PortRef out : graph.outputs()) read[out.node.index()] = true;
  auto unread_constant = [&](const pcg::Node& n) { return !read[n.id.index()] && constants.erase(n.name) > 0; };
  return copy_graph(graph, unread_constant, [](pcg::Node&) {});
}

}  // namespace loom::models::onnx_import
