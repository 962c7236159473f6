#pragma once
// Tensor values for whole graphs (evaluated with spec::evaluate_graph): the values of graph inputs
// and weights by node name, and random ones that make every operator of a model defined.
#include <cstdint>
#include <map>
#include <string>

#include "loom/interpreter/library.hpp"
#include "loom/interpreter/tensor.hpp"
#include "loom/pcg/graph.hpp"

namespace loom::models {

using TensorValue = spec::Tensor<double>;
// Values of graph inputs and weights, by node name.
using NamedValues = std::map<std::string, TensorValue>;

// Seeded random values for every graph input and weight that `given` lacks, chosen so that every
// operator is defined, as the notes on its readers' inputs in `library` say (docs/language.md):
// ids noted `@index(table)` are row numbers of that table, inputs noted `@positive` (batch-norm
// variances) lie in [0.5, 1.5], everything else is uniform in [-1, 1].
NamedValues random_values(const spec::Library& library, const pcg::Graph& graph, std::uint64_t seed, NamedValues given = {});

}  // namespace loom::models
