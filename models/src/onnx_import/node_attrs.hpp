#pragma once
// Reading an ONNX node's attributes with defaults, and naming a node in messages.
#include <cstdint>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

namespace loom::models::onnx_import {

class NodeAttrs {
 public:
  explicit NodeAttrs(const onnx::NodeProto& node) : node_(node) {}
  bool has(const std::string& name) const { return find(name) != nullptr; }
  std::int64_t get_int(const std::string& name, std::int64_t fallback) const;
  std::vector<std::int64_t> get_ints(const std::string& name, std::vector<std::int64_t> fallback = {}) const;
  double get_float(const std::string& name, double fallback) const;
  std::vector<double> get_floats(const std::string& name) const;
  std::string get_string(const std::string& name, const std::string& fallback) const;
  const onnx::TensorProto* get_tensor(const std::string& name) const;

 private:
  const onnx::AttributeProto* find(const std::string& name) const;
  const onnx::NodeProto& node_;
};

// e.g. `node 'conv1' (Conv)`, or `node #3 (Conv) producing 'x'` for an unnamed node.
std::string describe_node(const onnx::NodeProto& node, int index);

}  // namespace loom::models::onnx_import
