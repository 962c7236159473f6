#include "loom/verifier/axiom_set.hpp"

#include <algorithm>
#include <map>
#include <memory>

#include "loom/interpreter/int_eval.hpp"
#include "loom/verifier/proof_record.hpp"
#include "loom/verifier/term_text.hpp"

namespace loom::verifier {
namespace {

spec::ExprPtr make_expr(spec::ExprKind kind, const std::string& name, std::vector<spec::ExprPtr> args) {
  auto e = std::make_shared<spec::Expr>();
  e->kind = kind;
  e->name = name;
  e->args = std::move(args);
  if (kind == spec::ExprKind::Binary) e->binary = spec::binary_op_of(name).value();
  return e;
}

// Dimension symbols: names in the tensor binders' shapes that are not integer binders.
std::vector<std::string> dimension_symbols(const spec::Quantifier& q) {
  std::vector<std::string> names;
  for (const auto& b : q.binders)
    if (!b.is_int && b.shape)
      for (const auto& d : b.shape->dims)
        if (!d.is_pack()) spec::collect_names(*d.expr, names);
  std::erase_if(names, [&](const std::string& n) {
    return std::any_of(q.binders.begin(), q.binders.end(), [&](const spec::Binder& b) { return b.is_int && b.name == n; });
  });
  return names;
}

// The axiom's terms with every parallel form replaced by its argument (fused forms by their
// expanded bodies): the values the interpreter assigns, which parallel forms never change.
spec::TermPtr erase_parallel(const spec::Library& library, const spec::TermPtr& term,
                             const std::map<std::string, spec::TermPtr>& inputs = {}) {
  if (term->kind == spec::TermKind::Var) {
    auto it = inputs.find(term->name);
    return it == inputs.end() ? term : it->second;
  }
  std::vector<spec::TermPtr> args;
  for (const auto& a : term->args) args.push_back(erase_parallel(library, a, inputs));
  if (term->kind == spec::TermKind::Apply) {
    if (library.find_parallel(term->name)) return args.at(0);
    if (const auto* fused = library.find_fused(term->name)) {
      std::map<std::string, spec::TermPtr> bound;
      for (std::size_t i = 0; i < fused->inputs.size() && i < args.size(); ++i) bound[fused->inputs[i].name] = args[i];
      auto body = erase_parallel(library, fused->body, bound);
      if (body->kind != spec::TermKind::Var) throw LoomError("fused form " + term->name + " computes");
      return body;
    }
  }
  auto copy = std::make_shared<spec::Term>(*term);
  copy->args = std::move(args);
  return copy;
}

// Whether Z3 may use the axiom without `all[index]`. Z3 sees every term, well-typed or not, so
// dropping a condition is sound when some meaning of the ill-typed terms satisfies the weakened
// axiom together with all the others. The meaning used: parallel forms are the identity on values
// whatever the degrees, and an op applied to operands of the wrong sizes gives one "ill-typed"
// value. So the condition may go when, on instances that violate it, the two sides with parallel
// forms erased are both ill-typed or both well-typed and equal (the interpreter samples such
// instances). Divisibility by a parallel degree, or sizes a convolution needs on both sides, pass;
// `k < n` in `split<a, k>(concat<a>(x, y)).0 == split<a, k>(x).0` does not.
bool only_typing(const spec::Library& library, const spec::EquationDecl& axiom, const std::vector<spec::ExprPtr>& all, std::size_t index,
                 const spec::AxiomCheckOptions& options) {
  spec::ExprPtr where = make_expr(spec::ExprKind::Unary, "!", {all[index]});
  for (std::size_t i = 0; i < all.size(); ++i)
    if (i != index) where = make_expr(spec::ExprKind::Binary, "&&", {all[i], where});
  spec::EquationDecl violated = axiom;
  violated.quantifier.where = where;
  for (auto& b : violated.quantifier.binders) b.degrees = {};
  try {
    violated.lhs = erase_parallel(library, axiom.lhs);
    violated.rhs = erase_parallel(library, axiom.rhs);
  } catch (const LoomError&) {
    return false;
  }
  spec::AxiomCheckOptions quick = options;  // violating instances are rare: a short search suffices
  quick.instances = 2;
  quick.max_tries = std::min(options.max_tries, 150);
  const spec::AxiomResult r = spec::check_axiom(library, violated, quick);
  return r.sound || r.instances == 0;
}

PreparedAxiom prepare(const spec::Library& library, const spec::EquationDecl& axiom, const spec::AxiomCheckOptions& options) {
  PreparedAxiom out;
  out.decl = &axiom;
  const auto dims = dimension_symbols(axiom.quantifier);
  const auto all = conjuncts(axiom.quantifier.where);
  for (std::size_t i = 0; i < all.size(); ++i) {
    const bool mentions_dims = std::any_of(dims.begin(), dims.end(), [&](const std::string& d) { return spec::expr_mentions(*all[i], d); });
    if (mentions_dims && only_typing(library, axiom, all, i, options))
      out.typing_conditions.push_back(all[i]);
    else
      out.conditions.push_back(all[i]);
  }
  out.fingerprint = axiom_hash(axiom, library);
  return out;
}

}  // namespace

const PreparedAxiom* AxiomSet::find(const std::string& name) const {
  for (const auto& a : axioms)
    if (a.name() == name) return &a;
  return nullptr;
}

std::vector<spec::ExprPtr> conjuncts(const spec::ExprPtr& condition) {
  if (!condition) return {};
  if (condition->kind == spec::ExprKind::Binary && condition->binary == spec::BinaryOp::And) {
    auto out = conjuncts(condition->args[0]);
    auto rest = conjuncts(condition->args[1]);
    out.insert(out.end(), rest.begin(), rest.end());
    return out;
  }
  return {condition};
}

AxiomSet prepare_axioms(const spec::Library& library, const spec::AxiomCheckOptions& options) {
  AxiomSet set;
  std::vector<Diagnostic> unsound;
  for (const auto* axiom : library.axioms()) {
    const spec::AxiomResult r = spec::check_axiom(library, *axiom, options);
    if (!r.sound) {
      unsound.push_back({axiom->loc, "axiom " + axiom->name + (r.instances > 0 ? " is unsound " : " cannot be checked: ") + r.problem});
      continue;
    }
    set.axioms.push_back(prepare(library, *axiom, options));
    set.axioms.back().checked_instances = r.instances;
  }
  if (!unsound.empty()) throw LoomError(std::move(unsound));
  return set;
}

}  // namespace loom::verifier
