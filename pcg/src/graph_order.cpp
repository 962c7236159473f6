#include "loom/pcg/graph_order.hpp"

#include <functional>
#include <queue>

#include "loom/pcg/diagnostic.hpp"

namespace loom::pcg {

Graph ordered_by(const Graph& graph, const std::vector<RunsAhead>& constraints, std::vector<NodeId>* new_ids) {
  const std::size_t size = graph.size();
  std::vector<std::vector<std::size_t>> next(size);
  std::vector<std::size_t> waits_for(size, 0);
  const auto edge = [&](NodeId from, NodeId to) {
    next[from.index()].push_back(to.index());
    ++waits_for[to.index()];
  };
  for (const Node& n : graph.nodes())
    for (PortRef in : n.inputs) edge(in.node, n.id);
  for (const RunsAhead& c : constraints) {
    graph.node(c.before);
    graph.node(c.after);
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
      id = out.add_input(n.name, n.output_shapes.front(), n.op == kWeightOp);
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
    std::string waiting;
    for (const Node& n : graph.nodes())
      if (!renumbered[n.id.index()].valid()) waiting += (waiting.empty() ? "" : ", ") + n.describe();
    throw LoomError("the order asked for and the data close a cycle: these nodes wait, in the cycle or behind it: " + waiting);
  }
  for (PortRef o : graph.outputs()) out.mark_output({renumbered[o.node.index()], o.port});
  if (new_ids) *new_ids = std::move(renumbered);
  return out;
}

}  // namespace loom::pcg
