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
  if (!fuse) {
    for (const Node& n : graph.nodes())
      if (!n.is_graph_input() && is_layout_change(n)) out.source[n.id.index()] = n.inputs.at(0);
    return out;
  }
  const std::vector<std::vector<NodeId>> readers = graph.all_consumers();
  std::vector<bool> is_output(graph.size(), false);
  for (PortRef o : graph.outputs()) is_output[o.node.index()] = true;
  for (const Node& n : graph.nodes()) {
    if (n.is_graph_input() || !is_layout_change(n)) continue;
    out.source[n.id.index()] = n.inputs.at(0);
    const MachineView view = view_of(n);
    // Walks back along what each change moves from. A change already fused into `reader` is read
    // by the first change of reader's own fused chain, not by `reader` itself.
    const auto read_only_within = [&](NodeId node, NodeId reader) {
      const std::vector<NodeId>& r = readers[node.index()];
      return !is_output[node.index()] && r.size() == 1 && (r[0] == reader || out.fused_away[r[0].index()]);
    };
    std::vector<NodeId> chain;
    NodeId reader = n.id;
    for (PortRef in = n.inputs[0];
         !graph.node(in.node).is_graph_input() && is_layout_change(graph.node(in.node)) && read_only_within(in.node, reader);) {
      chain.push_back(in.node);
      reader = in.node;
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
  if (graph.node(source.node).is_graph_input()) return false;
  return graph.shape_of(source).V == graph.node(node).output_shapes.at(0).V && graph.consumers(node).empty();
}

}  // namespace loom::pcg
