#include "loom/pcg/layout_fusion.hpp"

#include <algorithm>

#include "loom/pcg/collective_groups.hpp"
#include "loom/pcg/piece_moves.hpp"

namespace loom::pcg {

std::optional<CollectiveGroups> collective_groups_on_views(const ParallelShape& from, const MachineView& from_view, const ParallelShape& to,
                                                           const MachineView& to_view, const std::vector<PieceMove>& moves) {
  const auto device = [](const MachineView& v) { return [&v](std::int64_t t) { return v.devices[static_cast<std::size_t>(t)]; }; };
  return collective_groups(from, to, moves, device(from_view), device(to_view));
}

bool moves_as_one_collective(const ParallelShape& from, const MachineView& from_view, const ParallelShape& to, const MachineView& to_view) {
  return collective_groups_on_views(from, from_view, to, to_view, piece_moves(from, from_view, to, to_view)).has_value();
}

LayoutChangeSources fuse_layout_changes(const Graph& graph, const std::function<bool(const Node&)>& is_layout_change,
                                        const std::function<MachineView(const Node&)>& view_of, bool fuse,
                                        const CollectiveTest& one_collective) {
  LayoutChangeSources out;
  out.source.assign(graph.size(), {});
  out.fused_away.assign(graph.size(), false);
  for (const Node& n : graph.nodes()) {
    if (n.is_graph_input() || !is_layout_change(n)) continue;
    out.source[n.id.index()] = n.inputs.at(0);
    if (!fuse) continue;
    const MachineView view = view_of(n);
    std::vector<NodeId> chain;
    for (PortRef in = n.inputs[0]; !graph.node(in.node).is_graph_input() && is_layout_change(graph.node(in.node)) &&
                                   graph.read_only_by(in.node, chain.empty() ? n.id : chain.back());) {
      chain.push_back(in.node);
      in = out.source[in.node.index()];
      const Node& from = graph.node(in.node);
      if (from.is_graph_input()) continue;
      const MachineView from_view = view_of(from);
      if (!one_collective(graph.shape_of(in), from_view, n.output_shapes.at(0), view)) continue;
      for (NodeId id : chain) out.fused_away[id.index()] = true;
      chain.clear();
      out.source[n.id.index()] = in;
    }
  }
  return out;
}

bool is_unread_output(const Graph& graph, NodeId node, PortRef source) {
  const auto& outputs = graph.outputs();
  if (std::find(outputs.begin(), outputs.end(), PortRef{node, 0}) == outputs.end()) return false;
  return graph.shape_of(source).V == graph.node(node).output_shapes.at(0).V && graph.consumers(node).empty();
}

}  // namespace loom::pcg
