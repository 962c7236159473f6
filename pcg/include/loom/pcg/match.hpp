#pragma once
// Finding where a rule's left-hand side occurs in a PCG (the inner loop of substitution search).
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "loom/pcg/graph.hpp"
#include "loom/pcg/rule.hpp"
#include "loom/pcg/rule_symbols.hpp"

namespace loom::pcg {

// The value of a graph input that holds a rank-0 constant; none for any other node.
using ConstantLookup = std::function<std::optional<double>(const Node&)>;

// Whether a constant of `value` stands for the number `literal` a rule is written with: equal to
// within a relative 1e-6 (so that a model's float32 constants match the rule's decimals), and
// exactly 0 for 0.
bool matches_literal(double value, double literal);

// Lookup tables over one graph, built once and shared by every rule matched against it. With
// `constants`, rules written with numbers match where the graph holds those constants; without,
// such rules match nowhere.
class GraphIndex {
 public:
  explicit GraphIndex(const Graph& graph, ConstantLookup constants = {});

  const Graph& graph() const { return *graph_; }
  // The constant `port` holds, when it is a rank-0 constant input the lookup knows.
  std::optional<double> constant(PortRef port) const;
  // Operator nodes running `op`, ascending.
  const std::vector<NodeId>& nodes_running(const std::string& op) const;
  // Nodes reading any output of `node`, ascending, each once.
  const std::vector<NodeId>& consumers(NodeId node) const { return consumers_[node.index()]; }
  // Input slots reading `port`, plus one for each time it is a graph output.
  int use_count(PortRef port) const;
  bool is_graph_output(PortRef port) const;

 private:
  const Graph* graph_;
  ConstantLookup constants_;
  std::map<std::string, std::vector<NodeId>> by_op_;
  std::vector<std::vector<NodeId>> consumers_;
  std::map<PortRef, int> uses_;
  std::vector<PortRef> outputs_;
};

// One occurrence of a rule's LHS: the graph node each LHS operator node stands for (-1 for the
// LHS's graph inputs) and the graph port each rule variable is bound to.
struct Match {
  std::vector<NodeId> nodes;
  std::map<std::string, PortRef> bindings;
  SymbolValues symbols;  // the values of the rule's open symbols here

  // The matched graph nodes, ascending.
  std::vector<NodeId> matched_nodes() const;
  bool operator==(const Match&) const = default;
};

// Every occurrence of `rule.lhs` in the indexed graph: operators and attributes equal (an open
// attribute takes the graph's value, which the proof must cover); a number of the rule bound to
// a constant that matches it (see GraphIndex); a variable
// used twice binds one port; intermediate LHS results are read by nothing outside the match (a
// match that would lose a consumer is not a match). Shapes are not compared here: whether the
// RHS fits the bound inputs is settled when the match is applied. With `seeds`, only matches that
// contain at least one of those graph nodes (after a rewrite: the nodes it touched).
std::vector<Match> find_matches(const GraphIndex& index, const Rule& rule, const std::vector<NodeId>* seeds = nullptr);

// Rules grouped by the operator of their LHS's last node, so a graph is only matched against
// rules whose anchor operator it runs.
class RuleIndex {
 public:
  explicit RuleIndex(const std::vector<Rule>& rules);
  // Indices into the rule list of the rules that may match somewhere in the graph.
  std::vector<std::size_t> candidates(const GraphIndex& graph) const;

 private:
  std::map<std::string, std::vector<std::size_t>> by_anchor_;
};

}  // namespace loom::pcg
