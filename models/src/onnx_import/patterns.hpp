#pragma once
// The decomposed LayerNorm of PyTorch's older opsets (ReduceMean, Sub, Pow, ReduceMean, Add eps,
// Sqrt, Div, Mul gamma, Add beta), which exporters write for one library operator. Found before
// mapping, so that the covered nodes are skipped and the operator is emitted at the pattern's last
// node. (Patterns with a fixed form, such as GELU's, are fused after mapping by proved rules.)
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>

#include <onnx/onnx_pb.h>

namespace loom::models::onnx_import {

struct Fusion {
  std::string x, gamma, beta;  // inputs; gamma and beta empty without the affine tail
  double epsilon = 0;
  std::string output;   // the value the pattern computes
  int last_node = -1;   // the node that produces `output`
  std::set<int> nodes;  // every node covered, last_node included
};

// The scalar value of a tensor known without running the graph (an initializer or a Constant
// node's output), if it has exactly one element.
using ScalarLookup = std::function<std::optional<double>(const std::string&)>;

// Non-overlapping fusions, keyed by their last node. Intermediate values of a fused pattern are
// used nowhere else (not even as graph outputs).
std::map<int, Fusion> find_fusions(const onnx::GraphProto& graph, const ScalarLookup& scalar);

}  // namespace loom::models::onnx_import
