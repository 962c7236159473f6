#pragma once
#include <compare>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "loom/pcg/machine_view.hpp"
#include "loom/pcg/node_id.hpp"
#include "loom/pcg/op_catalog.hpp"
#include "loom/pcg/parallel_shape.hpp"

namespace loom::pcg {

// The pseudo-operators of graph inputs; they take no inputs and have one output.
inline constexpr std::string_view kInputOp = "input";
inline constexpr std::string_view kWeightOp = "weight";

class Graph;

// What a folded weight holds (pcg/weight_folding.hpp): a graph whose inputs are the weights it
// stands for and whose one output is its value, every element of them once. Shared, as nodes are
// copied often; compared by content.
struct FoldRecipe {
  std::shared_ptr<const Graph> parts;

  explicit operator bool() const { return parts != nullptr; }
  bool operator==(const FoldRecipe& other) const;
};

// One output of one node.
struct PortRef {
  NodeId node;
  int port = 0;

  auto operator<=>(const PortRef&) const = default;
};

// Input slot `input` of node `node` reads some port.
struct Use {
  NodeId node;
  int input = 0;

  auto operator<=>(const Use&) const = default;
};

struct Node {
  NodeId id;
  std::string op;
  AttrMap attrs;
  std::vector<PortRef> inputs;
  std::vector<ParallelShape> output_shapes;
  std::optional<MachineView> view;
  std::string name;        // empty for an unnamed operator; inputs and weights always have one
  FoldRecipe folded_from;  // a folded weight's parts; empty for every other node

  bool is_graph_input() const { return op == kInputOp || op == kWeightOp; }
  // Tasks the node runs as: the task count of its first output (1 when it has none).
  std::int64_t tasks() const;
  // Its machine view, or devices 0, 1, ... one per task when it has none.
  MachineView view_or_default() const;
  // e.g. `node 3 "fc1" (op matmul)`, for messages.
  std::string describe() const;

  bool operator==(const Node&) const = default;
};

// A parallel computation graph. Nodes are kept in creation order and a node's id is its index;
// a node may only read ports of nodes created before it, so creation order is topological and
// the graph is acyclic by construction. Non-empty node names are unique.
class Graph {
 public:
  // Adds a graph input (or weight) called `name` whose single output has `shape`.
  NodeId add_input(std::string name, ParallelShape shape, bool is_weight = false);
  // Adds a weight folded from the weights `recipe` reads (pcg/weight_folding.hpp).
  NodeId add_folded_weight(std::string name, ParallelShape shape, FoldRecipe recipe);
  // Adds a graph input of the kind `input` is (its recipe too, where it is a folded weight), with
  // its name, of `shape`: a graph input copied into another graph.
  NodeId add_input_like(const Node& input, ParallelShape shape);
  // Adds an operator node; its output shapes come from `catalog`. Throws LoomError naming the
  // node and op when the op is unknown, the inputs do not fit, or the catalog rejects them.
  NodeId add_node(const OpCatalog& catalog, std::string op, AttrMap attrs, std::vector<PortRef> inputs, std::string name = "");
  // Adds an operator node whose output shapes are already known, e.g. a node copied from a
  // checked graph onto inputs of the same shapes. Checks the ports and names, not the shapes.
  NodeId add_node_with_shapes(std::string op, AttrMap attrs, std::vector<PortRef> inputs, std::vector<ParallelShape> output_shapes,
                              std::string name = "");
  void mark_output(PortRef port);
  // Throws LoomError unless the view has one device per task of the node.
  void set_view(NodeId node, MachineView view);
  // Throws LoomError when another node has the name, or a graph input would lose its own.
  void set_name(NodeId node, std::string name);

  const std::vector<Node>& nodes() const { return nodes_; }
  std::size_t size() const { return nodes_.size(); }
  // Throws LoomError when the graph has no such node. Inline: the searches call it in their
  // innermost loops.
  const Node& node(NodeId id) const {
    if (id < 0 || id.index() >= nodes_.size()) [[unlikely]]
      return checked_node(id, "");
    return nodes_[id.index()];
  }
  const std::vector<PortRef>& outputs() const { return outputs_; }
  const ParallelShape& shape_of(PortRef port) const;
  std::optional<NodeId> find(std::string_view name) const;
  // The number of operator nodes: every node but the graph inputs and weights.
  std::size_t operator_count() const;

  std::vector<NodeId> topological_order() const;
  // Ids of the nodes that read any output of `node`, ascending, each once.
  std::vector<NodeId> consumers(NodeId node) const;
  // consumers() of every node, indexed by node id, found in one pass over the graph.
  std::vector<std::vector<NodeId>> all_consumers() const;
  // Whether `reader` alone reads `node`'s outputs and none of them is a graph output.
  bool read_only_by(NodeId node, NodeId reader) const;
  // Every input slot that reads `port`, in node order.
  std::vector<Use> uses(PortRef port) const;

  // Checks the whole graph against `catalog` (e.g. after the operator specs changed): every
  // node re-inferred and compared, ports, names and views. Throws LoomError listing every
  // problem found.
  void validate(const OpCatalog& catalog) const;

  bool operator==(const Graph&) const = default;

 private:
  const Node& checked_node(NodeId id, const std::string& context) const;
  // Adds a checked node, and its name's hash.
  NodeId append(Node node);
  bool port_exists(PortRef port) const;
  void check_port(PortRef port, const std::string& context) const;
  void check_name_free(const std::string& name, const std::string& context) const;

  std::vector<Node> nodes_;
  std::vector<PortRef> outputs_;
  // By node, the hash of its name (0 when it has none): find() compares the names of few nodes.
  std::vector<std::size_t> name_hashes_;
};

}  // namespace loom::pcg
