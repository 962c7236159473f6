#include "loom/pcg/gradient_sums.hpp"

#include <numeric>

namespace loom::pcg {

bool InputReads::overlapping() const {
  std::vector<Region> all;
  for (const auto& [box, devices] : boxes) all.push_back(box);
  return any_overlap(all);
}

std::vector<GradientShare> InputReads::sums(const Region& whole, int devices) const {
  if (overlapping()) {
    std::vector<int> everyone(static_cast<std::size_t>(devices));
    std::iota(everyone.begin(), everyone.end(), 0);
    return {{std::move(everyone), whole}};
  }
  std::vector<GradientShare> out;
  for (const auto& [box, readers] : boxes) out.push_back({{readers.begin(), readers.end()}, box});
  return out;
}

std::map<NodeId, InputReads> input_reads(const Graph& graph, const LayoutChangeSources& fused,
                                         const std::function<bool(const Node&)>& is_layout_change,
                                         const std::function<MachineView(const Node&)>& view_of,
                                         const std::function<bool(const Node&)>& summed, const PieceMovesOf& moves_of) {
  std::map<NodeId, InputReads> out;
  const auto note = [&](const Node& input, const Region& box, int device, NodeId reader) {
    if (!summed(input)) return;
    InputReads& reads = out[input.id];
    reads.boxes[box].insert(device);
    if (reads.first_reader < 0) reads.first_reader = reader;
  };
  const auto whole = [](const Node& input) { return whole_region(input.output_shapes.at(0).dims); };
  for (const Node& n : graph.nodes()) {
    if (n.is_graph_input()) continue;
    const MachineView view = view_of(n);
    if (is_layout_change(n)) {
      const PortRef source = fused.source[n.id.index()];
      const Node& producer = graph.node(source.node);
      if (fused.fused_away[n.id.index()] || !producer.is_graph_input()) continue;
      std::vector<PieceMove> worked_out;
      const std::vector<PieceMove>& moves =
          moves_of ? moves_of(graph.shape_of(source), view_of(producer), n.output_shapes.at(0), view)
                   : (worked_out = piece_moves(graph.shape_of(source), view_of(producer), n.output_shapes.at(0), view));
      for (const PieceMove& m : moves) note(producer, m.region, view.devices[static_cast<std::size_t>(m.to)], n.id);
      continue;
    }
    for (PortRef in : n.inputs) {
      const Node& producer = graph.node(in.node);
      if (producer.is_graph_input())
        for (std::int64_t t = 0; t < n.tasks(); ++t) note(producer, whole(producer), view.devices[static_cast<std::size_t>(t)], n.id);
    }
  }
  for (PortRef o : graph.outputs())
    if (graph.node(o.node).is_graph_input()) note(graph.node(o.node), whole(graph.node(o.node)), 0, -1);
  return out;
}

}  // namespace loom::pcg
