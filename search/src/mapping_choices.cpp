#include "mapping_choices.hpp"

#include <algorithm>

#include "loom/pcg/task_layout.hpp"

namespace loom::search::mapping {
namespace {

std::uint64_t mix_shapes(std::uint64_t h, const std::vector<pcg::ParallelShape>& shapes) {
  h = pcg::hash_mix(h, shapes.size());
  for (const pcg::ParallelShape& s : shapes) h = pcg::hash_mix(h, std::hash<pcg::ParallelShape>{}(s));
  return h;
}

}  // namespace

NodeSignature NodeSignature::of(const pcg::Graph& graph, const pcg::Node& node, const CostModel& model) {
  NodeSignature s{node.op, node.attrs, {}, {}, model.gradient_inputs(graph, node)};
  for (pcg::PortRef in : node.inputs) {
    s.inputs.push_back(graph.shape_of(in));
    s.weights.push_back(graph.node(in.node).op == pcg::kWeightOp);
  }
  return s;
}

std::size_t NodeSignatureHash::operator()(const NodeSignature& s) const {
  std::uint64_t h = std::hash<std::string>{}(s.op);
  for (const auto& [name, value] : s.attrs)
    h = pcg::hash_mix(pcg::hash_mix(h, std::hash<std::string>{}(name)), static_cast<std::uint64_t>(value));
  h = mix_shapes(h, s.inputs);
  for (bool w : s.weights) h = pcg::hash_mix(h, w ? 1 : 0);
  for (bool g : s.gradients) h = pcg::hash_mix(h, g ? 3 : 2);
  h = pcg::hash_mix(h, s.ends_backward ? 5 : 4);
  return static_cast<std::size_t>(h);
}

std::size_t SplitShapesHash::operator()(const SplitShapes& s) const {
  return static_cast<std::size_t>(mix_shapes(mix_shapes(0, s.inputs), s.outputs));
}

const ConfigTable::Kind& ConfigTable::kind_of(const pcg::Graph& graph, const pcg::Node& n, bool ends_backward) {
  NodeSignature signature = NodeSignature::of(graph, n, model_);
  signature.ends_backward = ends_backward;
  if (auto it = by_signature_.find(signature); it != by_signature_.end()) return it->second;
  std::vector<ConfigInfo> out;
  for (ParallelConfig& c : node_configs(library_, graph, n, options_.degrees)) {
    if (!out.empty() && options_.admit && !options_.admit(n, c)) continue;
    ConfigInfo info;
    const TaskEstimate estimate = model_.compute(n, c.inputs, signature.gradients);
    info.seconds = estimate.seconds + estimate.backward_seconds;
    info.backward_seconds = estimate.backward_seconds;
    for (std::size_t i = 0; i < c.inputs.size(); ++i) {
      // A trained weight keeps its gradient and two moments beside it; a fixed one its value alone.
      const bool weight = signature.weights[i];
      const bool state = weight && signature.gradients[i];
      const double bytes = static_cast<double>(pcg::piece_elements(c.inputs[i])) * kBytesPerElement * (state ? 4 : 1);
      info.memory += bytes;
      if (weight) info.kept += bytes;
    }
    for (const auto& o : c.outputs) {
      info.memory += static_cast<double>(pcg::piece_elements(o)) * kBytesPerElement;
      info.kept += static_cast<double>(pcg::piece_elements(o)) * kBytesPerElement;
    }
    info.content = splits_.id({c.inputs, c.outputs});
    for (const pcg::ParallelShape& s : c.inputs) info.inputs.push_back(shapes_.id(s));
    for (const pcg::ParallelShape& s : c.outputs) info.outputs.push_back(shapes_.id(s));
    info.config = std::move(c);
    out.push_back(std::move(info));
  }
  const int id = static_cast<int>(by_signature_.size());
  const bool takes_gradients = std::find(signature.gradients.begin(), signature.gradients.end(), true) != signature.gradients.end();
  return by_signature_.emplace(std::move(signature), Kind{id, std::move(out), takes_gradients}).first->second;
}

}  // namespace loom::search::mapping
