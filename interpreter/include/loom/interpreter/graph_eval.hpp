#pragma once
// Evaluates a whole PCG on concrete input values: each operator through its spec, every
// parallelization operator and fused form as the identity on (logical) values.
#include <map>
#include <string>
#include <vector>

#include "loom/interpreter/library.hpp"
#include "loom/interpreter/numeric.hpp"
#include "loom/interpreter/tensor.hpp"
#include "loom/pcg/graph.hpp"

namespace loom::spec {

// `inputs` maps each graph input's and weight's name to its value (of its logical shape). Returns
// the values of the graph's outputs, in order. Throws LoomError naming the node on a problem.
template <class Domain>
std::vector<Tensor<typename Domain::Value>> evaluate_graph(const Library& library, const pcg::Graph& graph,
                                                           const std::map<std::string, Tensor<typename Domain::Value>>& inputs);

}  // namespace loom::spec
