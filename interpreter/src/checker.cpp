#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "loom/interpreter/library.hpp"
#include "loom/interpreter/numeric.hpp"
#include "loom/pcg/known_collectives.hpp"

namespace loom::spec {
namespace {

// Shape of a tensor as far as reads care: how many dimension groups, and which are packs.
using Structure = std::vector<bool>;

Structure structure_of(const ShapeSpec& s) {
  Structure out;
  for (const auto& d : s.dims) out.push_back(d.is_pack());
  return out;
}

class Checker {
 public:
  explicit Checker(const Library& lib) : lib_(lib) {}

  std::vector<Diagnostic> run() {
    for (const auto* op : lib_.ops()) check_op(*op);
    for (const auto* p : lib_.parallel_forms()) check_parallel(*p);
    for (const auto* f : lib_.fused_forms()) check_fused(*f);
    for (const auto* a : lib_.axioms()) check_equation(*a, true);
    for (const auto* r : lib_.rules()) check_equation(*r, false);
    return std::move(out_);
  }

  std::vector<Diagnostic> run_rule(const EquationDecl& rule) {
    check_equation(rule, false);
    return std::move(out_);
  }

 private:
  void error(const SourceLocation& where, std::string message) { out_.push_back({where, std::move(message)}); }

  void check_attr_params(const std::vector<AttrParam>& attrs, std::set<std::string>& names) {
    for (const auto& a : attrs) {
      if (!names.insert(a.name).second) error(a.loc, "attribute '" + a.name + "' is declared twice");
      if (a.domain && a.domain->empty()) error(a.loc, "attribute '" + a.name + "' has an empty domain");
    }
  }

  // ---- ops ----

  struct OpScope {
    std::set<std::string> ints;                // dimension symbols and attributes
    std::set<std::string> packs;               // rank packs
    std::map<std::string, Structure> tensors;  // readable tensors
    std::map<std::string, bool> indices;       // index name -> is pack
  };

  void check_int_expr(const Expr& e, const OpScope& scope, const std::string& what) {
    if (e.kind == ExprKind::Name && !scope.ints.count(e.name)) error(e.loc, "unknown name '" + e.name + "' in " + what);
    if (e.kind == ExprKind::Read) error(e.loc, "a tensor read cannot appear in " + what);
    if (e.kind == ExprKind::Number && !e.integral) error(e.loc, "a real number cannot appear in " + what);
    if (e.kind == ExprKind::Call && e.name == "rank") {
      if (e.args.size() != 1 || e.args[0]->kind != ExprKind::Name || !scope.packs.count(e.args[0]->name))
        error(e.loc, "rank(...) takes the name of a rank pack");
      return;
    }
    for (const auto& a : e.args) check_int_expr(*a, scope, what);
  }

  void check_op(const OpDecl& op) {
    OpScope scope;
    std::set<std::string> names;
    check_attr_params(op.attrs, names);
    scope.ints = names;
    for (const auto& in : op.inputs) {
      if (!names.insert(in.name).second) error(in.loc, "'" + in.name + "' is declared twice");
      if (!in.shape) {
        error(in.loc, "input '" + in.name + "' needs a shape, e.g. " + in.name + ": [m, n] or " + in.name + ": [*s]");
        continue;
      }
      scope.tensors[in.name] = structure_of(*in.shape);
      for (const auto& d : in.shape->dims) {
        if (d.is_pack())
          scope.packs.insert(d.pack_name);
        else if (d.expr->kind == ExprKind::Name)
          scope.ints.insert(d.expr->name);
      }
    }
    for (const auto& in : op.inputs)
      if (in.shape)
        for (const auto& d : in.shape->dims)
          if (!d.is_pack()) check_int_expr(*d.expr, scope, "the shape of '" + in.name + "'");
    check_input_notes(op);
    std::map<std::string, const OutputParam*> outputs;
    for (const auto& o : op.outputs) {
      if (!outputs.emplace(o.name, &o).second) error(o.shape.loc, "output '" + o.name + "' is declared twice");
      for (const auto& d : o.shape.dims) {
        if (d.is_pack() && !scope.packs.count(d.pack_name))
          error(o.shape.loc, "output pack *" + d.pack_name + " is not bound by any input");
        if (!d.is_pack()) check_int_expr(*d.expr, scope, "the shape of output '" + o.name + "'");
      }
    }
    std::set<std::string> defined;
    for (const auto& st : op.stmts) {
      if (st.kind == OpStmtKind::Require) {
        check_int_expr(*st.expr, scope, "a requirement");
        continue;
      }
      OpScope local = scope;
      for (const auto& iv : st.indices) {
        if (local.indices.count(iv.name)) error(st.loc, "index '" + iv.name + "' appears twice on the left");
        if (scope.ints.count(iv.name)) error(st.loc, "index '" + iv.name + "' shadows a dimension or attribute");
        local.indices[iv.name] = iv.pack;
      }
      const std::size_t errors_before = out_.size();
      check_value(*st.expr, local);
      Structure lhs;
      for (const auto& iv : st.indices) lhs.push_back(iv.pack);
      if (st.kind == OpStmtKind::Let) {
        if (scope.tensors.count(st.name) || outputs.count(st.name)) error(st.loc, "'" + st.name + "' is already declared");
        scope.tensors[st.name] = lhs;
      } else {
        auto it = outputs.find(st.name);
        if (it == outputs.end()) {
          error(st.loc,
                "'" + st.name + "' is not an output of " + op.name + (scope.tensors.count(st.name) ? "" : " (did you mean `let`?)"));
        } else {
          if (!defined.insert(st.name).second) error(st.loc, "output '" + st.name + "' is defined twice");
          if (structure_of(it->second->shape) != lhs)
            error(st.loc, "the indices of '" + st.name + "' do not match its shape (rank or pack positions differ)");
        }
      }
      // Reported only for an otherwise sound statement: a misspelt index is one mistake, not two.
      if (out_.size() == errors_before)
        for (const auto& iv : st.indices)
          if (!expr_mentions(*st.expr, iv.name)) error(st.loc, "index '" + iv.name + "' on the left is never used on the right");
    }
    for (const auto& o : op.outputs)
      if (!defined.count(o.name)) error(op.loc, op.name + ": output '" + o.name + "' is never defined");
  }

  void check_value(const Expr& e, OpScope& scope) {
    switch (e.kind) {
      case ExprKind::Number: return;
      case ExprKind::Name: {
        auto it = scope.indices.find(e.name);
        if (it != scope.indices.end()) {
          if (it->second) error(e.loc, "pack index '" + e.name + "' cannot be used as a value");
          return;
        }
        if (!scope.ints.count(e.name)) {
          if (scope.tensors.count(e.name))
            error(e.loc, "tensor '" + e.name + "' must be read with indices: " + e.name + "[...]");
          else
            error(e.loc, "unbound index or unknown name '" + e.name + "'");
        }
        return;
      }
      case ExprKind::Read: {
        auto t = scope.tensors.find(e.name);
        if (t == scope.tensors.end()) {
          error(e.loc, "unknown tensor '" + e.name + "'");
        } else if (t->second.size() != e.indices.size()) {
          error(e.loc, "'" + e.name + "' has rank " + std::to_string(t->second.size()) + " (counting each pack once), read with " +
                           std::to_string(e.indices.size()) + " indices");
        } else {
          for (std::size_t k = 0; k < e.indices.size(); ++k) {
            if (e.indices[k].is_pack() != t->second[k])
              error(e.loc, "position " + std::to_string(k) + " of '" + e.name + "' " +
                               (t->second[k] ? "is a rank pack: read it with a pack index *i" : "is not a pack"));
          }
        }
        for (const auto& ix : e.indices) {
          if (ix.is_pack()) {
            auto it = scope.indices.find(ix.pack_name);
            if (it == scope.indices.end() || !it->second) error(e.loc, "unbound pack index '*" + ix.pack_name + "'");
          } else {
            check_index_expr(*ix.expr, scope);
          }
        }
        if (e.fallback) check_value(*e.fallback, scope);
        return;
      }
      case ExprKind::Reduce: {
        OpScope inner = scope;
        for (const auto& v : e.vars) {
          if (inner.indices.count(v.name) || inner.ints.count(v.name))
            error(e.loc, "reduction index '" + v.name + "' shadows an existing name");
          inner.indices[v.name] = false;
          if (!expr_mentions(*e.args[0], v.name)) error(e.loc, "reduction index '" + v.name + "' is never used in its body");
          if (v.bound) check_int_expr(*v.bound, scope, "a reduction bound");
        }
        check_value(*e.args[0], inner);
        return;
      }
      case ExprKind::Call: {
        if (e.name == "select") {
          if (e.args.size() != 3) error(e.loc, "select takes 3 arguments (condition, then, else)");
        } else {
          Function f;
          int arity = 0;
          if (!function_from_name(e.name, f, arity))
            error(e.loc, "unknown function '" + e.name + "' (known: select, max, min, exp, log, tanh, sigmoid, sqrt, abs, erf, pow)");
          else if (static_cast<int>(e.args.size()) != arity)
            error(e.loc, e.name + " takes " + std::to_string(arity) + " argument" + (arity == 1 ? "" : "s"));
        }
        for (const auto& a : e.args) check_value(*a, scope);
        return;
      }
      case ExprKind::DegreeRef: error(e.loc, "degrees (" + e.name + ") are only meaningful in parallel forms"); return;
      default:
        for (const auto& a : e.args) check_value(*a, scope);
        return;
    }
  }

  // An index position holds integer arithmetic over indices and sizes: no reals, reads,
  // reductions or real functions.
  void check_index_expr(const Expr& e, OpScope& scope) {
    switch (e.kind) {
      case ExprKind::Number:
        if (!e.integral) error(e.loc, "an index must be an integer expression, found the real number " + expr_to_string(e));
        return;
      case ExprKind::Read: error(e.loc, "a tensor read cannot be used as an index"); return;
      case ExprKind::Reduce: error(e.loc, "a reduction cannot be used as an index"); return;
      case ExprKind::Call:
        if (e.name != "min" && e.name != "max" && e.name != "abs") {
          error(e.loc, "'" + e.name + "' cannot be used in an index (index expressions use + - * / %, comparisons, min, max, abs)");
          return;
        }
        check_value(e, scope);
        return;
      case ExprKind::Unary:
      case ExprKind::Binary:
      case ExprKind::Ternary:
        for (const auto& a : e.args) check_index_expr(*a, scope);
        return;
      default: check_value(e, scope); return;
    }
  }

  // ---- parallel and fused forms, terms ----

  // A parallel form's conditions and degree updates see its attributes, `rank`, `shape[e]` and the
  // degrees D[e], P[e], V, R of its input.
  void check_form_expr(const Expr& e, const std::string& form, const std::set<std::string>& attrs) {
    switch (e.kind) {
      case ExprKind::Name:
        if (!attrs.count(e.name) && e.name != "rank")
          error(e.loc, "unknown name '" + e.name + "' in parallel form '" + form +
                           "' (it sees its attributes, rank, shape[...], D[...], P[...], V and R)");
        return;
      case ExprKind::Number:
        if (!e.integral) error(e.loc, "a real number cannot appear in parallel form '" + form + "'");
        return;
      case ExprKind::Read:
        if (e.name != "shape" || e.indices.size() != 1 || e.indices[0].is_pack()) {
          error(e.loc, "parallel form '" + form + "' can only read shape[dim], not '" + e.name + "'");
          return;
        }
        check_form_expr(*e.indices[0].expr, form, attrs);
        return;
      case ExprKind::Reduce: error(e.loc, "a reduction cannot appear in parallel form '" + form + "'"); return;
      case ExprKind::Call:
        if (e.name != "min" && e.name != "max" && e.name != "abs") {
          error(e.loc, "'" + e.name + "' is not an integer function (parallel forms may use min, max, abs)");
          return;
        }
        break;
      default: break;
    }
    for (const auto& a : e.args) check_form_expr(*a, form, attrs);
  }

  void check_input_notes(const OpDecl& op) {
    for (const auto& in : op.inputs) {
      std::set<std::string> seen;
      for (const Note& n : in.notes) {
        const std::string where = "input '" + in.name + "' of " + op.name;
        if (!seen.insert(n.role).second) error(n.loc, "@" + n.role + " is given twice on " + where);
        if (n.role == "index") {
          const auto table = std::find_if(op.inputs.begin(), op.inputs.end(), [&](const InputParam& p) { return p.name == n.arg; });
          if (n.arg.empty() || n.arg == in.name) {
            error(n.loc, "@index on " + where + " takes the name of another input, the table whose rows it indexes, e.g. @index(table)");
          } else if (table == op.inputs.end()) {
            error(n.loc, "@index on " + where + ": '" + n.arg + "' is not an input of " + op.name);
          } else if (!table->shape || table->shape->dims.empty() || table->shape->dims.front().is_pack()) {
            error(n.loc, "@index on " + where + ": the table '" + n.arg +
                             "' needs a first dimension that is not a pack (the rows the ids number)");
          }
        } else if (n.role == "init") {
          const bool integer = !n.arg.empty() && n.arg.find_first_not_of("-0123456789") == std::string::npos;
          if (!integer) error(n.loc, "@init on " + where + " takes the integer its values start at, e.g. @init(1)");
        } else if (n.role == "statistic" || n.role == "positive" || n.role == "detached") {
          if (!n.arg.empty()) error(n.loc, "@" + n.role + " on " + where + " takes no argument");
        } else {
          error(n.loc,
                "unknown note @" + n.role + " on " + where + " (known: @index(table), @init(value), @statistic, @positive, @detached)");
        }
      }
    }
    for (const auto& out : op.outputs)
      for (const Note& n : out.notes) {
        const std::string where = "output '" + out.name + "' of " + op.name;
        if (n.role != "probabilities")
          error(n.loc, "unknown note @" + n.role + " on " + where + " (known: @probabilities)");
        else if (!n.arg.empty())
          error(n.loc, "@probabilities on " + where + " takes no argument");
      }
  }

  void refuse_notes(const std::vector<InputParam>& inputs, const std::string& what) {
    for (const auto& in : inputs)
      for (const Note& n : in.notes) error(n.loc, "@" + n.role + ": notes describe an operator's inputs, not a " + what + "'s");
  }

  void check_parallel(const ParallelDecl& p) {
    refuse_notes(p.inputs, "parallel form");
    std::set<std::string> names;
    check_attr_params(p.attrs, names);
    if (p.inputs.size() != 1) error(p.loc, "a parallel form takes exactly one input");
    for (const auto& st : p.stmts) {
      if (st.require) check_form_expr(*st.require, p.name, names);
      if (st.update) {
        if (st.update->dim) check_form_expr(*st.update->dim, p.name, names);
        check_form_expr(*st.update->amount, p.name, names);
      }
    }
    static const std::set<std::string> kinds = {"identity", "split", "concat", "copy", "sum", "stage", "unstage"};
    if (!kinds.count(p.values))
      error(p.loc, "unknown values kind '" + p.values + "' (known: identity, split, concat, copy, sum, stage, unstage)");
    if (!p.backward)
      error(p.loc, "parallel form '" + p.name + "' needs a `backward` form");
    else
      check_term(*p.backward, nullptr, names, false);
    if (p.lowers_to.empty())
      error(p.loc, "parallel form '" + p.name + "' needs `lowers_to`");
    else
      check_lowering(p.loc, p.name, p.lowers_to);
    if (kinds.count(p.values)) check_values_agree(p);
    if (p.backward && kinds.count(p.values)) check_backward_inverts(p);
  }

  // The degree a `values` kind changes, and in which direction: split multiplies D, concat divides
  // it, copy multiplies R, sum divides V, stage multiplies P, unstage divides it.
  struct DegreeChange {
    DegreeKind degree = DegreeKind::D;
    bool multiply = true;
  };
  static std::optional<DegreeChange> change_of(const std::string& values) {
    if (values == "split") return DegreeChange{DegreeKind::D, true};
    if (values == "concat") return DegreeChange{DegreeKind::D, false};
    if (values == "copy") return DegreeChange{DegreeKind::R, true};
    if (values == "sum") return DegreeChange{DegreeKind::V, false};
    if (values == "stage") return DegreeChange{DegreeKind::P, true};
    if (values == "unstage") return DegreeChange{DegreeKind::P, false};
    return std::nullopt;  // identity
  }
  static std::string change_text(DegreeKind degree, bool multiply) {
    const char* names[] = {"D[...]", "P[...]", "V", "R"};
    return std::string(names[static_cast<int>(degree)]) + (multiply ? " *=" : " /=");
  }

  // `values` says what the form does to the data; its degree updates must say the same.
  void check_values_agree(const ParallelDecl& p) {
    std::vector<const DegreeUpdate*> updates;
    for (const auto& st : p.stmts)
      if (st.update) updates.push_back(&*st.update);
    const auto want = change_of(p.values);
    if (!want) {
      if (!updates.empty())
        error(updates.front()->loc, "parallel form '" + p.name + "' declares `values identity` but changes " +
                                        change_text(updates.front()->degree, updates.front()->multiply));
      return;
    }
    const bool agrees = updates.size() == 1 && updates.front()->degree == want->degree && updates.front()->multiply == want->multiply;
    if (!agrees)
      error(updates.empty() ? p.loc : updates.front()->loc,
            "parallel form '" + p.name + "' declares `values " + p.values + "`, which needs exactly one update " +
                change_text(want->degree, want->multiply) + ", but it " +
                (updates.empty() ? std::string("changes no degree")
                                 : "changes " + change_text(updates.front()->degree, updates.front()->multiply) +
                                       (updates.size() > 1 ? " and more" : "")));
  }

  // The backward form undoes the forward's data movement: split <-> concat, copy <-> sum,
  // stage <-> unstage, identity <-> identity, taking the same attributes.
  void check_backward_inverts(const ParallelDecl& p) {
    static const std::map<std::string, std::string> partner = {{"split", "concat"},     {"concat", "split"},  {"copy", "sum"},
                                                               {"sum", "copy"},         {"stage", "unstage"}, {"unstage", "stage"},
                                                               {"identity", "identity"}};
    const Term& b = *p.backward;
    const ParallelDecl* back = lib_.find_parallel(b.name);
    if (!back) {
      if (!lib_.find_op(b.name) && !lib_.find_fused(b.name)) return;  // reported as unknown already
      error(b.loc, "parallel form '" + p.name + "': its backward '" + b.name + "' must be a parallel form");
      return;
    }
    if (back->values != partner.at(p.values)) {
      error(b.loc, "parallel form '" + p.name + "' (`values " + p.values + "`) needs a backward form with `values " + partner.at(p.values) +
                       "` to undo it, but '" + back->name + "' declares `values " + back->values + "`");
      return;
    }
    // Every attribute the backward form takes is passed one of this form's own, unchanged.
    for (const auto& arg : b.attrs) {
      const bool own = arg.value->kind == ExprKind::Name &&
                       std::any_of(p.attrs.begin(), p.attrs.end(), [&](const AttrParam& a) { return a.name == arg.value->name; });
      if (!own)
        error(arg.loc, "parallel form '" + p.name + "': its backward must be given this form's own attributes (e.g. `" + back->name +
                           "<dim, degree>`), not '" + expr_to_string(*arg.value) + "'");
    }
  }

  void check_fused(const FusedDecl& f) {
    refuse_notes(f.inputs, "fused form");
    std::set<std::string> names;
    check_attr_params(f.attrs, names);
    std::set<std::string> vars;
    for (const auto& in : f.inputs) vars.insert(in.name);
    check_term(*f.body, &vars, names, false);
    std::map<std::string, const Term*> numbers;
    collect_literals(*f.body, numbers);
    for (const auto& [name, term] : numbers)
      error(term->loc, "fused form " + f.name + " writes the number " + name.substr(1) + ": a fused form computes nothing, it only moves");
    if (!f.lowers_to.empty()) check_lowering(f.loc, f.name, f.lowers_to);
  }

  void check_lowering(const SourceLocation& loc, const std::string& form, const std::string& collective) {
    if (!pcg::find_known_collective(collective))
      error(loc, "'" + form + "' lowers to '" + collective +
                     "', which is not a collective the runtime knows (known: " + pcg::known_collective_names() + ")");
  }

  // `vars` null: any variable name is allowed (backward forms take no arguments).
  void check_term(const Term& t, const std::set<std::string>* vars, const std::set<std::string>& ints, bool implicit_vars) {
    if (t.kind == TermKind::Var) {
      if (vars && !vars->count(t.name) && !implicit_vars) error(t.loc, "unbound variable '" + t.name + "'");
      return;
    }
    if (t.kind == TermKind::Project) {
      check_term(*t.args[0], vars, ints, implicit_vars);
      return;
    }
    if (t.kind == TermKind::Tuple) {
      error(t.loc, "a tuple of outputs is only a whole side of a rule");
      return;
    }
    if (t.kind == TermKind::Literal) {
      if (!vars) error(t.loc, "a number stands for a rank-0 tensor only in axioms and rules");
      return;
    }
    const auto* params = lib_.attr_params(t.name);
    if (!params) {
      error(t.loc, "unknown operator or parallel form '" + t.name + "'");
    } else {
      if (vars && t.args.size() != lib_.input_count(t.name))
        error(t.loc, t.name + " takes " + std::to_string(lib_.input_count(t.name)) + " inputs, given " + std::to_string(t.args.size()));
      if (t.attrs.size() != params->size())
        error(t.loc, t.name + " takes " + std::to_string(params->size()) + " attributes, given " + std::to_string(t.attrs.size()));
      for (std::size_t i = 0; i < t.attrs.size() && i < params->size(); ++i) {
        const auto& arg = t.attrs[i];
        const AttrParam* param = &(*params)[i];
        if (!arg.name.empty()) {
          auto it = std::find_if(params->begin(), params->end(), [&](const AttrParam& p) { return p.name == arg.name; });
          if (it == params->end()) {
            error(arg.loc, t.name + " has no attribute '" + arg.name + "'");
            continue;
          }
          param = &*it;
        }
        check_attr_value(t.name, *param, *arg.value, ints);
      }
    }
    for (const auto& a : t.args) check_term(*a, vars, ints, implicit_vars);
  }

  void check_attr_value(const std::string& form, const AttrParam& param, const Expr& v, const std::set<std::string>& ints) {
    if (v.kind == ExprKind::Name) {
      if (param.labels.count(v.name) || ints.count(v.name)) return;
      error(v.loc, "unknown name '" + v.name + "' for attribute " + param.name + " of " + form);
      return;
    }
    if (v.kind == ExprKind::Number) {
      auto value = static_cast<std::int64_t>(v.number);
      if (param.domain && std::find(param.domain->begin(), param.domain->end(), value) == param.domain->end())
        error(v.loc, form + ": attribute " + param.name + " = " + std::to_string(value) + " is outside its domain");
    }
  }

  void check_equation(const EquationDecl& eq, bool is_axiom) {
    std::set<std::string> vars, ints;
    for (const auto& b : eq.quantifier.binders) {
      if (vars.count(b.name) || ints.count(b.name)) error(b.loc, "'" + b.name + "' is bound twice");
      if (b.is_int)
        ints.insert(b.name);
      else
        vars.insert(b.name);
    }
    for (const auto& b : eq.quantifier.binders) {
      if (b.is_int) continue;
      if (is_axiom && !b.shape)
        error(b.loc, "give tensor variable '" + b.name + "' a shape (e.g. " + b.name + ": [m, n]) so the axiom can be checked");
      if (b.shape)
        for (const auto& d : b.shape->dims) {
          if (!d.is_pack()) {
            std::vector<std::string> names;
            collect_names(*d.expr, names);
            ints.insert(names.begin(), names.end());
          }
        }
    }
    bool implicit = !is_axiom && eq.quantifier.binders.empty();
    check_side(*eq.lhs, vars, ints, implicit);
    check_side(*eq.rhs, vars, ints, implicit);
    if (!is_axiom) {
      std::map<std::string, const Term*> left_numbers, right_numbers;
      collect_literals(*eq.lhs, left_numbers);
      collect_literals(*eq.rhs, right_numbers);
      for (const auto& [name, term] : right_numbers)
        if (!left_numbers.count(name))
          error(term->loc, "the number " + name.substr(1) +
                               " is written on the right-hand side only: a rewrite binds constants, it does not make them");
    }
    const std::size_t left = outputs_written(*eq.lhs), right = outputs_written(*eq.rhs);
    if (left != right)
      error(eq.rhs->loc, "the left-hand side gives " + std::to_string(left) + " output" + (left == 1 ? "" : "s") +
                             ", the right-hand side " + std::to_string(right));
  }

  static void collect_literals(const Term& t, std::map<std::string, const Term*>& out) {
    if (t.kind == TermKind::Literal) out.emplace(t.name, &t);
    for (const auto& a : t.args) collect_literals(*a, out);
  }

  static std::size_t outputs_written(const Term& side) { return side.kind == TermKind::Tuple ? side.args.size() : 1; }

  void check_side(const Term& side, const std::set<std::string>& vars, const std::set<std::string>& ints, bool implicit) {
    if (side.kind == TermKind::Literal) return error(side.loc, "a side of a rule or axiom must compute something, not be a bare number");
    if (side.kind != TermKind::Tuple) return check_term(side, &vars, ints, implicit);
    for (const auto& part : side.args) check_term(*part, &vars, ints, implicit);
  }

  const Library& lib_;
  std::vector<Diagnostic> out_;
};

}  // namespace

std::vector<Diagnostic> check_library(const Library& library) { return Checker(library).run(); }

std::vector<Diagnostic> check_rule_declaration(const Library& library, const EquationDecl& rule) { return Checker(library).run_rule(rule); }

}  // namespace loom::spec
