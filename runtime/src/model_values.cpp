#include "loom/runtime/model_values.hpp"

#include "loom/pcg/diagnostic.hpp"
#include "loom/runtime/initializer.hpp"

namespace loom::runtime {

NamedTensors<double> model_values_of(const pcg::Graph& graph, const NamedTensors<double>& model_values, std::string_view op) {
  NamedTensors<double> out;
  for (const pcg::Node& n : graph.nodes()) {
    auto it = model_values.find(n.name);
    if (n.op != op || it == model_values.end()) continue;
    if (it->second.dims != n.output_shapes.front().dims)
      throw LoomError(std::string(op == pcg::kWeightOp ? "weight '" : "input '") + n.name + "' has shape " +
                      spec::dims_to_string(n.output_shapes.front().dims) + " in the graph, but the model gives it " +
                      spec::dims_to_string(it->second.dims));
    out.emplace(n.name, it->second);
  }
  return out;
}

NamedTensors<double> starting_weights(const spec::Library& library, const pcg::Graph& graph, std::uint64_t seed,
                                      const NamedTensors<double>& model_values) {
  NamedTensors<double> weights = initial_weights(library, graph, seed);
  for (auto& [name, value] : model_values_of(graph, model_values, pcg::kWeightOp)) weights.insert_or_assign(name, std::move(value));
  return weights;
}

template <class T>
void check_weights_fit(const std::string& source, const NamedTensors<T>& weights, const pcg::Graph& graph) {
  for (const pcg::Node& n : graph.nodes()) {
    if (n.op != pcg::kWeightOp) continue;
    auto it = weights.find(n.name);
    if (it == weights.end()) throw LoomError(source + ": the checkpoint has no weight '" + n.name + "'");
    if (it->second.dims != n.output_shapes.front().dims)
      throw LoomError(source + ": weight '" + n.name + "' has shape " + spec::dims_to_string(it->second.dims) + ", the graph " +
                      spec::dims_to_string(n.output_shapes.front().dims));
  }
}

template void check_weights_fit<float>(const std::string&, const NamedTensors<float>&, const pcg::Graph&);
template void check_weights_fit<double>(const std::string&, const NamedTensors<double>&, const pcg::Graph&);

}  // namespace loom::runtime
