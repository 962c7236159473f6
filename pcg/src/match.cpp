#include "loom/pcg/match.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>

namespace loom::pcg {

bool matches_literal(double value, double literal) { return std::abs(value - literal) <= 1e-6 * std::abs(literal); }

GraphIndex::GraphIndex(const Graph& graph, ConstantLookup constants)
    : graph_(&graph), constants_(std::move(constants)), consumers_(graph.size()) {
  for (const Node& n : graph.nodes()) {
    if (!n.is_graph_input()) by_op_[n.op].push_back(n.id);
    for (PortRef in : n.inputs) {
      ++uses_[in];
      auto& list = consumers_[in.node.index()];
      if (list.empty() || list.back() != n.id) list.push_back(n.id);
    }
  }
  for (PortRef out : graph.outputs()) {
    ++uses_[out];
    outputs_.push_back(out);
  }
}

const std::vector<NodeId>& GraphIndex::nodes_running(const std::string& op) const {
  static const std::vector<NodeId> none;
  auto it = by_op_.find(op);
  return it == by_op_.end() ? none : it->second;
}

std::optional<double> GraphIndex::constant(PortRef port) const {
  const Node& n = graph_->node(port.node);
  if (!constants_ || !n.is_graph_input() || !n.output_shapes.at(0).dims.empty()) return std::nullopt;
  return constants_(n);
}

int GraphIndex::use_count(PortRef port) const {
  auto it = uses_.find(port);
  return it == uses_.end() ? 0 : it->second;
}

bool GraphIndex::is_graph_output(PortRef port) const { return std::find(outputs_.begin(), outputs_.end(), port) != outputs_.end(); }

std::vector<NodeId> Match::matched_nodes() const {
  std::vector<NodeId> out;
  for (NodeId n : nodes)
    if (n >= 0) out.push_back(n);
  std::sort(out.begin(), out.end());
  return out;
}

namespace {

class Matcher {
 public:
  Matcher(const GraphIndex& index, const Rule& rule) : index_(index), graph_(index.graph()), rule_(rule), lhs_(rule.lhs) {
    for (const Node& n : lhs_.nodes())
      if (!n.is_graph_input()) operators_.push_back(n.id);
    std::reverse(operators_.begin(), operators_.end());  // consumers before producers
    for (const Node& n : lhs_.nodes())
      for (PortRef in : n.inputs) ++lhs_uses_[in];
    for (PortRef out : lhs_.outputs()) lhs_outputs_.insert(out);
    open_.resize(lhs_.size());
    for (const OpenAttribute& a : rule.open_attributes)
      if (!a.in_rhs) open_[a.node.index()].insert(a.attribute);
  }

  std::vector<Match> all() {
    if (!operators_.empty() && computes_every_output()) search(empty(), 0);
    return std::move(found_);
  }

  std::vector<Match> containing(const std::vector<NodeId>& seeds) {
    if (!computes_every_output()) return {};
    for (NodeId seed : seeds) {
      if (seed < 0 || seed.index() >= graph_.size()) continue;
      for (NodeId l : operators_) {
        Match m = empty();
        if (assign(m, l, seed)) search(std::move(m), 0);
      }
    }
    return std::move(found_);
  }

 private:
  // A left-hand side whose output is a bare variable stands for nothing that could be replaced.
  bool computes_every_output() const {
    return std::none_of(lhs_.outputs().begin(), lhs_.outputs().end(), [&](PortRef o) { return lhs_.node(o.node).is_graph_input(); });
  }

  Match empty() const {
    Match m;
    m.nodes.assign(lhs_.size(), -1);
    return m;
  }

  // Maps LHS node `l` to graph node `g` and, through their inputs, every LHS node above it.
  bool assign(Match& m, NodeId l, NodeId g) const {
    auto& slot = m.nodes[l.index()];
    if (slot != -1) return slot == g;
    if (std::find(m.nodes.begin(), m.nodes.end(), g) != m.nodes.end()) return false;
    const Node& ln = lhs_.node(l);
    const Node& gn = graph_.node(g);
    if (gn.op != ln.op || !same_attributes(l, ln.attrs, gn.attrs) || gn.inputs.size() != ln.inputs.size()) return false;
    slot = g;
    for (std::size_t i = 0; i < ln.inputs.size(); ++i) {
      const PortRef lp = ln.inputs[i], gp = gn.inputs[i];
      const Node& source = lhs_.node(lp.node);
      if (source.is_graph_input()) {
        auto [it, inserted] = m.bindings.emplace(source.name, gp);
        if (!inserted && it->second != gp) return false;
        if (auto literal = rule_.literals.find(source.name); inserted && literal != rule_.literals.end()) {
          const auto value = index_.constant(gp);
          if (!value || !matches_literal(*value, literal->second)) return false;
        }
      } else if (gp.port != lp.port || !assign(m, lp.node, gp.node)) {
        return false;
      }
    }
    return true;
  }

  bool same_attributes(NodeId l, const AttrMap& lhs, const AttrMap& graph) const {
    const auto& open = open_[l.index()];
    if (open.empty()) return lhs == graph;
    if (lhs.size() != graph.size()) return false;
    for (auto a = lhs.begin(), g = graph.begin(); a != lhs.end(); ++a, ++g)
      if (a->first != g->first || (a->second != g->second && !open.count(a->first))) return false;
    return true;
  }

  // Graph nodes that LHS node `l` may stand for: consumers of an already matched producer (or of
  // the port a variable it reads is bound to) when there is one (collected into `scratch`), else every node running its operator.
  const std::vector<NodeId>& candidates(const Match& m, NodeId l, std::vector<NodeId>& scratch) const {
    const Node& ln = lhs_.node(l);
    for (PortRef in : ln.inputs) {
      NodeId producer = m.nodes[in.node.index()];
      if (const Node& source = lhs_.node(in.node); source.is_graph_input()) {
        auto bound = m.bindings.find(source.name);  // a variable another output already bound
        if (bound != m.bindings.end()) producer = bound->second.node;
      }
      if (producer < 0) continue;
      for (NodeId c : index_.consumers(producer))
        if (graph_.node(c).op == ln.op) scratch.push_back(c);
      return scratch;
    }
    return index_.nodes_running(ln.op);
  }

  void search(Match m, std::size_t k) {
    while (k < operators_.size() && m.nodes[operators_[k].index()] != -1) ++k;
    if (k == operators_.size()) {
      finish(std::move(m));
      return;
    }
    const NodeId l = operators_[k];
    std::vector<NodeId> scratch;
    for (NodeId g : candidates(m, l, scratch)) {
      Match next = m;
      if (assign(next, l, g)) search(std::move(next), k + 1);
    }
  }

  void finish(Match m) {
    const std::vector<NodeId> matched = m.matched_nodes();
    auto inside = [&](NodeId node) { return std::binary_search(matched.begin(), matched.end(), node); };
    for (const auto& [name, port] : m.bindings)
      if (inside(port.node)) return;  // a variable cannot stand for a result of the match itself
    for (NodeId l : operators_) {
      const NodeId g = m.nodes[l.index()];
      for (std::size_t p = 0; p < lhs_.node(l).output_shapes.size(); ++p) {
        const PortRef lp{l, static_cast<int>(p)};
        if (lhs_outputs_.count(lp)) continue;
        auto it = lhs_uses_.find(lp);
        const int inner = it == lhs_uses_.end() ? 0 : it->second;
        if (index_.use_count(PortRef{g, static_cast<int>(p)}) != inner) return;  // read from outside
      }
    }
    auto values = match_symbol_values(rule_, graph_, m.nodes, m.bindings);
    if (!values) return;  // outside the shapes or the attribute values the proof covers
    for (const RuleSymbol& s : rule_.symbols)
      if (auto it = values->find(s.name); it != values->end()) m.symbols.insert(*it);
    std::vector<std::pair<std::string, PortRef>> key_bindings(m.bindings.begin(), m.bindings.end());
    if (!seen_.emplace(m.nodes, std::move(key_bindings)).second) return;
    found_.push_back(std::move(m));
  }

  const GraphIndex& index_;
  const Graph& graph_;
  const Rule& rule_;
  const Graph& lhs_;
  std::vector<std::set<std::string>> open_;
  std::vector<NodeId> operators_;
  std::map<PortRef, int> lhs_uses_;
  std::set<PortRef> lhs_outputs_;
  std::set<std::pair<std::vector<NodeId>, std::vector<std::pair<std::string, PortRef>>>> seen_;
  std::vector<Match> found_;
};

std::string anchor_of(const Rule& rule) {
  for (auto it = rule.lhs.nodes().rbegin(); it != rule.lhs.nodes().rend(); ++it)
    if (!it->is_graph_input()) return it->op;
  return "";
}

}  // namespace

std::vector<Match> find_matches(const GraphIndex& index, const Rule& rule, const std::vector<NodeId>* seeds) {
  Matcher matcher(index, rule);
  return seeds ? matcher.containing(*seeds) : matcher.all();
}

RuleIndex::RuleIndex(const std::vector<Rule>& rules) {
  for (std::size_t i = 0; i < rules.size(); ++i) {
    const std::string anchor = anchor_of(rules[i]);
    if (!anchor.empty()) by_anchor_[anchor].push_back(i);  // an LHS with no operator matches nothing
  }
}

std::vector<std::size_t> RuleIndex::candidates(const GraphIndex& graph) const {
  std::vector<std::size_t> out;
  for (const auto& [op, rules] : by_anchor_)
    if (!graph.nodes_running(op).empty()) out.insert(out.end(), rules.begin(), rules.end());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace loom::pcg
