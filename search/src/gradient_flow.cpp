#include "loom/search/gradient_flow.hpp"

#include <algorithm>
#include <set>

#include "loom/search/graph_split.hpp"

namespace loom::search {
namespace {

// Where gradients start: trained weights, and segment inputs standing for values made from them.
bool gradient_source(const pcg::Node& n, const TrainedWeight& trained) {
  return (n.op == pcg::kWeightOp && (!trained || trained(n))) || stands_for_a_value_with_gradient(n);
}

bool is_detached(const DetachedInput& detached, const pcg::Node& n, std::size_t slot) { return detached && detached(n, slot); }

// Per node, whether a gradient from the graph's outputs reaches it: through any input (`live`
// false) or only through inputs that pass it back (`live` true).
std::vector<bool> reached_from_outputs(const pcg::Graph& graph, const DetachedInput& detached, bool live) {
  std::vector<bool> reached(graph.size(), false);
  for (pcg::PortRef o : graph.outputs()) reached[o.node.index()] = true;
  for (auto it = graph.nodes().rbegin(); it != graph.nodes().rend(); ++it) {
    if (!reached[it->id.index()]) continue;
    for (std::size_t i = 0; i < it->inputs.size(); ++i)
      if (!live || !is_detached(detached, *it, i)) reached[it->inputs[i].node.index()] = true;
  }
  return reached;
}

}  // namespace

bool takes_gradient(const pcg::Graph& graph, pcg::PortRef port, const TrainedWeight& trained, const DetachedInput& detached) {
  std::vector<pcg::NodeId> todo{port.node};
  std::set<pcg::NodeId> seen{port.node};
  while (!todo.empty()) {
    const pcg::Node& n = graph.node(todo.back());
    todo.pop_back();
    if (gradient_source(n, trained)) return true;
    for (std::size_t i = 0; i < n.inputs.size(); ++i)
      if (!is_detached(detached, n, i) && seen.insert(n.inputs[i].node).second) todo.push_back(n.inputs[i].node);
  }
  return false;
}

std::vector<bool> gradient_flow(const pcg::Graph& graph, const std::function<bool(const pcg::Node&)>& source,
                                const DetachedInput& detached) {
  std::vector<bool> taken(graph.size(), false);
  bool detaches = false;
  for (const pcg::Node& n : graph.nodes()) {
    bool t = source(n);
    for (std::size_t i = 0; i < n.inputs.size(); ++i) {
      if (is_detached(detached, n, i)) {
        detaches = true;
        continue;
      }
      t = t || taken[n.inputs[i].node.index()];
    }
    taken[n.id.index()] = t;
  }
  if (!detaches) return taken;
  const std::vector<bool> cut_off = cut_off_from_gradients(graph, detached);
  for (std::size_t i = 0; i < taken.size(); ++i)
    if (cut_off[i]) taken[i] = false;
  return taken;
}

std::vector<bool> cut_off_from_gradients(const pcg::Graph& graph, const DetachedInput& detached) {
  std::vector<bool> cut_off(graph.size(), false);
  const auto detaches = [&detached](const pcg::Node& n) {
    for (std::size_t i = 0; i < n.inputs.size(); ++i)
      if (detached(n, i)) return true;
    return false;
  };
  // Every plan the search costs asks: most graphs detach nothing, and need no walk from the outputs.
  if (!detached || std::none_of(graph.nodes().begin(), graph.nodes().end(), detaches)) return cut_off;
  // A value that leads nowhere is not cut off: its backward adds zeros, as it always has.
  const std::vector<bool> reached = reached_from_outputs(graph, detached, false);
  const std::vector<bool> live = reached_from_outputs(graph, detached, true);
  for (std::size_t i = 0; i < cut_off.size(); ++i) cut_off[i] = reached[i] && !live[i];
  return cut_off;
}

std::vector<bool> freed_after_forward(const pcg::Graph& graph, const DetachedInput& detached, const std::vector<bool>& taking) {
  std::vector<bool> freed = cut_off_from_gradients(graph, detached);
  for (const pcg::Node& n : graph.nodes())
    if (taking[n.id.index()])
      for (pcg::PortRef in : n.inputs) freed[in.node.index()] = false;
  return freed;
}

std::vector<bool> values_taking_gradients(const pcg::Graph& graph, const TrainedWeight& trained, const DetachedInput& detached) {
  return gradient_flow(
      graph, [&trained](const pcg::Node& n) { return gradient_source(n, trained); }, detached);
}

bool cut_off_from_gradients(const pcg::Graph& graph, const pcg::Node& node, const DetachedInput& detached) {
  if (!detached) return false;
  // Only the nodes after it read it: the walk from the outputs stops at it.
  const std::size_t node_at = node.id.index();
  std::vector<bool> reached(graph.size() - node_at, false), live(graph.size() - node_at, false);
  for (pcg::PortRef o : graph.outputs())
    if (o.node.index() >= node_at) reached[o.node.index() - node_at] = live[o.node.index() - node_at] = true;
  for (std::size_t at = graph.size(); at-- > node_at;) {
    if (!reached[at - node_at]) continue;
    const pcg::Node& n = graph.nodes()[at];
    for (std::size_t i = 0; i < n.inputs.size(); ++i) {
      const std::size_t from = n.inputs[i].node.index();
      if (from < node_at) continue;
      reached[from - node_at] = true;
      if (live[at - node_at] && !live[from - node_at] && !detached(n, i)) live[from - node_at] = true;
    }
  }
  return reached[0] && !live[0];
}

std::vector<bool> inputs_taking_gradients(const pcg::Graph& graph, const pcg::Node& node, const TrainedWeight& trained,
                                          const DetachedInput& detached) {
  std::vector<bool> taken;
  for (std::size_t i = 0; i < node.inputs.size(); ++i)
    taken.push_back(!is_detached(detached, node, i) && takes_gradient(graph, node.inputs[i], trained, detached));
  return taken;
}

}  // namespace loom::search
