#pragma once
// Builds a pcg::Graph against the spec library with short calls: inputs, weights and operators
// named under a dotted scope ("layer1.0.conv1.weight"), and the shape of any port at hand.
#include <cstdint>
#include <string>
#include <vector>

#include "loom/interpreter/library.hpp"
#include "loom/pcg/graph.hpp"

namespace loom::models {

using pcg::PortRef;
using Dims = std::vector<std::int64_t>;

class GraphBuilder {
 public:
  explicit GraphBuilder(const spec::Library& library) : library_(library) {}

  PortRef input(const std::string& name, Dims dims);
  PortRef weight(const std::string& name, Dims dims);
  // An operator with one output; `name` (under the current scope) may be empty.
  PortRef op(const std::string& op, std::vector<PortRef> inputs, pcg::AttrMap attrs = {}, const std::string& name = "");
  // An operator with several outputs, all returned in order.
  std::vector<PortRef> op_outputs(const std::string& op, std::vector<PortRef> inputs, pcg::AttrMap attrs = {},
                                  const std::string& name = "");
  void output(PortRef port) { graph_.mark_output(port); }

  const Dims& dims(PortRef port) const { return graph_.shape_of(port).dims; }
  std::int64_t dim(PortRef port, std::size_t axis) const { return dims(port).at(axis); }
  std::size_t rank(PortRef port) const { return dims(port).size(); }

  // Names created while a Scope lives are prefixed with its name and a dot; scopes nest.
  class Scope {
   public:
    Scope(GraphBuilder& builder, const std::string& name);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    GraphBuilder& builder_;
    std::size_t previous_length_;
  };
  std::string scoped(const std::string& name) const;

  // While a Pass lives, operators and inputs are named under its name ahead of the scopes, and
  // weights keep the names the scopes alone give them: a weight asked for again under a Pass is the
  // one made first, of the same shape (a recycling pass runs the layers again on their weights).
  class Pass {
   public:
    Pass(GraphBuilder& builder, const std::string& name);
    ~Pass();
    Pass(const Pass&) = delete;
    Pass& operator=(const Pass&) = delete;

   private:
    GraphBuilder& builder_;
    std::string previous_;
  };

  const spec::Library& library() const { return library_; }
  const pcg::Graph& graph() const { return graph_; }
  pcg::Graph take() { return std::move(graph_); }

 private:
  const spec::Library& library_;
  pcg::Graph graph_;
  std::string prefix_;
  std::string pass_;
};

}  // namespace loom::models
