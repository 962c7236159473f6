#include "loom/pcg/rule_symbols.hpp"

#include <algorithm>

#include "loom/pcg/diagnostic.hpp"

namespace loom::pcg {

bool RuleSymbol::covers(std::int64_t value) const {
  if (value < at_least || value > at_most) return false;
  return values.empty() || std::find(values.begin(), values.end(), value) != values.end();
}

namespace {

const RuleSymbol* find_symbol(const Rule& rule, const std::string& name) {
  auto it = std::find_if(rule.symbols.begin(), rule.symbols.end(), [&](const RuleSymbol& s) { return s.name == name; });
  return it == rule.symbols.end() ? nullptr : &*it;
}

// Every dimension a size symbol names: the one it is read from first, then the others.
std::vector<DimRef> dimensions_named(const RuleSymbol& s) {
  std::vector<DimRef> named{{s.variable, s.dim}};
  named.insert(named.end(), s.same_as.begin(), s.same_as.end());
  return named;
}

bool assign(SymbolValues& values, const std::string& symbol, std::int64_t value) {
  auto [it, fresh] = values.emplace(symbol, value);
  return fresh || it->second == value;
}

}  // namespace

bool is_open_attribute(const Rule& rule, bool in_rhs, NodeId node, const std::string& attribute) {
  return std::any_of(rule.open_attributes.begin(), rule.open_attributes.end(),
                     [&](const OpenAttribute& a) { return a.in_rhs == in_rhs && a.node == node && a.attribute == attribute; });
}

std::optional<SymbolValues> symbol_values(const Rule& rule, const Graph& graph, const std::vector<NodeId>& matched,
                                          const std::map<std::string, PortRef>& bindings) {
  SymbolValues values;
  for (const OpenAttribute& a : rule.open_attributes) {
    if (a.in_rhs) continue;
    const int g = matched.at(a.node.index());
    if (g < 0) return std::nullopt;
    const AttrMap& attrs = graph.node(g).attrs;
    auto it = attrs.find(a.attribute);
    if (it == attrs.end() || !assign(values, a.symbol, it->second)) return std::nullopt;
  }
  for (const RuleSymbol& s : rule.symbols) {
    if (!s.is_size() || !bindings.count(s.variable)) continue;
    for (const DimRef& r : dimensions_named(s)) {
      auto bound = bindings.find(r.variable);
      if (bound == bindings.end()) return std::nullopt;
      const auto& dims = graph.shape_of(bound->second).dims;
      if (r.dim < 0 || static_cast<std::size_t>(r.dim) >= dims.size()) return std::nullopt;
      if (!assign(values, s.name, dims[static_cast<std::size_t>(r.dim)])) return std::nullopt;
    }
  }
  for (const auto& [name, value] : values) {
    const RuleSymbol* s = find_symbol(rule, name);
    if (!s || !s->covers(value)) return std::nullopt;
  }
  return values;
}

std::optional<SymbolValues> match_symbol_values(const Rule& rule, const Graph& graph, const std::vector<NodeId>& matched,
                                                const std::map<std::string, PortRef>& bindings) {
  auto sizes = declared_sizes(rule.declared, graph, bindings);
  if (!sizes) return std::nullopt;
  if (rule.symbols.empty()) return sizes;
  auto values = symbol_values(rule, graph, matched, bindings);
  if (!values) return std::nullopt;
  for (const auto& [name, size] : *sizes)
    if (!assign(*values, name, size)) return std::nullopt;
  return values;
}

AttrMap rhs_attributes(const Rule& rule, NodeId node, const SymbolValues& values) {
  AttrMap attrs = rule.rhs.node(node).attrs;
  for (const OpenAttribute& a : rule.open_attributes) {
    if (!a.in_rhs || a.node != node) continue;
    auto it = values.find(a.symbol);
    if (it != values.end()) attrs[a.attribute] = it->second;
  }
  return attrs;
}

void check_declared_shapes(const Rule& rule) {
  std::map<std::string, PortRef> own;
  for (const auto& [variable, shape] : rule.declared.variables) {
    const auto input = rule.lhs.find(variable);
    if (!input || !rule.lhs.node(*input).is_graph_input())
      throw LoomError("\"" + variable + "\" is declared a shape but is not a variable of the left-hand side");
    own.emplace(variable, PortRef{*input, 0});
  }
  if (declared_sizes(rule.declared, rule.lhs, own)) return;
  // Name the first variable that does not fit alone, else say they disagree together.
  for (const auto& [variable, shape] : rule.declared.variables) {
    DeclaredShapes alone;
    alone.variables.emplace(variable, shape);
    alone.fixed = rule.declared.fixed;
    if (!declared_sizes(alone, rule.lhs, own))
      throw LoomError("the rule's graphs do not have the shapes it declares: " + variable + " is typed " +
                      rule.lhs.shape_of(own.at(variable)).to_string() + ", declared " + to_string(shape));
  }
  throw LoomError("the rule's graphs do not have the shapes it declares: its variables give one symbol two sizes");
}

void check_open_attributes(const Rule& rule) {
  for (const RuleSymbol& s : rule.symbols) {
    if (!s.is_size()) continue;
    for (const DimRef& r : dimensions_named(s)) {
      const auto input = rule.lhs.find(r.variable);
      if (!input || !rule.lhs.node(*input).is_graph_input())
        throw LoomError("symbol \"" + s.name + "\" names \"" + r.variable + "\", which is not a variable of the left-hand side");
      const auto rank = rule.lhs.node(*input).output_shapes.at(0).dims.size();
      if (r.dim < 0 || static_cast<std::size_t>(r.dim) >= rank)
        throw LoomError("symbol \"" + s.name + "\" names dimension " + std::to_string(r.dim) + " of \"" + r.variable + "\", which has " +
                        std::to_string(rank));
    }
  }
  for (const OpenAttribute& a : rule.open_attributes) {
    const Graph& side = a.in_rhs ? rule.rhs : rule.lhs;
    const std::string where = std::string(a.in_rhs ? "right" : "left") + "-hand side node " + pcg::to_string(a.node);
    if (a.node < 0 || a.node.index() >= side.size() || side.node(a.node).is_graph_input())
      throw LoomError("an open attribute names " + where + ", which is not an operator");
    if (!side.node(a.node).attrs.count(a.attribute))
      throw LoomError("an open attribute names \"" + a.attribute + "\" of " + where + ", which " + side.node(a.node).op + " does not have");
    const RuleSymbol* s = find_symbol(rule, a.symbol);
    if (!s)
      throw LoomError("the open attribute " + a.attribute + " of " + where + " names \"" + a.symbol +
                      "\", which is not a symbol of the rule");
    if (a.in_rhs && !s->is_size() && !std::any_of(rule.open_attributes.begin(), rule.open_attributes.end(), [&](const OpenAttribute& l) {
          return !l.in_rhs && l.symbol == a.symbol;
        }))
      throw LoomError("the open attribute " + a.attribute + " of " + where + " takes \"" + a.symbol +
                      "\", which the left-hand side does not fix");
  }
}

}  // namespace loom::pcg
