#pragma once
// The values a run starts from: the seed's weights, with those the model gives (an imported ONNX
// file's initializers and constants) in their place, or a checkpoint's.
#include <cstdint>
#include <string>
#include <string_view>

#include "loom/interpreter/library.hpp"
#include "loom/pcg/graph.hpp"
#include "loom/runtime/checkpoint.hpp"
#include "loom/runtime/tensor.hpp"

namespace loom::runtime {

// The values `model_values` gives the graph's nodes running `op` (weights or inputs), by node
// name, each checked against the node's shape; names the graph lacks are left out.
NamedTensors<double> model_values_of(const pcg::Graph& graph, const NamedTensors<double>& model_values, std::string_view op);

// Every weight: the seed's draw (initializer.hpp), or the model's value where it gives one.
NamedTensors<double> starting_weights(const spec::Library& library, const pcg::Graph& graph, std::uint64_t seed,
                                      const NamedTensors<double>& model_values);

// Throws LoomError, naming `source`, unless `weights` holds every weight of the graph at its shape.
template <class T>
void check_weights_fit(const std::string& source, const NamedTensors<T>& weights, const pcg::Graph& graph);

}  // namespace loom::runtime
