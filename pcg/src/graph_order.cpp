#include "loom/pcg/graph_order.hpp"

#include <functional>
#include <queue>

#include "loom/pcg/diagnostic.hpp"

namespace loom::pcg {

Graph ordered_by(const Graph& graph, const std::vector<RunsAhead>& constraints, std::vector<NodeId>* new_ids) {
  const std::size_t size = graph.size();
  std::vector<std::vector<std::size_t>> next(size), previous(size);
  std::vector<std::size_t> waits_for(size, 0);
  const auto edge = [&](NodeId from, NodeId to) {
    next[from.index()].push_back(to.index());
    previous[to.index()].push_back(from.index());
    ++waits_for[to.index()];
  };
  for (const Node& n : graph.nodes())
    for (PortRef in : n.inputs) edge(in.node, n.id);
  for (const RunsAhead& c : constraints) {
    if (graph.node(c.before).id == graph.node(c.after).id) throw LoomError(graph.node(c.before).describe() + " is ordered ahead of itself");
    edge(c.before, c.after);
  }
  // The earliest node that nothing holds back goes next.
  std::priority_queue<std::size_t, std::vector<std::size_t>, std::greater<>> ready;
  for (std::size_t i = 0; i < size; ++i)
    if (waits_for[i] == 0) ready.push(i);
  std::vector<NodeId> renumbered(size, kNoNode);
  Graph out;
  while (!ready.empty()) {
    const Node& n = graph.nodes()[ready.top()];
    ready.pop();
    NodeId id;
    if (n.is_graph_input()) {
      id = out.add_input_like(n, n.output_shapes.front());
    } else {
      std::vector<PortRef> inputs = n.inputs;
      for (PortRef& in : inputs) in.node = renumbered[in.node.index()];
      id = out.add_node_with_shapes(n.op, n.attrs, std::move(inputs), n.output_shapes, n.name);
    }
    if (n.view) out.set_view(id, *n.view);
    renumbered[n.id.index()] = id;
    for (std::size_t reader : next[n.id.index()])
      if (--waits_for[reader] == 0) ready.push(reader);
  }
  if (out.size() != size) {
    // Every node left waits for another one left: walking back through those ends in a cycle.
    std::size_t at = 0;
    while (renumbered[at].valid()) ++at;
    std::vector<std::size_t> step_of(size, size), walk;
    while (step_of[at] == size) {
      step_of[at] = walk.size();
      walk.push_back(at);
      for (std::size_t p : previous[at])
        if (!renumbered[p].valid()) {
          at = p;
          break;
        }
    }
    std::string cycle;
    for (std::size_t k = walk.size(); k-- > step_of[at];) cycle += graph.nodes()[walk[k]].describe() + " -> ";
    throw LoomError("the order asked for and the data close a cycle: " + cycle + graph.nodes()[walk.back()].describe());
  }
  for (PortRef o : graph.outputs()) out.mark_output({renumbered[o.node.index()], o.port});
  if (new_ids) *new_ids = std::move(renumbered);
  return out;
}

}  // namespace loom::pcg
