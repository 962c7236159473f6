#pragma once
// Computing ONNX nodes whose inputs are all known while importing: the shape arithmetic that
// exporters write (Shape -> Gather -> Unsqueeze -> Concat -> Reshape, Range, ConstantOfShape,
// Where, ...) and transformations of weights (a Transpose of an initializer), so that the graph
// gets constants instead of operators.
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "onnx_import/host_tensor.hpp"

namespace loom::models::onnx_import {

// Ops the folder can compute when every input is known.
bool is_foldable(const std::string& op_type);
// Ops the importer supports only that way: they have no operator in the graph.
bool is_fold_only(const std::string& op_type);

// The node's outputs from known inputs (`inputs[i]` is null for an absent optional input). Throws
// LoomError (a bare message; the caller names the node) when the attributes or inputs are invalid.
std::vector<HostTensor> fold_node(const onnx::NodeProto& node, const std::vector<const HostTensor*>& inputs, int opset,
                                  const std::string& model_dir);

// Numpy-style broadcast of two shapes; throws LoomError when they are incompatible.
Dims broadcast_dims(const Dims& a, const Dims& b);

// The dimensions a Reshape to `shape` gives (0 copies the input's dimension unless allow_zero,
// -1 is inferred); throws LoomError when the element count would change.
Dims reshape_target(const Dims& from, const std::vector<std::int64_t>& shape, bool allow_zero);

// An axis attribute in [-rank, rank) made non-negative; throws LoomError when out of range.
std::int64_t normalize_axis(std::int64_t axis, std::size_t rank);

}  // namespace loom::models::onnx_import
