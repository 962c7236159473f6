#include "loom/runtime/model_values.hpp"

#include "loom/pcg/diagnostic.hpp"
#include "loom/pcg/weight_folding.hpp"
#include "loom/runtime/folded_weights.hpp"
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
  NamedTensors<double> weights = initial_weights_by_parts(library, graph, seed);
  const bool folded = pcg::has_folded_weights(graph);
  for (auto& [name, value] : model_values_of(folded ? pcg::unfolded(graph) : graph, model_values, pcg::kWeightOp))
    weights.insert_or_assign(name, std::move(value));
  return folded ? FoldedWeights(library, graph).folded(std::move(weights)) : weights;
}

template <class T>
NamedTensors<T> checkpointed_weights(const std::string& source, const pcg::Graph& graph, const FoldedWeights& folds, NamedTensors<T> kept) {
  const pcg::Graph by_parts = pcg::unfolded(graph);
  for (const pcg::Node& n : by_parts.nodes()) {
    if (n.op != pcg::kWeightOp) continue;
    auto it = kept.find(n.name);
    if (it == kept.end()) throw LoomError(source + ": the checkpoint has no weight '" + n.name + "'");
    if (it->second.dims != n.output_shapes.front().dims)
      throw LoomError(source + ": weight '" + n.name + "' has shape " + spec::dims_to_string(it->second.dims) + ", the graph " +
                      spec::dims_to_string(n.output_shapes.front().dims));
  }
  return folds.folded(std::move(kept));
}

template NamedTensors<float> checkpointed_weights<float>(const std::string&, const pcg::Graph&, const FoldedWeights&, NamedTensors<float>);
template NamedTensors<double> checkpointed_weights<double>(const std::string&, const pcg::Graph&, const FoldedWeights&,
                                                           NamedTensors<double>);

}  // namespace loom::runtime
