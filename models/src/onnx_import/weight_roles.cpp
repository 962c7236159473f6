#include "onnx_import/weight_roles.hpp"

#include <map>
#include <vector>

#include "onnx_import/host_tensor.hpp"

namespace loom::models::onnx_import {

std::set<std::string> weight_inputs(const onnx::GraphProto& graph) {
  struct InputType {
    int rank = -1;
    bool integral = false;
  };
  std::map<std::string, InputType> inputs;
  for (const auto& in : graph.input()) {
    InputType t;
    if (in.type().has_tensor_type()) {
      const auto& tt = in.type().tensor_type();
      t.integral = is_integral_type(tt.elem_type());
      if (tt.has_shape()) t.rank = tt.shape().dim_size();
    }
    inputs[in.name()] = t;
  }
  static const std::map<std::string, std::vector<int>> weight_slots = {
      {"Conv", {1, 2}},
      {"ConvTranspose", {1, 2}},
      {"Gemm", {1, 2}},
      {"BatchNormalization", {1, 2, 3, 4}},
      {"LayerNormalization", {1, 2}},
      {"InstanceNormalization", {1, 2}},
  };
  std::set<std::string> weights;
  auto mark = [&](const onnx::NodeProto& node, int slot) {
    if (slot < node.input_size() && inputs.count(node.input(slot))) weights.insert(node.input(slot));
  };
  for (const auto& node : graph.node()) {
    if (auto it = weight_slots.find(node.op_type()); it != weight_slots.end()) {
      for (int slot : it->second) mark(node, slot);
    }
    if (node.op_type() == "MatMul" && node.input_size() == 2) {
      auto it = inputs.find(node.input(1));
      if (it != inputs.end() && it->second.rank == 2) weights.insert(node.input(1));
    }
    if (node.op_type() == "Gather" && node.input_size() == 2) {
      auto ids = inputs.find(node.input(1));
      const bool integer_ids = ids == inputs.end() || ids->second.integral;
      auto data = inputs.find(node.input(0));
      if (integer_ids && data != inputs.end() && !data->second.integral) weights.insert(node.input(0));
    }
  }
  return weights;
}

}  // namespace loom::models::onnx_import
