#include "loom/interpreter/input_roles.hpp"

#include <algorithm>

#include "loom/interpreter/input_notes.hpp"

namespace loom::spec {

std::vector<pcg::Use> compute_readers(const Library& library, const pcg::Graph& graph, pcg::PortRef port) {
  std::vector<pcg::Use> out;
  for (const pcg::Use& use : graph.uses(port)) {
    const std::string& op = graph.node(use.node).op;
    if (!library.find_parallel(op) && !library.find_fused(op)) {
      out.push_back(use);
      continue;
    }
    const std::vector<pcg::Use> further = compute_readers(library, graph, {use.node, 0});
    out.insert(out.end(), further.begin(), further.end());
  }
  return out;
}

InputRole input_role(const Library& library, const pcg::Graph& graph, pcg::NodeId node) {
  const auto uses = compute_readers(library, graph, {node, 0});
  const pcg::Node& self = graph.node(node);
  if (uses.empty()) return self.op == pcg::kWeightOp ? InputRole::Matrix : InputRole::Data;
  const pcg::Use& first = uses.front();
  const InputParam* declared =
      first.input < 0 ? nullptr : declared_input(library, graph.node(first.node).op, static_cast<std::size_t>(first.input));
  if (declared && declared->note("index")) return InputRole::LookupIds;
  if (self.op == pcg::kInputOp) return InputRole::Data;
  if (declared && declared->note("statistic")) return InputRole::Statistic;
  if (declared && declared->note("init")) return InputRole::Constant;
  return InputRole::Matrix;
}

bool trained_weight(const Library& library, const pcg::Graph& graph, pcg::NodeId node) {
  if (graph.node(node).op != pcg::kWeightOp) return false;
  const InputRole role = input_role(library, graph, node);
  return role != InputRole::Statistic && role != InputRole::LookupIds;
}

std::set<std::string> trainable_weights(const Library& library, const pcg::Graph& graph) {
  std::set<std::string> names;
  for (const pcg::Node& n : graph.nodes())
    if (trained_weight(library, graph, n.id)) names.insert(n.name);
  return names;
}

bool detached_input(const Library& library, const pcg::Node& node, std::size_t slot) {
  if (node.is_graph_input()) return false;
  const InputParam* declared = declared_input(library, node.op, slot);
  return declared && declared->note("detached");
}

bool detaches_gradient(const OpDecl& op) {
  return std::any_of(op.inputs.begin(), op.inputs.end(), [](const InputParam& in) { return in.note("detached") != nullptr; });
}

}  // namespace loom::spec
