#include "loom/interpreter/rule_graphs.hpp"

#include <algorithm>
#include <map>

#include "loom/interpreter/int_eval.hpp"

namespace loom::spec {
namespace {

// Both sides typed, to different shapes.
struct SidesDiffer : LoomError {
  using LoomError::LoomError;
};

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

// Builds one side of a rule over the variables' shapes.
class SideBuilder {
 public:
  SideBuilder(const Library& library, const std::map<std::string, pcg::ParallelShape>& shapes, const IntScope& ints)
      : library_(library), shapes_(shapes), ints_(ints) {}

  pcg::Graph build(const Term& term) {
    for (pcg::PortRef p : eval(term)) graph_.mark_output(p);
    return std::move(graph_);
  }

 private:
  std::vector<pcg::PortRef> eval(const Term& t) {
    switch (t.kind) {
      case TermKind::Var: {
        auto it = inputs_.find(t.name);
        if (it == inputs_.end()) it = inputs_.emplace(t.name, graph_.add_input(t.name, shapes_.at(t.name))).first;
        return {{it->second, 0}};
      }
      case TermKind::Project: {
        auto ports = eval(*t.args[0]);
        std::size_t pick = static_cast<std::size_t>(std::max(t.position, 0));
        if (t.position < 0) {
          const auto* op = library_.find_op(t.args[0]->name);
          pick = ports.size();
          for (std::size_t i = 0; op && i < op->outputs.size(); ++i)
            if (op->outputs[i].name == t.field) pick = i;
        }
        if (pick >= ports.size()) throw LoomError({{t.loc, "no such output"}});
        return {ports[pick]};
      }
      case TermKind::Apply:
        break;
    }
    std::vector<pcg::PortRef> args;
    for (const auto& a : t.args) {
      auto ports = eval(*a);
      if (ports.size() != 1) throw LoomError({{a->loc, "'" + a->name + "' has several outputs; pick one"}});
      args.push_back(ports[0]);
    }
    const auto* params = library_.attr_params(t.name);
    if (!params) throw LoomError({{t.loc, "unknown operator or parallel form '" + t.name + "'"}});
    const int node = graph_.add_node(library_, t.name, Library::resolve_attrs(t.name, *params, t.attrs, ints_, t.loc), args);
    std::vector<pcg::PortRef> out;
    for (std::size_t p = 0; p < graph_.node(node).output_shapes.size(); ++p) out.push_back({node, static_cast<int>(p)});
    return out;
  }

  const Library& library_;
  const std::map<std::string, pcg::ParallelShape>& shapes_;
  const IntScope& ints_;
  pcg::Graph graph_;
  std::map<std::string, int> inputs_;
};

}  // namespace

pcg::Rule rule_from_declaration(const Library& library, const EquationDecl& rule) {
  std::vector<std::string> variables;
  for (const auto& b : rule.quantifier.binders)
    if (!b.is_int) variables.push_back(b.name);
  collect_vars(*rule.lhs, variables);
  collect_vars(*rule.rhs, variables);
  std::vector<std::string> symbols;
  for (const auto& b : rule.quantifier.binders)
    if (!b.is_int && b.shape)
      for (const auto& d : b.shape->dims)
        if (!d.is_pack()) collect_names(*d.expr, symbols);

  // Ranks are only tried where a variable has no shape or a rank pack.
  bool rank_matters = false;
  for (const auto& name : variables) {
    auto b = std::find_if(rule.quantifier.binders.begin(), rule.quantifier.binders.end(), [&](const Binder& x) { return x.name == name; });
    if (b == rule.quantifier.binders.end() || !b->shape)
      rank_matters = true;
    else
      for (const auto& d : b->shape->dims) rank_matters |= d.is_pack();
  }
  std::string last_problem;
  // Degrees tried on variables written without a shape: none, partial sums, split rows.
  struct Implicit {
    std::int64_t V = 1, D0 = 1;
  };
  const std::vector<Implicit> implicit_degrees = {{1, 1}, {2, 1}, {4, 1}, {1, 2}, {1, 4}};
  // Dimension symbols all at one size, then at distinct sizes in either order (for conditions
  // such as `m < n`).
  enum class Spread { Equal, Ascending, Descending };
  // Integer binders at their first allowed values, then (where a condition may need it) at others:
  // the k-th binder at its (choice + k)-th value.
  struct Sizes {
    std::int64_t size;
    Spread spread;
    std::size_t choice;
  };
  const std::size_t int_binders = static_cast<std::size_t>(
      std::count_if(rule.quantifier.binders.begin(), rule.quantifier.binders.end(), [](const Binder& b) { return b.is_int; }));
  const std::size_t choices = rule.quantifier.where && int_binders > 0 ? 8 : 1;
  std::vector<Sizes> tried;
  for (std::size_t choice = 0; choice < choices; ++choice)
    for (std::int64_t size : {8, 4, 16, 2, 6, 12})
      for (Spread spread : {Spread::Equal, Spread::Ascending, Spread::Descending})
        if (spread == Spread::Equal || symbols.size() > 1) tried.push_back({size, spread, choice});
  std::string differ_problem;
  for (const auto& [size, spread, choice] : tried) {
    for (std::size_t rank : {2u, 1u, 3u, 4u}) {
      for (const Implicit& implicit : implicit_degrees) {
        IntScope ints;
        std::size_t int_index = 0;
        for (const auto& b : rule.quantifier.binders) {
          if (!b.is_int) continue;
          ints.values[b.name] = allowed_value(b, choice == 0 ? 0 : choice + int_index);
          ++int_index;
        }
        for (std::size_t k = 0; k < symbols.size(); ++k) {
          const auto factor = static_cast<std::int64_t>(spread == Spread::Ascending ? k + 1 : spread == Spread::Descending ? symbols.size() - k : 1);
          if (!ints.values.count(symbols[k])) ints.values[symbols[k]] = size * factor;
        }
        try {
          if (rule.quantifier.where && eval_int(*rule.quantifier.where, ints) == 0) {
            last_problem = "the where-condition does not hold";
            continue;
          }
          std::map<std::string, pcg::ParallelShape> shapes;
          for (const auto& name : variables) {
            auto b = std::find_if(rule.quantifier.binders.begin(), rule.quantifier.binders.end(),
                                  [&](const Binder& x) { return x.name == name; });
            if (b == rule.quantifier.binders.end() || !b->shape) {
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
          out.id = rule.name;
          try {
            out.lhs = SideBuilder(library, shapes, ints).build(*rule.lhs);
          } catch (const LoomError& e) {
            throw LoomError("the left-hand side: " + std::string(e.what()));
          }
          try {
            out.rhs = SideBuilder(library, shapes, ints).build(*rule.rhs);
          } catch (const LoomError& e) {
            throw LoomError("the right-hand side: " + std::string(e.what()));
          }
          if (out.lhs.outputs().size() != out.rhs.outputs().size())
            throw LoomError({{rule.loc, "rule " + rule.name + ": the sides have different numbers of outputs"}});
          // Typed at these sizes, but the sides disagree in shape: other sizes may still agree.
          if (auto differ = pcg::sides_differ_in_shape(out)) throw SidesDiffer(*differ);
          out.category = pcg::classify_rule(out.lhs, out.rhs, [&](const std::string& op) { return library.find_op(op) == nullptr; });
          out.provenance = {{"source", rule.loc.to_string()}};
          return out;
        } catch (const SidesDiffer& e) {
          if (differ_problem.empty()) differ_problem = e.what();
        } catch (const LoomError& e) {
          last_problem = e.what();
        }
        if (!rank_matters) break;
      }
      if (!rank_matters) break;
    }
  }
  if (!differ_problem.empty()) throw LoomError({{rule.loc, "rule " + rule.name + ": " + differ_problem}});
  throw LoomError({{rule.loc, "rule " + rule.name + ": cannot be typed: no sizes found at which both sides are well-typed (last: " + last_problem + ")"}});
}

std::vector<Diagnostic> type_rules(const Library& library) {
  std::vector<Diagnostic> out;
  for (const auto* r : library.rules()) {
    try {
      rule_from_declaration(library, *r);
    } catch (const LoomError& e) {
      if (e.diagnostics().empty()) out.push_back({r->loc, e.what()});
      else out.insert(out.end(), e.diagnostics().begin(), e.diagnostics().end());
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
