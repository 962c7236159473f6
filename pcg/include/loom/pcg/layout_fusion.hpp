#pragma once
// Which value each layout change of a plan moves from: the one account of it that the simulator's
// task graph charges and the runtime executes. A layout change is a parallelization operator or a
// fused form. A chain of them, each read only by the next, whose whole change is one collective
// among the devices runs as that one change from the chain's first input, and the changes before
// it in the chain run not at all. The changes are taken in graph order, each walking back along
// what the changes before it already run from (past those they fused away) and taking the farthest
// input from which its whole change is one collective: greedy, so a change fused into an earlier
// one is no longer an input a later change may start from. Unity fuses parallel operators at run
// time the same way: a reduce then a replicate is one allreduce.
#include <functional>
#include <optional>
#include <vector>

#include "loom/pcg/collective_groups.hpp"
#include "loom/pcg/graph.hpp"
#include "loom/pcg/machine_view.hpp"
#include "loom/pcg/parallel_shape.hpp"
#include "loom/pcg/piece_moves.hpp"

namespace loom::pcg {

struct LayoutChangeSources {
  std::vector<PortRef> source;   // per node id: what a layout change moves from (its input unless fused)
  std::vector<bool> fused_away;  // per node id: a layout change folded into a later change of its chain
};

// The collective groups (collective_groups) that `moves`, the change's piece_moves, make when each
// task's rank is the device its view puts it on.
std::optional<CollectiveGroups> collective_groups_on_views(const ParallelShape& from, const MachineView& from_view, const ParallelShape& to,
                                                           const MachineView& to_view, const std::vector<PieceMove>& moves);

// Whether the change of a value from one layout on its devices to another on theirs moves as one
// collective among the devices (collective_groups over its piece_moves).
bool moves_as_one_collective(const ParallelShape& from, const MachineView& from_view, const ParallelShape& to, const MachineView& to_view);

using CollectiveTest = std::function<bool(const ParallelShape&, const MachineView&, const ParallelShape&, const MachineView&)>;

// `is_layout_change` tells the layout changes among the graph's nodes, `view_of` each node's
// devices. Without `fuse`, every layout change moves from its own input (a single process, which
// runs no collectives). `one_collective` answers moves_as_one_collective (a caller that asks often
// passes a cached one).
LayoutChangeSources fuse_layout_changes(const Graph& graph, const std::function<bool(const Node&)>& is_layout_change,
                                        const std::function<MachineView(const Node&)>& view_of, bool fuse = true,
                                        const CollectiveTest& one_collective = moves_as_one_collective);

// Whether layout change `node`, moving from `source`, only makes a graph output nobody reads, from
// pieces with no partial sums to add up, that some operator computed: it is not run, and the loss
// reads the output in the source's pieces (the runtime, the simulator's tasks and its memory
// alike). A change of a graph input itself runs, as the input is held whole, not in pieces.
bool is_unread_output(const Graph& graph, NodeId node, PortRef source);

}  // namespace loom::pcg
