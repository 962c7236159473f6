#pragma once
// Unity's third search level: a large graph cut into segments at nodes every path crosses, each
// segment searched on its own, then joined back. Only the value of the node at a cut flows from
// one segment to the next, unsplit (replica degree 1 across the cut), so each segment's search
// cannot undo another's.
#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "loom/pcg/graph.hpp"
#include "loom/pcg/op_catalog.hpp"
#include "loom/pcg/rule.hpp"
#include "loom/search/gradient_flow.hpp"
#include "loom/search/plan.hpp"

namespace loom::search {

struct Segment {
  pcg::Graph graph;                           // its own graph inputs stand for the values it reads
  std::map<std::string, pcg::PortRef> reads;  // graph input of `graph` by name -> the original port
  std::vector<pcg::PortRef> provides;         // per output of `graph`, in order: the original port
  std::vector<pcg::NodeId> origin;            // per node of `graph`: the original node (for an input, the one it reads)
};

// Whether a segment's graph input stands for a value computed outside the segment from weights,
// whose gradient training computes (search::takes_gradient).
bool stands_for_a_value_with_gradient(const pcg::Node& input);
// Whether a segment's graph input stands for a value an earlier segment computes (with a gradient
// or without): the segment is not the graph's first.
bool stands_for_another_segments_value(const pcg::Node& input);

// Whether a segment's weight input is read there only by operators that run no backward (a
// recycling pass, cut off from the gradients by stop-gradients further on: cut_off_from_gradients
// over the whole graph). The segment reads the weight through an input of its own, which no
// gradient reaches, while the pass that trains it reads the weight as such.
bool read_without_gradient(const pcg::Node& weight);
// The name of the weight a segment's input reads: its own, or for read_without_gradient, the
// weight's it stands for.
std::string weight_read(const pcg::Node& input);

// Cuts `graph` at the nodes no edge jumps over, into segments of at least `min_nodes` operators
// (the last may hold up to twice that). One segment when the graph is too small to cut. `trained`:
// the weights training updates (CostModel::trains; empty: every weight); `detached`: the inputs
// that pass no gradient back (CostModel::detached_inputs; empty: none). A segment's input stands
// for a value with a gradient where the whole graph's value takes one (values_taking_gradients),
// and its operators that the whole graph cuts off from the gradients read weights through inputs
// of their own (read_without_gradient).
std::vector<Segment> split_graph(const pcg::Graph& graph, std::size_t min_nodes, const TrainedWeight& trained = {},
                                 const DetachedInput& detached = {});

// The original graph with every segment replaced by its (possibly rewritten) graph. Segments must
// come in the order split_graph gave them, each still providing its ports in order.
pcg::Graph join_segments(const pcg::Graph& original, const std::vector<Segment>& segments);

// The same join done by rewriting: each segment's substitutions (`sequences[i]`, recorded on
// segments[i].graph as split_graph cut it) applied to the original graph in segment order. Appends
// every step to `steps` with its match renumbered into the whole graph as it stood before the step,
// so the sequence replays on the whole graph.
pcg::Graph apply_segment_sequences(const pcg::Graph& original, const std::vector<Segment>& segments,
                                   const std::vector<std::vector<AppliedSubstitution>>& sequences, const std::vector<pcg::Rule>& rules,
                                   const pcg::OpCatalog& catalog, std::vector<AppliedSubstitution>& steps);

}  // namespace loom::search
