#pragma once
// The import rules fuse an exported layer normalization into layer_norm_eps, which takes its
// epsilon as an input; at the library's own epsilon the plain layer_norm computes the same.
#include <functional>

#include "loom/models/values.hpp"
#include "loom/pcg/graph.hpp"

namespace loom::models::onnx_import {

// Rewrites every layer_norm_eps whose epsilon is a constant equal to `library_epsilon()` (asked
// only when there is one) as layer_norm, and drops the epsilons nothing reads any more.
void use_library_layer_norm(pcg::Graph& graph, NamedValues& constants, const std::function<double()>& library_epsilon);

}  // namespace loom::models::onnx_import
