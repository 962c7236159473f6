#include "loom/interpreter/rule_graphs.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <random>
#include <set>

#include "loom/interpreter/int_eval.hpp"

namespace loom::spec {
namespace {

void collect_vars(const Term& t, std::vector<std::string>& names) {
  if (t.kind == TermKind::Var) {
    if (std::find(names.begin(), names.end(), t.name) == names.end()) names.push_back(t.name);
    return;
  }
  for (const auto& a : t.args) collect_vars(*a, names);
}

// The `choice`-th value an integer binder's domain allows, counted from its first, cycling
// through at most eight.
std::int64_t allowed_value(const Binder& b, std::size_t choice) {
  if (b.domain) return (*b.domain)[choice % b.domain->size()];
  const auto step = static_cast<std::int64_t>(choice % 8);
  if (b.bound_op == ">") return b.bound + 1 + step;
  if (b.bound_op == ">=") return b.bound + step;
  if (b.bound_op == "<=") return b.bound - step;
  if (b.bound_op == "<") return b.bound - 1 - step;
  const std::int64_t any = 2 + step;
  return b.bound_op == "!=" && any == b.bound ? any + 8 : any;
}

// Builds one side of a rule over the variables' shapes. A subterm written twice is one node, so the
// outputs of a side with several share what they have in common. Attributes written as an open
// symbol are noted.
class SideBuilder {
 public:
  SideBuilder(const Library& library, const std::map<std::string, pcg::ParallelShape>& shapes, const IntScope& ints,
              const std::map<std::string, pcg::RuleSymbol>& openable)
      : library_(library), shapes_(shapes), ints_(ints), openable_(openable) {}

  // `literals` gets every number the side writes, by the input name it is held as.
  pcg::Graph build(const Term& side, bool in_rhs, std::vector<pcg::OpenAttribute>& open, std::map<std::string, double>& literals) {
    in_rhs_ = in_rhs;
    open_ = &open;
    literals_ = &literals;
    if (side.kind == TermKind::Tuple) {
      for (const auto& part : side.args) {
        const pcg::PortRef out = single(*part);
        if (!in_rhs && graph_.node(out.node).is_graph_input())
          throw LoomError(
              {{part->loc, "an output of a left-hand side with several is a bare variable: each must be computed by an operator"}});
        graph_.mark_output(out);
      }
    } else {
      for (pcg::PortRef p : eval(side)) graph_.mark_output(p);
    }
    return std::move(graph_);
  }

 private:
  pcg::PortRef single(const Term& t) {
    auto ports = eval(t);
    if (ports.size() != 1) throw LoomError({{t.loc, "'" + t.name + "' has several outputs; pick one"}});
    return ports[0];
  }

  std::vector<pcg::PortRef> eval(const Term& t) {
    switch (t.kind) {
      case TermKind::Var: {
        auto it = inputs_.find(t.name);
        if (it == inputs_.end()) it = inputs_.emplace(t.name, graph_.add_input(t.name, shapes_.at(t.name))).first;
        return {{it->second, 0}};
      }
      case TermKind::Project: {
        auto ports = eval(*t.args[0]);
        const std::optional<std::size_t> pick = library_.projected_output(t.args[0]->name, t);
        if (!pick || *pick >= ports.size()) throw LoomError({{t.loc, "no such output"}});
        return {ports[*pick]};
      }
      case TermKind::Tuple: throw LoomError({{t.loc, "a tuple of outputs is only a whole side of a rule"}});
      case TermKind::Literal: {
        auto it = inputs_.find(t.name);
        if (it == inputs_.end()) it = inputs_.emplace(t.name, graph_.add_input(t.name, pcg::ParallelShape::unpartitioned({}))).first;
        (*literals_)[t.name] = t.value;
        return {{it->second, 0}};
      }
      case TermKind::Apply: break;
    }
    std::vector<pcg::PortRef> args;
    for (const auto& a : t.args) args.push_back(single(*a));
    const auto* params = library_.attr_params(t.name);
    if (!params) throw LoomError({{t.loc, "unknown operator or parallel form '" + t.name + "'"}});
    pcg::AttrMap attrs = Library::resolve_attrs(t.name, *params, t.attrs, ints_, t.loc);
    // Attribute name -> the open symbol it is written as.
    std::map<std::string, std::string> symbolic;
    for (std::size_t i = 0; i < t.attrs.size() && i < params->size(); ++i) {
      const AttrArg& arg = t.attrs[i];
      if (arg.value->kind != ExprKind::Name || !openable_.count(arg.value->name)) continue;
      symbolic[arg.name.empty() ? (*params)[i].name : arg.name] = arg.value->name;
    }
    std::string key = t.name + "<";
    for (const auto& [name, value] : attrs) {
      auto open = symbolic.find(name);
      key += name + "=" + (open == symbolic.end() ? std::to_string(value) : "$" + open->second) + ";";
    }
    key += ">";
    for (pcg::PortRef a : args) key += pcg::to_string(a.node) + "." + std::to_string(a.port) + " ";
    auto known = built_.find(key);
    int node = 0;
    if (known != built_.end()) {
      node = known->second;
    } else {
      node = graph_.add_node(library_, t.name, std::move(attrs), args);
      built_.emplace(key, node);
      for (const auto& [attribute, symbol] : symbolic) open_->push_back({in_rhs_, node, attribute, symbol});
    }
    std::vector<pcg::PortRef> out;
    for (std::size_t p = 0; p < graph_.node(node).output_shapes.size(); ++p) out.push_back({node, static_cast<int>(p)});
    return out;
  }

  const Library& library_;
  const std::map<std::string, pcg::ParallelShape>& shapes_;
  const IntScope& ints_;
  const std::map<std::string, pcg::RuleSymbol>& openable_;
  pcg::Graph graph_;
  std::map<std::string, int> inputs_;
  std::map<std::string, int> built_;
  bool in_rhs_ = false;
  std::vector<pcg::OpenAttribute>* open_ = nullptr;
  std::map<std::string, double>* literals_ = nullptr;
};

// Names used in attribute expressions; without `bare`, only inside those that are not a bare name
// (`split<1, n - 1>`).
void collect_attribute_names(const Term& t, std::vector<std::string>& names, bool bare) {
  for (const auto& a : t.attrs)
    if (bare || a.value->kind != ExprKind::Name) collect_names(*a.value, names);
  for (const auto& arg : t.args) collect_attribute_names(*arg, names, bare);
}

// The shapes the binders give the variables of `typed`'s left-hand side, and the symbols held at
// the values of `ints`: those of its closed attributes and of its where-condition, and those a
// match cannot bind from one dimension (inside `2 * n`, between two rank packs, an integer binder's
// domain).
pcg::DeclaredShapes declared_shapes(const EquationDecl& rule, const pcg::Rule& typed, const IntScope& ints) {
  pcg::DeclaredShapes out;
  std::vector<std::string> pinned;  // names a match could not bind from one dimension
  std::set<std::string> int_binders;
  for (const Binder& b : rule.quantifier.binders)
    if (b.is_int) int_binders.insert(b.name);
  for (const Binder& b : rule.quantifier.binders) {
    const auto input = typed.lhs.find(b.name);
    if (b.is_int || !b.shape || !input || !typed.lhs.node(*input).is_graph_input()) continue;
    const auto& dims = b.shape->dims;
    const auto is_pack = [](const DimSpec& d) { return d.is_pack(); };
    const auto first_pack = static_cast<std::size_t>(std::find_if(dims.begin(), dims.end(), is_pack) - dims.begin());
    const auto after_last_pack = static_cast<std::size_t>(dims.rend() - std::find_if(dims.rbegin(), dims.rend(), is_pack));
    pcg::DeclaredShape shape;
    shape.rank_pack = first_pack < dims.size();
    for (std::size_t i = 0; i < dims.size(); ++i) {
      if (dims[i].is_pack()) continue;
      std::vector<std::string> names;
      collect_names(*dims[i].expr, names);
      if (i > first_pack && i < after_last_pack) {  // between two packs: no fixed place
        pinned.insert(pinned.end(), names.begin(), names.end());
        continue;
      }
      auto& list = i < first_pack ? shape.front : shape.back;
      if (dims[i].expr->kind == ExprKind::Name) {
        list.push_back(pcg::DeclaredDim::named(dims[i].expr->name));
        if (int_binders.count(dims[i].expr->name)) pinned.push_back(dims[i].expr->name);  // its domain is not checked
      } else {
        list.push_back(pcg::DeclaredDim::number(eval_int(*dims[i].expr, ints)));  // `2 * n`: at the typed size
        pinned.insert(pinned.end(), names.begin(), names.end());
      }
    }
    out.variables.emplace(b.name, std::move(shape));
  }
  std::vector<std::string> names = pinned;
  collect_attribute_names(*rule.lhs, names, true);
  collect_attribute_names(*rule.rhs, names, true);
  if (rule.quantifier.where) collect_names(*rule.quantifier.where, names);  // a match cannot check the condition
  for (const auto& name : names) {
    const bool open = std::any_of(typed.symbols.begin(), typed.symbols.end(), [&](const pcg::RuleSymbol& s) { return s.name == name; });
    auto value = ints.values.find(name);
    if (!open && value != ints.values.end()) out.fixed[name] = value->second;
  }
  return out;
}

// The symbols of a rule that may stay open: integer binders (with the values their domain or
// bound allows) and size symbols written as bare dimensions of variables (every such dimension is
// checked against the match). A symbol stays closed, keeping the value the rule was typed at,
// where a match could not check it: one a where-condition relates, one inside a larger
// attribute or dimension expression, an integer binder a shape or degree depends on, a dimension
// after a rank pack.
std::map<std::string, pcg::RuleSymbol> openable_symbols(const EquationDecl& rule) {
  std::map<std::string, pcg::RuleSymbol> out;
  if (rule.quantifier.where) return out;
  std::vector<std::string> closed, in_types;
  collect_attribute_names(*rule.lhs, closed, false);
  collect_attribute_names(*rule.rhs, closed, false);
  std::set<std::string> int_binders;
  for (const Binder& b : rule.quantifier.binders)
    if (b.is_int) int_binders.insert(b.name);
  std::map<std::string, std::vector<pcg::DimRef>> positions;
  for (const Binder& b : rule.quantifier.binders) {
    if (b.is_int || !b.shape) continue;
    bool after_pack = false;
    for (std::size_t i = 0; i < b.shape->dims.size(); ++i) {
      const auto& d = b.shape->dims[i];
      if (d.is_pack()) {
        after_pack = true;
        continue;
      }
      collect_names(*d.expr, in_types);
      if (d.expr->kind == ExprKind::Name && !after_pack && !int_binders.count(d.expr->name))
        positions[d.expr->name].push_back({b.name, static_cast<int>(i)});
      else
        collect_names(*d.expr, closed);
    }
    for (const ExprPtr& e : {b.degrees.V, b.degrees.R})
      if (e) collect_names(*e, in_types);
    for (const auto* list : {&b.degrees.D, &b.degrees.P})
      for (const ExprPtr& e : *list) collect_names(*e, in_types);
  }
  auto listed = [](const std::vector<std::string>& names, const std::string& name) {
    return std::find(names.begin(), names.end(), name) != names.end();
  };
  for (const Binder& b : rule.quantifier.binders) {
    if (!b.is_int || listed(in_types, b.name) || listed(closed, b.name)) continue;
    pcg::RuleSymbol s;
    s.name = b.name;
    if (b.domain) s.values = *b.domain;
    if (b.bound_op == ">")
      s.at_least = b.bound + 1;
    else if (b.bound_op == ">=")
      s.at_least = b.bound;
    else if (b.bound_op == "<")
      s.at_most = b.bound - 1;
    else if (b.bound_op == "<=")
      s.at_most = b.bound;
    else if (b.bound_op == "!=")
      continue;
    out.emplace(b.name, std::move(s));
  }
  for (auto& [name, at] : positions) {
    if (listed(closed, name)) continue;
    pcg::RuleSymbol s;
    s.name = name;
    s.variable = at.front().variable;
    s.dim = at.front().dim;
    s.same_as.assign(at.begin() + 1, at.end());
    out.emplace(name, std::move(s));
  }
  return out;
}

// Keeps the open attributes whose value a match determines, and the symbols they use.
void settle_open_attributes(pcg::Rule& rule, const std::vector<pcg::OpenAttribute>& open,
                            const std::map<std::string, pcg::RuleSymbol>& openable) {
  std::set<std::string> fixed_by_lhs, used;
  for (const auto& a : open)
    if (!a.in_rhs) fixed_by_lhs.insert(a.symbol);
  auto on_lhs = [&](const std::string& variable) {
    const auto node = rule.lhs.find(variable);
    return node && rule.lhs.node(*node).is_graph_input();
  };
  for (const auto& a : open) {
    const pcg::RuleSymbol& s = openable.at(a.symbol);
    // A size symbol is read from the variables the match binds: all of them on the left.
    if (s.is_size() &&
        (!on_lhs(s.variable) || !std::all_of(s.same_as.begin(), s.same_as.end(), [&](const pcg::DimRef& r) { return on_lhs(r.variable); })))
      continue;
    const bool determined = !a.in_rhs || fixed_by_lhs.count(a.symbol) || s.is_size();
    if (!determined) continue;  // keeps the value it was typed at
    rule.open_attributes.push_back(a);
    used.insert(a.symbol);
  }
  for (const auto& name : used) rule.symbols.push_back(openable.at(name));
}

}  // namespace

namespace {

// Searches for sizes at which a rule's two sides type to the same shapes.
class RuleTyper {
 public:
  RuleTyper(const Library& library, const EquationDecl& rule) : library_(library), rule_(rule), openable_(openable_symbols(rule)) {
    for (const auto& b : rule.quantifier.binders)
      if (!b.is_int) variables_.push_back(b.name);
    collect_vars(*rule.lhs, variables_);
    collect_vars(*rule.rhs, variables_);
    for (const auto& b : rule.quantifier.binders) {
      if (b.is_int)
        ints_.push_back(&b);
      else if (b.shape)
        for (const auto& d : b.shape->dims)
          if (!d.is_pack()) collect_names(*d.expr, symbols_);
    }
    // Ranks are only tried where a variable has no shape or a rank pack.
    for (const auto& name : variables_) {
      const Binder* b = binder(name);
      if (!b || !b->shape)
        rank_matters_ = true;
      else
        for (const auto& d : b->shape->dims) rank_matters_ |= d.is_pack();
    }
  }

  pcg::Rule type() {
    // Dimension symbols all at one size, then at distinct multiples of it in either order (for
    // conditions such as `m < n`); integer binders at their first allowed values, then (where a
    // condition may need it) at others.
    const std::size_t choices = rule_.quantifier.where && !ints_.empty() ? 8 : 1;
    for (std::size_t choice = 0; choice < choices; ++choice)
      for (std::int64_t size : {8, 4, 16, 2, 6, 12})
        for (int spread : {0, 1, -1}) {
          if (spread != 0 && symbols_.size() < 2) continue;
          IntScope ints;
          for (std::size_t k = 0; k < ints_.size(); ++k)
            ints.values[ints_[k]->name] = allowed_value(*ints_[k], choice == 0 ? 0 : choice + k);
          for (std::size_t k = 0; k < symbols_.size(); ++k) {
            const auto factor = static_cast<std::int64_t>(spread > 0 ? k + 1 : spread < 0 ? symbols_.size() - k : 1);
            if (!ints.values.count(symbols_[k])) ints.values[symbols_[k]] = size * factor;
          }
          if (auto typed = at_every_rank(ints, size)) return std::move(*typed);
        }
    // Rules that hold only where sizes are related (`a == n - m`, `n < 2 * m`): random small sizes.
    std::mt19937_64 rng(1);
    const int draws = symbols_.empty() && ints_.empty() ? 0 : kRandomDraws;  // nothing to draw
    for (int draw = 0; draw < draws; ++draw) {
      IntScope ints;
      for (const Binder* b : ints_) ints.values[b->name] = allowed_value(*b, std::uniform_int_distribution<std::size_t>(0, 7)(rng));
      for (const auto& s : symbols_)
        if (!ints.values.count(s)) ints.values[s] = std::uniform_int_distribution<std::int64_t>(1, 12)(rng);
      if (auto typed = at_every_rank(ints, 4)) return std::move(*typed);
    }
    if (!differ_problem_.empty()) throw LoomError({{rule_.loc, "rule " + rule_.name + ": " + differ_problem_}});
    throw LoomError({{rule_.loc, "rule " + rule_.name + ": cannot be typed: no sizes found at which both sides are well-typed (last: " +
                                     last_problem_ + ")"}});
  }

 private:
  static constexpr int kRandomDraws = 2000;

  // Degrees tried on variables written without a shape: none, partial sums, split rows.
  struct Implicit {
    std::int64_t V = 1, D0 = 1;
  };

  const Binder* binder(const std::string& name) const {
    auto b =
        std::find_if(rule_.quantifier.binders.begin(), rule_.quantifier.binders.end(), [&](const Binder& x) { return x.name == name; });
    return b == rule_.quantifier.binders.end() ? nullptr : &*b;
  }

  // The rule at these integers; unshaped variables (and rank packs) of each rank tried at `size`.
  std::optional<pcg::Rule> at_every_rank(const IntScope& ints, std::int64_t size) {
    try {
      if (rule_.quantifier.where && eval_int(*rule_.quantifier.where, ints) == 0) {
        last_problem_ = "the where-condition does not hold";
        return std::nullopt;
      }
    } catch (const LoomError& e) {
      last_problem_ = e.what();
      return std::nullopt;
    }
    static const std::vector<Implicit> implicit_degrees = {{1, 1}, {2, 1}, {4, 1}, {1, 2}, {1, 4}};
    for (std::size_t rank : {2u, 1u, 3u, 4u}) {
      for (const Implicit& implicit : implicit_degrees) {
        if (auto typed = at(ints, size, rank, implicit)) return typed;
        if (!rank_matters_) return std::nullopt;
      }
    }
    return std::nullopt;
  }

  std::optional<pcg::Rule> at(const IntScope& ints, std::int64_t size, std::size_t rank, const Implicit& implicit) {
    try {
      std::map<std::string, pcg::ParallelShape> shapes;
      for (const auto& name : variables_) {
        const Binder* b = binder(name);
        if (!b || !b->shape) {
          pcg::ParallelShape s = pcg::ParallelShape::unpartitioned(std::vector<std::int64_t>(rank, size));
          s.V = implicit.V;
          s.D[0] = implicit.D0;
          shapes[name] = s;
          continue;
        }
        std::vector<std::int64_t> dims;
        for (const auto& d : b->shape->dims) {
          if (d.is_pack())
            dims.insert(dims.end(), rank, size);
          else
            dims.push_back(eval_int(*d.expr, ints));
        }
        pcg::ParallelShape s = pcg::ParallelShape::unpartitioned(dims);
        for (std::size_t i = 0; i < b->degrees.D.size() && i < dims.size(); ++i) s.D[i] = eval_int(*b->degrees.D[i], ints);
        for (std::size_t i = 0; i < b->degrees.P.size() && i < dims.size(); ++i) s.P[i] = eval_int(*b->degrees.P[i], ints);
        if (b->degrees.V) s.V = eval_int(*b->degrees.V, ints);
        if (b->degrees.R) s.R = eval_int(*b->degrees.R, ints);
        shapes[name] = s;
      }
      pcg::Rule out;
      out.id = rule_.name;
      std::vector<pcg::OpenAttribute> open;
      try {
        out.lhs = SideBuilder(library_, shapes, ints, openable_).build(*rule_.lhs, false, open, out.literals);
      } catch (const LoomError& e) {
        throw LoomError("the left-hand side: " + std::string(e.what()));
      }
      try {
        out.rhs = SideBuilder(library_, shapes, ints, openable_).build(*rule_.rhs, true, open, out.literals);
      } catch (const LoomError& e) {
        throw LoomError("the right-hand side: " + std::string(e.what()));
      }
      if (out.lhs.outputs().size() != out.rhs.outputs().size()) throw LoomError("the sides have different numbers of outputs");
      // Typed at these sizes, but the sides disagree in shape: other sizes may still agree.
      if (auto differ = pcg::sides_differ_in_shape(out)) {
        if (differ_problem_.empty()) differ_problem_ = *differ;
        return std::nullopt;
      }
      settle_open_attributes(out, open, openable_);
      out.declared = declared_shapes(rule_, out, ints);
      out.category = pcg::classify_rule(out.lhs, out.rhs, [&](const std::string& op) { return library_.find_op(op) == nullptr; });
      out.provenance = {{"source", rule_.loc.to_string()}};
      return out;
    } catch (const LoomError& e) {
      last_problem_ = e.what();
      return std::nullopt;
    }
  }

  const Library& library_;
  const EquationDecl& rule_;
  std::map<std::string, pcg::RuleSymbol> openable_;
  std::vector<std::string> variables_, symbols_;
  std::vector<const Binder*> ints_;
  bool rank_matters_ = false;
  std::string last_problem_, differ_problem_;
};

}  // namespace

pcg::Rule rule_from_declaration(const Library& library, const EquationDecl& rule) { return RuleTyper(library, rule).type(); }

std::vector<Diagnostic> type_rules(const Library& library) {
  std::vector<Diagnostic> out;
  for (const auto* r : library.rules()) {
    try {
      rule_from_declaration(library, *r);
    } catch (const LoomError& e) {
      if (e.diagnostics().empty())
        out.push_back({r->loc, e.what()});
      else
        out.insert(out.end(), e.diagnostics().begin(), e.diagnostics().end());
    }
  }
  return out;
}

std::vector<pcg::Rule> rules_of(const Library& library) {
  std::vector<pcg::Rule> out;
  for (const auto* r : library.rules()) out.push_back(rule_from_declaration(library, *r));
  return out;
}

}  // namespace loom::spec
