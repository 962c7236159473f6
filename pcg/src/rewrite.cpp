#include "loom/pcg/rewrite.hpp"

#include <algorithm>
#include <map>
#include <queue>
#include <set>
#include <tuple>
#include <utility>

#include "loom/pcg/diagnostic.hpp"
#include "loom/pcg/weight_folding.hpp"

namespace loom::pcg {
namespace {

// A node of the rewritten graph before it gets its id: a surviving node of the old graph or an
// operator node of the RHS.
struct Item {
  bool from_rhs = false;
  int id = 0;  // old graph id, or RHS id
};

// Where a value of the rewritten graph comes from.
struct Source {
  bool from_rhs = false;
  PortRef port;
  auto operator<=>(const Source&) const = default;
};

}  // namespace

RewriteOutcome apply_match(const Graph& graph, const Rule& rule, const Match& match, const OpCatalog& catalog) {
  const Graph& rhs = rule.rhs;
  RewriteOutcome outcome;

  // The RHS on the bound inputs, to infer its shapes. The catalog refuses sizes an operator's
  // requirements exclude, and proofs rely on it: a rule is proved only where both sides are
  // well-typed (the verifier states every requirement of both sides as a fact).
  Graph scratch;
  std::vector<PortRef> rhs_input_port(rhs.size());  // bound graph port of each RHS graph input
  try {
    for (const Node& n : rhs.nodes()) {
      if (n.is_graph_input()) {
        auto it = match.bindings.find(n.name);
        if (it == match.bindings.end()) {
          outcome.declined = "the right-hand side reads \"" + n.name + "\", which the left-hand side does not bind";
          return outcome;
        }
        rhs_input_port[n.id.index()] = it->second;
        scratch.add_input(n.name, graph.shape_of(it->second), n.op == kWeightOp);
      } else {
        scratch.add_node(catalog, n.op, rhs_attributes(rule, n.id, match.symbols), n.inputs);
      }
    }
  } catch (const LoomError& e) {
    outcome.declined = "the right-hand side does not fit the bound inputs: " + std::string(e.what());
    return outcome;
  }

  auto rhs_source = [&](PortRef p) {
    return rhs.node(p.node).is_graph_input() ? Source{false, rhs_input_port[p.node.index()]} : Source{true, p};
  };

  // Each replaced LHS output is redirected to the matching RHS output.
  std::map<PortRef, Source> replaced;
  for (std::size_t i = 0; i < rule.lhs.outputs().size(); ++i) {
    const PortRef l = rule.lhs.outputs()[i];
    if (match.nodes.at(l.node.index()) < 0) {
      outcome.declined = "output " + std::to_string(i) + " of the left-hand side is a bare variable";
      return outcome;
    }
    const PortRef old{match.nodes[l.node.index()], l.port};
    const ParallelShape& want = graph.shape_of(old);
    const ParallelShape& got = scratch.shape_of(rhs.outputs()[i]);
    if (want != got) {
      outcome.declined = "output " + std::to_string(i) + " of the right-hand side would be " + got.to_string() + " where the graph has " +
                         want.to_string();
      return outcome;
    }
    replaced[old] = rhs_source(rhs.outputs()[i]);
  }
  auto redirect = [&](PortRef p) {
    auto it = replaced.find(p);
    return it == replaced.end() ? Source{false, p} : it->second;
  };

  // Order the surviving nodes and the RHS nodes topologically, keeping the old order and placing
  // the RHS where the last matched node was.
  const std::vector<NodeId> matched = match.matched_nodes();
  const NodeId anchor = matched.empty() ? NodeId() : matched.back();
  std::vector<Item> items;
  std::map<std::pair<bool, int>, std::size_t> item_of;
  for (const Node& n : graph.nodes())
    if (!std::binary_search(matched.begin(), matched.end(), n.id)) items.push_back({false, n.id});
  for (const Node& n : rhs.nodes())
    if (!n.is_graph_input()) items.push_back({true, n.id});
  for (std::size_t i = 0; i < items.size(); ++i) item_of[{items[i].from_rhs, items[i].id}] = i;

  std::vector<std::vector<Source>> inputs(items.size());
  std::vector<int> pending(items.size(), 0);
  std::vector<std::vector<std::size_t>> dependents(items.size());
  for (std::size_t i = 0; i < items.size(); ++i) {
    const Node& n = items[i].from_rhs ? rhs.node(items[i].id) : graph.node(items[i].id);
    for (PortRef in : n.inputs) inputs[i].push_back(items[i].from_rhs ? rhs_source(in) : redirect(in));
    std::set<std::size_t> producers;
    for (const Source& s : inputs[i]) producers.insert(item_of.at({s.from_rhs, s.port.node}));
    pending[i] = static_cast<int>(producers.size());
    for (std::size_t p : producers) dependents[p].push_back(i);
  }
  using Key = std::tuple<int, int, std::size_t>;  // position in the old order, RHS order, item
  auto key = [&](std::size_t i) { return items[i].from_rhs ? Key{anchor, 1 + items[i].id, i} : Key{items[i].id, 0, i}; };
  std::priority_queue<Key, std::vector<Key>, std::greater<>> ready;
  for (std::size_t i = 0; i < items.size(); ++i)
    if (pending[i] == 0) ready.push(key(i));
  std::vector<std::size_t> order;
  while (!ready.empty()) {
    const std::size_t i = std::get<2>(ready.top());
    ready.pop();
    order.push_back(i);
    for (std::size_t d : dependents[i])
      if (--pending[d] == 0) ready.push(key(d));
  }
  if (order.size() != items.size()) {
    outcome.declined = "the replacement would make the graph cyclic (a value outside the match both reads and feeds it)";
    return outcome;
  }

  Rewrite result;
  result.old_to_new.assign(graph.size(), kNoNode);
  std::map<NodeId, NodeId> rhs_to_new;
  auto new_port = [&](const Source& s) {
    return PortRef{s.from_rhs ? rhs_to_new.at(s.port.node) : result.old_to_new[s.port.node.index()], s.port.port};
  };
  Graph& out = result.graph;
  for (std::size_t i : order) {
    std::vector<PortRef> ins;
    for (const Source& s : inputs[i]) ins.push_back(new_port(s));
    if (items[i].from_rhs) {
      const Node& n = rhs.node(items[i].id);
      const NodeId id = out.add_node_with_shapes(n.op, scratch.node(n.id).attrs, std::move(ins), scratch.node(n.id).output_shapes);
      rhs_to_new[n.id] = id;
      result.inserted.push_back(id);
      continue;
    }
    const Node& n = graph.node(items[i].id);
    const NodeId id = n.is_graph_input() ? out.add_input_like(n, n.output_shapes.front())
                                         : out.add_node_with_shapes(n.op, n.attrs, std::move(ins), n.output_shapes, n.name);
    if (n.view) out.set_view(id, *n.view);
    result.old_to_new[n.id.index()] = id;
  }
  for (PortRef o : graph.outputs()) {
    const PortRef p = new_port(redirect(o));
    if (std::find(out.outputs().begin(), out.outputs().end(), p) == out.outputs().end()) out.mark_output(p);
  }

  std::set<NodeId> touched(result.inserted.begin(), result.inserted.end());
  for (const auto& [name, port] : match.bindings) touched.insert(result.old_to_new[port.node.index()]);
  for (const auto& [old, source] : replaced) {
    for (NodeId consumer : graph.consumers(old.node))
      if (result.old_to_new[consumer.index()] >= 0) touched.insert(result.old_to_new[consumer.index()]);
    if (!source.from_rhs) touched.insert(result.old_to_new[source.port.node.index()]);
  }
  result.touched.assign(touched.begin(), touched.end());
  fold_inserted_weights(result, catalog);
  outcome.rewrite = std::move(result);
  return outcome;
}

}  // namespace loom::pcg
