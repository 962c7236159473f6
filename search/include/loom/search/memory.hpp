#pragma once
// Memory each device needs for one training iteration of a PCG: every piece of every value the
// graph computes or reads is kept on its device (activations are kept for the backward pass), and
// each weight piece carries its gradient and optimizer state besides. The backward pass, walked
// node by node from the last, frees a node's activations once its backward has run, and holds
// meanwhile the gradients of the node's outputs and inputs; the most it holds beyond what the
// forward pass kept is added.
#include <functional>
#include <vector>

#include "loom/pcg/graph.hpp"
#include "loom/pcg/layout_fusion.hpp"
#include "loom/search/gradient_flow.hpp"
#include "loom/search/machine.hpp"

namespace loom::search {

// One step of the memory model's walk: a node's forward (its pieces made and kept) or its backward
// (the most the device holds while it runs), with every device's bytes then.
struct MemoryStep {
  pcg::NodeId node;
  bool backward = false;
  std::vector<double> bytes;  // per device
};

struct MemoryOptions {
  double bytes_per_element = 4;
  double weight_state_copies = 3;  // gradient plus Adam's two moments
  // Whether a node only moves data (a parallelization operator). When given, a graph input read
  // only by such nodes is kept as the pieces they make, where they put them, not whole on its own
  // device, and those pieces of a weight carry its gradient and optimizer state; a graph input that
  // operators read directly is kept where they read it, each device holding the pieces its tasks
  // read, not on the input's own view.
  std::function<bool(const pcg::Node&)> moves_data;
  // Which layout changes run, and from what (layout_changes_as_run; empty: each from its input):
  // one fused into a later change of its chain makes no pieces and holds no gradient, and the
  // change it is fused into moves its gradient back to the chain's first input.
  pcg::LayoutChangeSources layout_changes;
  // Whether training updates a weight (CostModel::trains; empty: every weight). One it keeps
  // fixed holds no gradient or optimizer state, and values made from it alone take no gradient.
  std::function<bool(const pcg::Node&)> trained;
  // Inputs that pass no gradient back (CostModel::detached_inputs; empty: none): what reaches the
  // outputs only through them keeps nothing for a backward pass.
  DetachedInput detached;
  // Per device, how many copies of every piece that is not a weight it keeps (empty: one).
  std::vector<double> activation_copies;
  // Operators whose outputs are dropped after the forward pass and computed again for the backward
  // (recomputation); a graph output is kept. Dropped operators that read each other form a segment,
  // computed again together where the backward pass first reads it and freed as it passes them.
  std::vector<pcg::NodeId> recomputed;
  // Count only what the passes make: leave out graph inputs, weights, and the pieces layout
  // changes cut from them (which the runtime's measured activation peak leaves out too).
  bool activations_only = false;
  // When given, receives every step of the walk: the forward pass node by node in graph order, then
  // the backward pass from the last node. The most of each device's steps is what it needs.
  std::vector<MemoryStep>* trace = nullptr;
};

// Co-shard regions whose backward runs piece by piece: connected operators (not layout changes,
// per `moves_data`) cut into the same pieces on the same devices, some device running several, some of
// them recomputed (`dropped`, per node id) and read by members only. For each piece in turn, the
// dropped values of that piece are computed again, the piece's backward runs through the region,
// and they are freed: a device holds one piece of them at a time. A region must come after every
// other node reading it. Each region's members in graph order.
std::vector<std::vector<pcg::NodeId>> piecewise_regions(const pcg::Graph& graph, const std::function<bool(const pcg::Node&)>& moves_data,
                                                        const std::vector<bool>& dropped);

// Per node id: a graph input, or a layout change (`moves_data`) of one node made so, in a chain
// back to a graph input: values that are fed or cut from what is fed, not computed.
std::vector<bool> made_from_graph_inputs(const pcg::Graph& graph, const std::function<bool(const pcg::Node&)>& moves_data);

// Bytes per device, indexed by device; nodes without a machine view use devices 0, 1, ...
std::vector<double> memory_per_device(const pcg::Graph& graph, const Machine& machine, const MemoryOptions& options = {});

// The first device whose need exceeds its capacity, or -1 when the plan fits.
int first_overfull_device(const std::vector<double>& bytes, const Machine& machine);

// What the device that needs the most needs, of `bytes` per device (0 for none).
double fullest_device_bytes(const std::vector<double>& bytes);

}  // namespace loom::search
