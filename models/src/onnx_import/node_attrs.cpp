#include "onnx_import/node_attrs.hpp"

namespace loom::models::onnx_import {

const onnx::AttributeProto* NodeAttrs::find(const std::string& name) const {
  for (const auto& a : node_.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

std::int64_t NodeAttrs::get_int(const std::string& name, std::int64_t fallback) const {
  const auto* a = find(name);
  return a ? a->i() : fallback;
}

std::vector<std::int64_t> NodeAttrs::get_ints(const std::string& name, std::vector<std::int64_t> fallback) const {
  const auto* a = find(name);
  if (!a) return fallback;
  return {a->ints().begin(), a->ints().end()};
}

double NodeAttrs::get_float(const std::string& name, double fallback) const {
  const auto* a = find(name);
  return a ? static_cast<double>(a->f()) : fallback;
}

std::vector<double> NodeAttrs::get_floats(const std::string& name) const {
  const auto* a = find(name);
  if (!a) return {};
  return {a->floats().begin(), a->floats().end()};
}

std::string NodeAttrs::get_string(const std::string& name, const std::string& fallback) const {
  const auto* a = find(name);
  return a ? a->s() : fallback;
}

const onnx::TensorProto* NodeAttrs::get_tensor(const std::string& name) const {
  const auto* a = find(name);
  return a && a->has_t() ? &a->t() : nullptr;
}

std::string describe_node(const onnx::NodeProto& node, int index) {
  if (!node.name().empty()) return "node '" + node.name() + "' (" + node.op_type() + ")";
  std::string out = "node #" + std::to_string(index) + " (" + node.op_type() + ")";
  for (const auto& output : node.output()) {
    if (!output.empty()) return out + " producing '" + output + "'";
  }
  return out;
}

}  // namespace loom::models::onnx_import
