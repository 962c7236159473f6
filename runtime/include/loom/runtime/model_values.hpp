#pragma once
// The values a run starts from: the seed's weights, with those the model gives (an imported ONNX
// file's initializers and constants) in their place, or a checkpoint's.
#include <cstdint>
#include <string>
#include <string_view>

#include "loom/interpreter/library.hpp"
#include "loom/pcg/graph.hpp"
#include "loom/runtime/checkpoint.hpp"
#include "loom/runtime/folded_weights.hpp"
#include "loom/runtime/tensor.hpp"

namespace loom::runtime {

// The values `model_values` gives the graph's nodes running `op` (weights or inputs), by node
// name, each checked against the node's shape; names the graph lacks are left out.
NamedTensors<double> model_values_of(const pcg::Graph& graph, const NamedTensors<double>& model_values, std::string_view op);

// Every weight: the seed's draw (initializer.hpp), or the model's value where it gives one.
NamedTensors<double> starting_weights(const spec::Library& library, const pcg::Graph& graph, std::uint64_t seed,
                                      const NamedTensors<double>& model_values);

// The weights a checkpoint keeps, the model's own (FoldedWeights), as the graph runs them. Throws
// LoomError, naming `source`, unless they hold every weight at its shape.
template <class T>
NamedTensors<T> checkpointed_weights(const std::string& source, const pcg::Graph& graph, const FoldedWeights& folds, NamedTensors<T> kept);

}  // namespace loom::runtime
