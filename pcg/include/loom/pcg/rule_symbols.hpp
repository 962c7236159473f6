#pragma once
// The values a match gives a rule's open attributes (Rule::symbols, Rule::open_attributes).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "loom/pcg/graph.hpp"
#include "loom/pcg/rule.hpp"

namespace loom::pcg {

using SymbolValues = std::map<std::string, std::int64_t>;

// Whether the attribute of a node of one side is open (the matcher does not compare it).
bool is_open_attribute(const Rule& rule, bool in_rhs, NodeId node, const std::string& attribute);

// The symbols' values where the LHS nodes stand for `matched` graph nodes (-1 for the LHS's
// inputs) and the variables are bound to `bindings`: read from the matched nodes' attributes and
// from the bound ports' dimensions. None when two readings disagree or a value lies outside what
// the proof covers.
std::optional<SymbolValues> symbol_values(const Rule& rule, const Graph& graph, const std::vector<NodeId>& matched,
                                          const std::map<std::string, PortRef>& bindings);

// The sizes the declared shapes give the symbols (declared_sizes) together with the open
// symbols' values, where the two agree; none where the match leaves the shapes the rule's
// statement covers, or the open attributes disagree. What every match of the rule must pass.
std::optional<SymbolValues> match_symbol_values(const Rule& rule, const Graph& graph, const std::vector<NodeId>& matched,
                                                const std::map<std::string, PortRef>& bindings);

// The attributes of RHS node `node` at those values.
AttrMap rhs_attributes(const Rule& rule, NodeId node, const SymbolValues& values);

// Checks that every open attribute names a symbol of the rule, on a node of its side that has that
// attribute, and that every size symbol names a dimension of a variable; throws LoomError otherwise.
void check_open_attributes(const Rule& rule);

// Checks that the declared shapes name variables of the left-hand side and that the rule's own
// graphs have them; throws LoomError naming the variable otherwise.
void check_declared_shapes(const Rule& rule);

}  // namespace loom::pcg
