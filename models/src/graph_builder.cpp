#include "graph_builder.hpp"

namespace loom::models {

std::string GraphBuilder::scoped(const std::string& name) const {
  if (name.empty()) return name;
  return prefix_.empty() ? name : prefix_ + "." + name;
}

GraphBuilder::Scope::Scope(GraphBuilder& builder, const std::string& name) : builder_(builder), previous_length_(builder.prefix_.size()) {
  builder_.prefix_ = builder_.scoped(name);
}

GraphBuilder::Scope::~Scope() { builder_.prefix_.resize(previous_length_); }

PortRef GraphBuilder::input(const std::string& name, Dims dims) {
  return {graph_.add_input(scoped(name), pcg::ParallelShape::unpartitioned(std::move(dims)), false), 0};
}

PortRef GraphBuilder::weight(const std::string& name, Dims dims) {
  return {graph_.add_input(scoped(name), pcg::ParallelShape::unpartitioned(std::move(dims)), true), 0};
}

PortRef GraphBuilder::op(const std::string& op, std::vector<PortRef> inputs, pcg::AttrMap attrs, const std::string& name) {
  return op_outputs(op, std::move(inputs), std::move(attrs), name).front();
}

std::vector<PortRef> GraphBuilder::op_outputs(const std::string& op, std::vector<PortRef> inputs, pcg::AttrMap attrs,
                                              const std::string& name) {
  const int id = graph_.add_node(library_, op, std::move(attrs), std::move(inputs), scoped(name));
  std::vector<PortRef> ports;
  const std::size_t outputs = graph_.node(id).output_shapes.size();
  for (std::size_t i = 0; i < outputs; ++i) ports.push_back({id, static_cast<int>(i)});
  return ports;
}

}  // namespace loom::models
