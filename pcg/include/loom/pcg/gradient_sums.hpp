#pragma once
// How the gradients of a weight's copies are summed among the devices holding them: the runtime
// sums them so, and the simulator's task graph charges them so (one account of it, used by both).
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <vector>

#include "loom/pcg/graph.hpp"
#include "loom/pcg/layout_fusion.hpp"
#include "loom/pcg/piece_moves.hpp"

namespace loom::pcg {

// Gradient boxes summed among the same devices and complete at the same node are packed into one
// buffer and summed together (a sum per box would pay its latency per box), except a whole weight's
// gradient of at least this many elements, summed where it lies in a sum of its own: copying it in
// and out of the buffer would cost more than the latency it saves.
inline constexpr std::int64_t kGradientSumInPlaceElements = 4096;

// Whether a box of a weight's gradient (`whole`: the weight's whole region) is summed in place.
inline bool gradient_summed_in_place(const Region& box, const Region& whole) {
  return box == whole && box.elements() >= kGradientSumInPlaceElements;
}

// One sum: the gradient of `box` among `devices` (ascending).
struct GradientShare {
  std::vector<int> devices;
  Region box;
};

// Which devices read which box of a graph input whose gradient the plan sums, as its tasks read
// it: a layout change over the input (not fused away) gives each device the boxes its pieces
// move; an operator reading the input directly reads it whole on each of its devices; a graph
// output that is the input itself is read whole on device 0.
struct InputReads {
  std::map<Region, std::set<int>> boxes;
  NodeId first_reader = -1;  // the first node in graph order that reads it (-1: only the graph's outputs)

  // The boxes overlap without being equal.
  bool overlapping() const;
  // The sums that keep the copies equal: each box among the devices reading it; when the boxes
  // overlap, the whole input among every one of `devices` devices (the plan's machine: the runtime
  // has a process per device, and every one of them sums).
  std::vector<GradientShare> sums(const Region& whole, int devices) const;
};

// piece_moves(from, from_view, to, to_view), from a cache that outlives the call.
using PieceMovesOf =
    std::function<const std::vector<PieceMove>&(const ParallelShape&, const MachineView&, const ParallelShape&, const MachineView&)>;

// Per graph input node for which `summed` holds, its reads (only those read somewhere). A layout
// change's moves come from `moves_of` where given, else from piece_moves.
std::map<NodeId, InputReads> input_reads(const Graph& graph, const LayoutChangeSources& fused,
                                         const std::function<bool(const Node&)>& is_layout_change,
                                         const std::function<MachineView(const Node&)>& view_of,
                                         const std::function<bool(const Node&)>& summed, const PieceMovesOf& moves_of = {});

}  // namespace loom::pcg
