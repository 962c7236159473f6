#include "graph_builder.hpp"

#include "loom/interpreter/program.hpp"
#include "loom/pcg/diagnostic.hpp"

namespace loom::models {

namespace {

std::string joined(const std::string& prefix, const std::string& name) { return prefix.empty() ? name : prefix + "." + name; }

}  // namespace

std::string GraphBuilder::scoped(const std::string& name) const {
  if (name.empty()) return name;
  return joined(pass_, joined(prefix_, name));
}

GraphBuilder::Pass::Pass(GraphBuilder& builder, const std::string& name) : builder_(builder), previous_(builder.pass_) {
  builder_.pass_ = joined(builder_.pass_, name);
}

GraphBuilder::Pass::~Pass() { builder_.pass_ = previous_; }

GraphBuilder::Scope::Scope(GraphBuilder& builder, const std::string& name) : builder_(builder), previous_length_(builder.prefix_.size()) {
  if (!name.empty()) builder_.prefix_ = joined(builder_.prefix_, name);
}

GraphBuilder::Scope::~Scope() { builder_.prefix_.resize(previous_length_); }

PortRef GraphBuilder::input(const std::string& name, Dims dims) {
  return {graph_.add_input(scoped(name), pcg::ParallelShape::unpartitioned(std::move(dims)), false), 0};
}

PortRef GraphBuilder::weight(const std::string& name, Dims dims) {
  const std::string full = joined(prefix_, name);
  if (!pass_.empty())
    if (const auto made = graph_.find(full)) {
      const pcg::Node& w = graph_.node(*made);
      if (w.op != pcg::kWeightOp || w.output_shapes.front().dims != dims)
        throw LoomError("pass " + pass_ + ": weight '" + full + "' of shape " + spec::dims_to_string(dims) + " is already " + w.describe() +
                        " of shape " + spec::dims_to_string(w.output_shapes.front().dims));
      return {*made, 0};
    }
  return {graph_.add_input(full, pcg::ParallelShape::unpartitioned(std::move(dims)), true), 0};
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
