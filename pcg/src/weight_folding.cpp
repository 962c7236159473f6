#include "loom/pcg/weight_folding.hpp"

#include <algorithm>
#include <memory>
#include <set>
#include <utility>
#include <vector>

namespace loom::pcg {
namespace {

bool whole(const ParallelShape& shape) { return shape.tasks() == 1; }

bool foldable(const Graph& graph, const Node& n, const OpCatalog& catalog) {
  if (n.is_graph_input() || n.inputs.empty() || n.output_shapes.size() != 1 || !whole(n.output_shapes.front())) return false;
  if (std::any_of(graph.outputs().begin(), graph.outputs().end(), [&](PortRef o) { return o.node == n.id; })) return false;
  std::set<NodeId> parts;
  std::vector<ParallelShape> shapes;
  for (PortRef in : n.inputs) {
    const Node& part = graph.node(in.node);
    // A weight read twice would have its elements twice.
    if (part.op != kWeightOp || !parts.insert(part.id).second || !whole(part.output_shapes.front())) return false;
    shapes.push_back(part.output_shapes.front());
  }
  for (NodeId part : parts)
    if (!graph.read_only_by(part, n.id)) return false;
  return catalog.moves_each_element_once(n.op, n.attrs, shapes);
}

// Copies the recipe `from` into `into`; returns where its output lands.
PortRef splice(Graph& into, const Graph& from) {
  std::vector<NodeId> to(from.size());
  for (const Node& n : from.nodes()) {
    if (n.is_graph_input()) {
      to[n.id.index()] = into.add_input(n.name, n.output_shapes.front(), n.op == kWeightOp);
      continue;
    }
    std::vector<PortRef> inputs;
    for (PortRef in : n.inputs) inputs.push_back({to[in.node.index()], in.port});
    to[n.id.index()] = into.add_node_with_shapes(n.op, n.attrs, std::move(inputs), n.output_shapes, n.name);
  }
  const PortRef made = from.outputs().front();
  return {to[made.node.index()], made.port};
}

// The weight as a recipe reads it: its own parts where it is folded.
PortRef add_part(Graph& recipe, const Node& weight) {
  if (weight.folded_from) return splice(recipe, *weight.folded_from.parts);
  return {recipe.add_input(weight.name, weight.output_shapes.front(), true), 0};
}

// Its parts' names joined, e.g. "l0.wq+l0.wk", or of one part its operator's, e.g. "transpose(w)":
// never a part's own name, which checkpoints keep. Numbered when `graph` has another node by it.
std::string folded_name(const Graph& graph, const Graph& recipe, const std::vector<bool>& part) {
  std::string name;
  std::size_t parts = 0;
  for (const Node& n : recipe.nodes())
    if (n.is_graph_input()) {
      name += (name.empty() ? "" : "+") + n.name;
      ++parts;
    }
  if (parts == 1) name = recipe.node(recipe.outputs().front().node).op + "(" + name + ")";
  const auto taken = [&](const std::string& candidate) {
    const auto found = graph.find(candidate);
    return found && !part[found->index()];
  };
  std::string candidate = name;
  for (int k = 2; taken(candidate); ++k) candidate = name + "#" + std::to_string(k);
  return candidate;
}

std::vector<NodeId> renumbered(const std::vector<NodeId>& ids, const std::vector<NodeId>& to) {
  std::vector<NodeId> out;
  for (NodeId id : ids)
    if (id >= 0 && to[id.index()] >= 0) out.push_back(to[id.index()]);
  return out;
}

}  // namespace

void fold_inserted_weights(Rewrite& rewrite, const OpCatalog& catalog) {
  const Graph& graph = rewrite.graph;
  std::vector<bool> folded(graph.size(), false), part(graph.size(), false);
  bool any = false;
  for (NodeId id : rewrite.inserted)
    if (foldable(graph, graph.node(id), catalog)) {
      any = folded[id.index()] = true;
      for (PortRef in : graph.node(id).inputs) part[in.node.index()] = true;
    }
  if (!any) return;

  Graph out;
  std::vector<NodeId> to(graph.size(), kNoNode);
  for (const Node& n : graph.nodes()) {
    if (part[n.id.index()]) continue;
    NodeId id;
    if (folded[n.id.index()]) {
      auto recipe = std::make_shared<Graph>();
      std::vector<PortRef> inputs;
      for (PortRef in : n.inputs) inputs.push_back(add_part(*recipe, graph.node(in.node)));
      recipe->mark_output({recipe->add_node_with_shapes(n.op, n.attrs, std::move(inputs), n.output_shapes), 0});
      std::string name = folded_name(graph, *recipe, part);
      id = out.add_folded_weight(std::move(name), n.output_shapes.front(), FoldRecipe{std::move(recipe)});
    } else if (n.is_graph_input()) {
      id = out.add_input_like(n, n.output_shapes.front());
    } else {
      std::vector<PortRef> inputs;
      for (PortRef in : n.inputs) inputs.push_back({to[in.node.index()], in.port});
      id = out.add_node_with_shapes(n.op, n.attrs, std::move(inputs), n.output_shapes, n.name);
    }
    if (n.view) out.set_view(id, *n.view);
    to[n.id.index()] = id;
  }
  for (PortRef o : graph.outputs()) out.mark_output({to[o.node.index()], o.port});

  for (NodeId& id : rewrite.old_to_new)
    if (id >= 0) id = to[id.index()];
  rewrite.inserted = renumbered(rewrite.inserted, to);
  rewrite.touched = renumbered(rewrite.touched, to);
  rewrite.graph = std::move(out);
}

Graph unfolded(const Graph& graph) {
  Graph out;
  // Where each node's first port lands: a folded weight's one port is its recipe's output.
  std::vector<PortRef> to(graph.size());
  const auto landed = [&](PortRef port) { return PortRef{to[port.node.index()].node, to[port.node.index()].port + port.port}; };
  for (const Node& n : graph.nodes()) {
    if (n.folded_from) {
      to[n.id.index()] = splice(out, *n.folded_from.parts);
      continue;
    }
    NodeId id;
    if (n.is_graph_input()) {
      id = out.add_input_like(n, n.output_shapes.front());
    } else {
      std::vector<PortRef> inputs;
      for (PortRef in : n.inputs) inputs.push_back(landed(in));
      id = out.add_node_with_shapes(n.op, n.attrs, std::move(inputs), n.output_shapes, n.name);
    }
    if (n.view) out.set_view(id, *n.view);
    to[n.id.index()] = {id, 0};
  }
  for (PortRef o : graph.outputs()) out.mark_output(landed(o));
  return out;
}

std::vector<std::string> weight_parts(const Node& weight) {
  if (!weight.folded_from) return {weight.name};
  std::vector<std::string> names;
  for (const Node& n : weight.folded_from.parts->nodes())
    if (n.is_graph_input()) names.push_back(n.name);
  return names;
}

bool has_folded_weights(const Graph& graph) {
  return std::any_of(graph.nodes().begin(), graph.nodes().end(), [](const Node& n) { return static_cast<bool>(n.folded_from); });
}

}  // namespace loom::pcg
