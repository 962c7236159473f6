#include "loom/interpreter/graph_eval.hpp"

#include "loom/interpreter/evaluate.hpp"

namespace loom::spec {

template <class Domain>
std::vector<Tensor<typename Domain::Value>> evaluate_graph(const Library& library, const pcg::Graph& graph,
                                                           const std::map<std::string, Tensor<typename Domain::Value>>& inputs) {
  using T = Tensor<typename Domain::Value>;
  std::vector<std::vector<T>> values(graph.size());
  for (const pcg::Node& n : graph.nodes()) {
    auto& out = values[n.id.index()];
    if (n.is_graph_input()) {
      auto it = inputs.find(n.name);
      if (it == inputs.end() && n.folded_from) {  // made from its parts' values
        out = evaluate_graph<Domain>(library, *n.folded_from.parts, inputs);
        continue;
      }
      if (it == inputs.end()) throw LoomError(n.describe() + ": no value given");
      if (it->second.dims != n.output_shapes.front().dims)
        throw LoomError(n.describe() + ": the value has shape " + dims_to_string(it->second.dims) + ", the graph expects " +
                        dims_to_string(n.output_shapes.front().dims));
      out.push_back(it->second);
      continue;
    }
    std::vector<const T*> args;
    std::vector<std::vector<std::int64_t>> dims;
    for (pcg::PortRef in : n.inputs) {
      args.push_back(&values[in.node.index()][static_cast<std::size_t>(in.port)]);
      dims.push_back(args.back()->dims);
    }
    if (!library.find_op(n.op)) {  // parallelization operators and fused forms
      if (args.size() != 1 || n.output_shapes.size() != 1) throw LoomError(n.describe() + ": a parallel form has one input and one output");
      out.push_back(*args[0]);
      continue;
    }
    try {
      out = evaluate<Domain>(library.instantiate(n.op, n.attrs, dims), args);
    } catch (const LoomError& e) {
      throw LoomError(n.describe() + ": " + e.what());
    }
  }
  std::vector<T> result;
  for (pcg::PortRef o : graph.outputs()) result.push_back(values[o.node.index()][static_cast<std::size_t>(o.port)]);
  return result;
}

template std::vector<Tensor<double>> evaluate_graph<RealDomain>(const Library&, const pcg::Graph&,
                                                                const std::map<std::string, Tensor<double>>&);
template std::vector<Tensor<ModularValue>> evaluate_graph<ModularDomain>(const Library&, const pcg::Graph&,
                                                                         const std::map<std::string, Tensor<ModularValue>>&);

}  // namespace loom::spec
