#include "loom/search/graph_split.hpp"

#include <algorithm>
#include <map>

#include "loom/pcg/diagnostic.hpp"
#include "loom/search/gradient_flow.hpp"
#include "loom/search/replay.hpp"

namespace loom::search {
namespace {

std::vector<int> operators_of(const pcg::Graph& graph) {
  std::vector<int> out;
  for (const pcg::Node& n : graph.nodes())  // creation order is topological
    if (!n.is_graph_input()) out.push_back(n.id);
  return out;
}

// Positions of `order` that no edge jumps over.
std::vector<std::size_t> cut_points(const pcg::Graph& graph, const std::vector<int>& order) {
  std::map<int, std::size_t> pos;
  for (std::size_t i = 0; i < order.size(); ++i) pos[order[i]] = i;
  std::vector<std::size_t> cuts;
  std::size_t reach = 0;
  for (std::size_t p = 0; p < order.size(); ++p) {
    if (reach <= p) cuts.push_back(p);
    for (int c : graph.consumers(order[p])) reach = std::max(reach, pos.at(c));
  }
  return cuts;
}

// The name of a segment's input standing for a value an earlier segment computes begins so, and
// with a gradient, so.
const std::string kSegmentInput = "segment_input_";
const std::string kWithGradient = kSegmentInput + "with_gradient_";
// The name of a segment's weight input read only by operators that run no backward begins so.
const std::string kWithoutGradient = "segment_weight_without_gradient_";

Segment extract(const pcg::Graph& graph, const std::vector<int>& members, const std::vector<bool>& with_gradient,
                const std::vector<bool>& cut_off) {
  Segment s;
  std::map<int, bool> inside;
  for (int m : members) inside[m] = true;
  std::map<std::pair<pcg::PortRef, bool>, pcg::PortRef> local;  // by port, and whether read without gradient
  for (int m : members) {
    const pcg::Node& n = graph.node(m);
    std::vector<pcg::PortRef> inputs;
    for (pcg::PortRef in : n.inputs) {
      const pcg::Node& p = graph.node(in.node);
      const bool without_gradient = cut_off[static_cast<std::size_t>(m)] && p.op == pcg::kWeightOp;
      const std::pair<pcg::PortRef, bool> key{in, without_gradient};
      if (!local.count(key)) {
        const std::string kind = with_gradient[in.node.index()] ? kWithGradient : kSegmentInput;
        const std::string name = without_gradient     ? kWithoutGradient + p.name
                                 : p.is_graph_input() ? p.name
                                                      : kind + pcg::to_string(in.node) + "_" + std::to_string(in.port);
        local[key] = {s.graph.add_input(name, graph.shape_of(in), p.op == pcg::kWeightOp), 0};
        s.reads[name] = in;
        s.origin.push_back(in.node);
      }
      inputs.push_back(local.at(key));
    }
    const int id = s.graph.add_node_with_shapes(n.op, n.attrs, inputs, n.output_shapes, n.name);
    s.origin.push_back(m);
    for (std::size_t port = 0; port < n.output_shapes.size(); ++port)
      local[{{m, static_cast<int>(port)}, false}] = {id, static_cast<int>(port)};
  }
  for (int m : members) {
    const pcg::Node& n = graph.node(m);
    for (std::size_t port = 0; port < n.output_shapes.size(); ++port) {
      const pcg::PortRef p{m, static_cast<int>(port)};
      bool needed = std::find(graph.outputs().begin(), graph.outputs().end(), p) != graph.outputs().end();
      for (const pcg::Use& u : graph.uses(p)) needed |= !inside.count(u.node);
      if (!needed) continue;
      s.graph.mark_output(local.at({p, false}));
      s.provides.push_back(p);
    }
  }
  return s;
}

}  // namespace

bool stands_for_a_value_with_gradient(const pcg::Node& input) {
  return input.op == pcg::kInputOp && input.name.rfind(kWithGradient, 0) == 0;
}

bool stands_for_another_segments_value(const pcg::Node& input) {
  return input.op == pcg::kInputOp && input.name.rfind(kSegmentInput, 0) == 0;
}

bool read_without_gradient(const pcg::Node& weight) { return weight.op == pcg::kWeightOp && weight.name.rfind(kWithoutGradient, 0) == 0; }

std::string weight_read(const pcg::Node& input) {
  return read_without_gradient(input) ? input.name.substr(kWithoutGradient.size()) : input.name;
}

std::vector<Segment> split_graph(const pcg::Graph& graph, std::size_t min_nodes, const TrainedWeight& trained,
                                 const DetachedInput& detached) {
  const std::vector<bool> with_gradient = values_taking_gradients(graph, trained, detached);
  const std::vector<bool> cut_off = cut_off_from_gradients(graph, detached);
  const std::vector<int> order = operators_of(graph);
  std::vector<std::vector<int>> parts{{}};
  std::size_t begin = 0;
  for (std::size_t cut : cut_points(graph, order)) {
    if (cut + 1 - begin < min_nodes || order.size() - (cut + 1) < min_nodes) continue;
    parts.back().assign(order.begin() + static_cast<std::ptrdiff_t>(begin), order.begin() + static_cast<std::ptrdiff_t>(cut) + 1);
    parts.emplace_back();
    begin = cut + 1;
  }
  parts.back().assign(order.begin() + static_cast<std::ptrdiff_t>(begin), order.end());
  std::vector<Segment> out;
  for (const auto& p : parts)
    if (!p.empty()) out.push_back(extract(graph, p, with_gradient, cut_off));
  return out;
}

pcg::Graph join_segments(const pcg::Graph& original, const std::vector<Segment>& segments) {
  pcg::Graph out;
  std::map<pcg::PortRef, pcg::PortRef> where;
  for (const pcg::Node& n : original.nodes())
    if (n.is_graph_input()) where[{n.id, 0}] = {out.add_input_like(n, n.output_shapes[0]), 0};
  for (const Segment& s : segments) {
    std::map<pcg::PortRef, pcg::PortRef> local;
    for (const pcg::Node& n : s.graph.nodes()) {
      if (n.is_graph_input()) {
        auto it = s.reads.find(n.name);
        if (it == s.reads.end()) throw LoomError("a segment reads '" + n.name + "', which it was not cut with");
        local[{n.id, 0}] = where.at(it->second);
        continue;
      }
      std::vector<pcg::PortRef> inputs;
      for (pcg::PortRef in : n.inputs) inputs.push_back(local.at(in));
      const int id = out.add_node_with_shapes(n.op, n.attrs, inputs, n.output_shapes, n.name);
      for (std::size_t port = 0; port < n.output_shapes.size(); ++port)
        local[{n.id, static_cast<int>(port)}] = {id, static_cast<int>(port)};
    }
    if (s.graph.outputs().size() != s.provides.size())
      throw LoomError("a segment provides a different number of values than it was cut with");
    for (std::size_t k = 0; k < s.provides.size(); ++k) where[s.provides[k]] = local.at(s.graph.outputs()[k]);
  }
  for (pcg::PortRef o : original.outputs()) out.mark_output(where.at(o));
  return out;
}

pcg::Graph apply_segment_sequences(const pcg::Graph& original, const std::vector<Segment>& segments,
                                   const std::vector<std::vector<AppliedSubstitution>>& sequences, const std::vector<pcg::Rule>& rules,
                                   const pcg::OpCatalog& catalog, std::vector<AppliedSubstitution>& steps) {
  pcg::Graph whole = original;
  std::vector<pcg::NodeId> current = original.topological_order();  // original node -> its id in `whole`
  for (std::size_t k = 0; k < segments.size() && k < sequences.size(); ++k) {
    pcg::Graph local = segments[k].graph;
    std::vector<pcg::NodeId> to_whole;  // node of `local` -> node of `whole`
    for (pcg::NodeId o : segments[k].origin) to_whole.push_back(current[o.index()]);
    for (const AppliedSubstitution& s : sequences[k]) {
      const std::optional<pcg::Rule> rule = rule_applied(rules, s);
      if (!rule) throw LoomError("segment " + std::to_string(k + 1) + ": rule " + s.rule + " is not in the library searched");
      AppliedSubstitution renumbered = s;
      for (pcg::NodeId& n : renumbered.match)
        if (n.valid()) n = to_whole[n.index()];
      pcg::Rewrite in_local = apply_at(local, *rule, s.match, catalog);
      pcg::Rewrite in_whole = apply_at(whole, *rule, renumbered.match, catalog);
      std::vector<pcg::NodeId> next(in_local.graph.size(), pcg::kNoNode);
      for (std::size_t n = 0; n < to_whole.size(); ++n) {
        const pcg::NodeId moved = in_local.old_to_new[n];
        // A local node whose counterpart an earlier rewrite removed from `whole` has none still.
        if (moved.valid() && to_whole[n].valid()) next[moved.index()] = in_whole.old_to_new[to_whole[n].index()];
      }
      for (std::size_t n = 0; n < in_local.inserted.size(); ++n) next[in_local.inserted[n].index()] = in_whole.inserted[n];
      for (pcg::NodeId& c : current)
        if (c.valid()) c = in_whole.old_to_new[c.index()];
      to_whole = std::move(next);
      local = std::move(in_local.graph);
      whole = std::move(in_whole.graph);
      steps.push_back(std::move(renumbered));
    }
  }
  return whole;
}

}  // namespace loom::search
