#include "loom/pcg/graph.hpp"

#include <algorithm>
#include <map>
#include <utility>

#include "loom/pcg/diagnostic.hpp"

namespace loom::pcg {

namespace {

std::size_t name_hash(std::string_view name) { return name.empty() ? 0 : std::hash<std::string_view>{}(name); }

std::string port_text(PortRef port) { return "port " + std::to_string(port.port) + " of node " + pcg::to_string(port.node); }

// Re-throws a LoomError with `context` in front of each of its messages.
[[noreturn]] void rethrow_with_context(const LoomError& error, const std::string& context) {
  std::vector<Diagnostic> diagnostics = error.diagnostics();
  for (Diagnostic& d : diagnostics) d.message = context + ": " + d.message;
  throw LoomError(std::move(diagnostics));
}

std::string shapes_text(const std::vector<ParallelShape>& shapes) {
  std::string out = "(";
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    if (i > 0) out += ", ";
    out += shapes[i].to_string();
  }
  return out + ")";
}

}  // namespace

bool FoldRecipe::operator==(const FoldRecipe& other) const {
  if (!parts || !other.parts) return parts == other.parts;
  return parts == other.parts || *parts == *other.parts;
}

std::int64_t Node::tasks() const { return output_shapes.empty() ? 1 : output_shapes.front().tasks(); }

MachineView Node::view_or_default() const { return view ? *view : MachineView::contiguous(0, tasks()); }

std::string Node::describe() const {
  std::string out = "node " + to_string(id);
  if (!name.empty()) out += " \"" + name + "\"";
  return out + " (op " + op + ")";
}

const Node& Graph::checked_node(NodeId id, const std::string& context) const {
  if (id < 0 || id.index() >= nodes_.size()) {
    throw LoomError(context + "node " + to_string(id) + " does not exist (the graph has " + std::to_string(nodes_.size()) + " nodes)");
  }
  return nodes_[id.index()];
}

bool Graph::port_exists(PortRef port) const {
  return port.node >= 0 && port.node.index() < nodes_.size() && port.port >= 0 &&
         static_cast<std::size_t>(port.port) < nodes_[port.node.index()].output_shapes.size();
}

void Graph::check_port(PortRef port, const std::string& context) const {
  const Node& n = checked_node(port.node, context);
  if (port.port < 0 || static_cast<std::size_t>(port.port) >= n.output_shapes.size()) {
    throw LoomError(context + n.describe() + " has " + std::to_string(n.output_shapes.size()) + " output(s), so it has no port " +
                    std::to_string(port.port));
  }
}

void Graph::check_name_free(const std::string& name, const std::string& context) const {
  if (auto existing = find(name)) {
    throw LoomError(context + "the name \"" + name + "\" is already used by " + nodes_[existing->index()].describe());
  }
}

NodeId Graph::append(Node node) {
  name_hashes_.push_back(name_hash(node.name));
  try {
    nodes_.push_back(std::move(node));
  } catch (...) {
    name_hashes_.pop_back();
    throw;
  }
  return nodes_.back().id;
}

NodeId Graph::add_input(std::string name, ParallelShape shape, bool is_weight) {
  Node n;
  n.id = static_cast<int>(nodes_.size());
  n.op = std::string(is_weight ? kWeightOp : kInputOp);
  n.name = std::move(name);
  const std::string context = n.describe() + ": ";
  if (n.name.empty()) throw LoomError(context + "graph inputs and weights need a name");
  check_name_free(n.name, context);
  try {
    shape.validate();
  } catch (const LoomError& e) {
    rethrow_with_context(e, n.describe() + ": invalid shape");
  }
  n.output_shapes.push_back(std::move(shape));
  return append(std::move(n));
}

NodeId Graph::add_folded_weight(std::string name, ParallelShape shape, FoldRecipe recipe) {
  if (!recipe) throw LoomError("weight \"" + name + "\": a folded weight needs the weights it is folded from");
  const NodeId id = add_input(std::move(name), std::move(shape), true);
  nodes_.back().folded_from = std::move(recipe);
  return id;
}

NodeId Graph::add_input_like(const Node& input, ParallelShape shape) {
  if (input.folded_from) return add_folded_weight(input.name, std::move(shape), input.folded_from);
  return add_input(input.name, std::move(shape), input.op == kWeightOp);
}

NodeId Graph::add_node(const OpCatalog& catalog, std::string op, AttrMap attrs, std::vector<PortRef> inputs, std::string name) {
  Node n;
  n.id = static_cast<int>(nodes_.size());
  n.op = std::move(op);
  n.name = std::move(name);
  // Only a problem found needs the words: most nodes are added by searches that cost many plans.
  const auto context = [&n] { return n.describe() + ": "; };
  if (n.is_graph_input()) {
    throw LoomError(context() + "graph inputs and weights are added with add_input");
  }
  if (!catalog.has_op(n.op)) throw LoomError(context() + "unknown operator \"" + n.op + "\"");
  if (!n.name.empty() && find(n.name)) check_name_free(n.name, context());
  const std::size_t expected = catalog.input_count(n.op);
  if (inputs.size() != expected) {
    throw LoomError(context() + n.op + " takes " + std::to_string(expected) + " input(s), got " + std::to_string(inputs.size()));
  }
  std::vector<ParallelShape> input_shapes;
  input_shapes.reserve(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (!port_exists(inputs[i])) check_port(inputs[i], context() + "input " + std::to_string(i) + ": ");
    input_shapes.push_back(shape_of(inputs[i]));
  }
  try {
    n.output_shapes = catalog.infer(n.op, attrs, input_shapes);
  } catch (const LoomError& e) {
    rethrow_with_context(e, n.describe());
  }
  if (n.output_shapes.size() != catalog.output_count(n.op)) {
    throw LoomError(context() + "the catalog inferred " + std::to_string(n.output_shapes.size()) + " output shape(s), but " + n.op +
                    " has " + std::to_string(catalog.output_count(n.op)) + " output(s)");
  }
  n.attrs = std::move(attrs);
  n.inputs = std::move(inputs);
  return append(std::move(n));
}

NodeId Graph::add_node_with_shapes(std::string op, AttrMap attrs, std::vector<PortRef> inputs, std::vector<ParallelShape> output_shapes,
                                   std::string name) {
  Node n;
  n.id = static_cast<int>(nodes_.size());
  n.op = std::move(op);
  n.name = std::move(name);
  const auto context = [&n] { return n.describe() + ": "; };
  if (n.is_graph_input()) throw LoomError(context() + "graph inputs and weights are added with add_input");
  if (!n.name.empty() && find(n.name)) check_name_free(n.name, context());
  for (std::size_t i = 0; i < inputs.size(); ++i)
    if (!port_exists(inputs[i])) check_port(inputs[i], context() + "input " + std::to_string(i) + ": ");
  n.attrs = std::move(attrs);
  n.inputs = std::move(inputs);
  n.output_shapes = std::move(output_shapes);
  return append(std::move(n));
}

void Graph::mark_output(PortRef port) {
  check_port(port, "graph output: ");
  if (std::find(outputs_.begin(), outputs_.end(), port) != outputs_.end()) {
    throw LoomError("graph output: " + port_text(port) + " is already an output");
  }
  outputs_.push_back(port);
}

void Graph::set_view(NodeId node, MachineView view) {
  Node& n = nodes_[checked_node(node, "set_view: ").id.index()];
  if (static_cast<std::int64_t>(view.tasks()) != n.tasks()) {
    throw LoomError(n.describe() + ": the machine view places " + std::to_string(view.tasks()) + " task(s), but the node runs as " +
                    std::to_string(n.tasks()));
  }
  n.view = std::move(view);
}

void Graph::set_name(NodeId node, std::string name) {
  Node& n = nodes_[checked_node(node, "set_name: ").id.index()];
  if (n.name == name) return;
  if (name.empty() && n.is_graph_input()) throw LoomError(n.describe() + ": graph inputs and weights need a name");
  if (!name.empty()) check_name_free(name, "set_name: ");
  name_hashes_[n.id.index()] = name_hash(name);
  n.name = std::move(name);
}

const ParallelShape& Graph::shape_of(PortRef port) const {
  check_port(port, "");
  return nodes_[port.node.index()].output_shapes[static_cast<std::size_t>(port.port)];
}

std::optional<NodeId> Graph::find(std::string_view name) const {
  if (name.empty()) return std::nullopt;
  const std::size_t hash = name_hash(name);
  for (std::size_t i = 0; i < nodes_.size(); ++i)
    if (name_hashes_[i] == hash && nodes_[i].name == name) return nodes_[i].id;
  return std::nullopt;
}

std::vector<NodeId> Graph::topological_order() const {
  std::vector<NodeId> order;
  order.reserve(nodes_.size());
  for (const Node& n : nodes_) order.push_back(n.id);
  return order;
}

std::size_t Graph::operator_count() const {
  return static_cast<std::size_t>(std::count_if(nodes_.begin(), nodes_.end(), [](const Node& n) { return !n.is_graph_input(); }));
}

bool Graph::read_only_by(NodeId node, NodeId reader) const {
  if (std::any_of(outputs_.begin(), outputs_.end(), [node](PortRef o) { return o.node == node; })) return false;
  return consumers(node) == std::vector<NodeId>{reader};
}

std::vector<NodeId> Graph::consumers(NodeId node) const {
  checked_node(node, "");
  std::vector<NodeId> out;
  for (const Node& n : nodes_) {
    const bool reads = std::any_of(n.inputs.begin(), n.inputs.end(), [node](PortRef in) { return in.node == node; });
    if (reads) out.push_back(n.id);
  }
  return out;
}

std::vector<std::vector<NodeId>> Graph::all_consumers() const {
  std::vector<std::vector<NodeId>> out(nodes_.size());
  for (const Node& n : nodes_)
    for (PortRef in : n.inputs) {
      std::vector<NodeId>& readers = out[in.node.index()];
      if (readers.empty() || readers.back() != n.id) readers.push_back(n.id);
    }
  return out;
}

std::vector<Use> Graph::uses(PortRef port) const {
  check_port(port, "");
  std::vector<Use> out;
  for (const Node& n : nodes_) {
    for (std::size_t i = 0; i < n.inputs.size(); ++i) {
      if (n.inputs[i] == port) out.push_back(Use{n.id, static_cast<int>(i)});
    }
  }
  return out;
}

void Graph::validate(const OpCatalog& catalog) const {
  std::vector<Diagnostic> problems;
  auto report = [&problems](const std::string& message) { problems.push_back(Diagnostic{{}, message}); };
  std::map<std::string, int> names;
  for (std::size_t index = 0; index < nodes_.size(); ++index) {
    const Node& n = nodes_[index];
    const std::string context = n.describe() + ": ";
    if (n.id != static_cast<int>(index)) {
      report(context + "stored at index " + std::to_string(index));
    }
    if (!n.name.empty() && !names.emplace(n.name, n.id).second) {
      report(context + "the name \"" + n.name + "\" is also used by node " + std::to_string(names[n.name]));
    }
    if (n.view && static_cast<std::int64_t>(n.view->tasks()) != n.tasks()) {
      report(context + "the machine view places " + std::to_string(n.view->tasks()) + " task(s), but the node runs as " +
             std::to_string(n.tasks()));
    }
    if (n.is_graph_input()) {
      if (n.name.empty()) report(context + "graph inputs and weights need a name");
      if (!n.inputs.empty()) report(context + "a graph input cannot read other nodes");
      if (!n.attrs.empty()) report(context + "a graph input has no attributes");
      if (n.output_shapes.size() != 1) {
        report(context + "a graph input has exactly one output, found " + std::to_string(n.output_shapes.size()));
        continue;
      }
      try {
        n.output_shapes.front().validate();
      } catch (const LoomError& e) {
        report(context + "invalid shape: " + e.what());
      }
      continue;
    }
    if (!catalog.has_op(n.op)) {
      report(context + "unknown operator \"" + n.op + "\"");
      continue;
    }
    if (n.inputs.size() != catalog.input_count(n.op)) {
      report(context + n.op + " takes " + std::to_string(catalog.input_count(n.op)) + " input(s), got " + std::to_string(n.inputs.size()));
      continue;
    }
    std::vector<ParallelShape> input_shapes;
    bool inputs_ok = true;
    for (std::size_t i = 0; i < n.inputs.size() && inputs_ok; ++i) {
      const PortRef in = n.inputs[i];
      const std::string where = context + "input " + std::to_string(i) + ": ";
      if (in.node < 0 || in.node >= n.id) {
        report(where + "reads node " + pcg::to_string(in.node) + ", which is not an earlier node");
        inputs_ok = false;
      } else if (in.port < 0 || static_cast<std::size_t>(in.port) >= node(in.node).output_shapes.size()) {
        report(where + "reads " + port_text(in) + ", which does not exist");
        inputs_ok = false;
      } else {
        input_shapes.push_back(shape_of(in));
      }
    }
    if (!inputs_ok) continue;
    try {
      const std::vector<ParallelShape> inferred = catalog.infer(n.op, n.attrs, input_shapes);
      if (inferred != n.output_shapes) {
        report(context + "stored output shapes " + shapes_text(n.output_shapes) + " differ from the inferred " + shapes_text(inferred));
      }
    } catch (const LoomError& e) {
      for (const Diagnostic& d : e.diagnostics()) {
        problems.push_back(Diagnostic{d.where, context + d.message});
      }
    }
  }
  for (std::size_t i = 0; i < outputs_.size(); ++i) {
    try {
      check_port(outputs_[i], "graph output " + std::to_string(i) + ": ");
    } catch (const LoomError& e) {
      report(e.what());
    }
  }
  if (!problems.empty()) throw LoomError(std::move(problems));
}

}  // namespace loom::pcg
