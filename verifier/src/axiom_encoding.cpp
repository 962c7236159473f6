#include "loom/verifier/axiom_encoding.hpp"

#include <functional>
#include <map>
#include <optional>
#include <set>

#include "loom/verifier/term_text.hpp"

namespace loom::verifier {
namespace {

constexpr std::size_t kMaxInstantiations = 64;

z3::expr make_forall(z3::context& c, const std::vector<z3::expr>& bound, const z3::expr& body, const z3::expr& trigger) {
  std::vector<Z3_app> vars;
  for (const auto& b : bound) vars.push_back(Z3_to_app(c, b));
  Z3_ast term = trigger;
  Z3_pattern pattern = Z3_mk_pattern(c, 1, &term);
  c.check_error();
  z3::ast keep(c, Z3_pattern_to_ast(c, pattern));  // the context counts references
  Z3_ast q = Z3_mk_forall_const(c, 0, static_cast<unsigned>(vars.size()), vars.data(), 1, &pattern, body);
  c.check_error();
  return z3::expr(c, q);
}

void collect_constants(const z3::expr& e, std::set<unsigned>& ids) {
  if (!e.is_app()) return;
  if (e.num_args() == 0) {
    if (!e.is_numeral()) ids.insert(e.id());
    return;
  }
  for (unsigned i = 0; i < e.num_args(); ++i) collect_constants(e.arg(i), ids);
}

void collect_variables(const spec::Term& t, std::set<std::string>& names) {
  if (t.kind == spec::TermKind::Var) names.insert(t.name);
  for (const auto& a : t.args) collect_variables(*a, names);
}

// Whether `term` is an instance of `pattern` (attributes are not compared: they are integers any
// value may bind), and whether some pattern variable then stands for a larger term.
bool matches(const spec::Term& pattern, const spec::Term& term, std::map<std::string, const spec::Term*>& bound, bool& grows) {
  if (pattern.kind == spec::TermKind::Var) {
    auto [it, fresh] = bound.emplace(pattern.name, &term);
    if (fresh) grows = grows || (term.kind != spec::TermKind::Var && term.kind != spec::TermKind::Literal);
    return fresh || term_to_string(*it->second) == term_to_string(term);
  }
  if (pattern.kind != term.kind || pattern.name != term.name || pattern.args.size() != term.args.size() ||
      pattern.position != term.position || pattern.field != term.field)
    return false;
  for (std::size_t i = 0; i < pattern.args.size(); ++i)
    if (!matches(*pattern.args[i], *term.args[i], bound, grows)) return false;
  return true;
}

// A trigger whose instance builds, on the other side, a larger term that the trigger matches
// again fires forever (matmul(x, y) == reduce(matmul(partition(x), partition(y))) read right to
// left): such a side is not used as a trigger.
bool triggers_itself(const spec::Term& trigger, const spec::Term& other) {
  std::map<std::string, const spec::Term*> bound;
  bool grows = false;
  if (matches(trigger, other, bound, grows) && grows) return true;
  for (const auto& a : other.args)
    if (triggers_itself(trigger, *a)) return true;
  return false;
}

class AxiomEncoder {
 public:
  AxiomEncoder(Vocabulary& vocabulary, const PreparedAxiom& axiom)
      : vocab_(vocabulary), c_(vocabulary.context()), axiom_(axiom), eq_(*axiom.decl) {
    std::set<std::string> used;
    collect_variables(*eq_.lhs, used);
    collect_variables(*eq_.rhs, used);
    for (const auto& b : eq_.quantifier.binders) {
      const std::string symbol = "ax!" + eq_.name + "!" + b.name;
      if (b.is_int) {
        ints_.push_back(&b);
        consts_.emplace(b.name, c_.int_const(symbol.c_str()));
      } else if (used.count(b.name)) {
        tensors_.push_back(&b);
        consts_.emplace(b.name, c_.constant(symbol.c_str(), vocab_.tensor()));
      }
    }
  }

  EncodedAxiom run() {
    EncodedAxiom out{eq_.name, {}, ""};
    std::string reasons;
    bool trivial = false;
    for (int side = 0; side < 2; ++side) {
      const spec::Term& trigger = side == 0 ? *eq_.lhs : *eq_.rhs;
      const spec::Term& other = side == 0 ? *eq_.rhs : *eq_.lhs;
      const std::string which = side == 0 ? "left side" : "right side";
      try {
        if (trigger.kind == spec::TermKind::Var) {
          reasons += (reasons.empty() ? "" : "; ") + which + " is a bare variable";
          continue;
        }
        if (triggers_itself(trigger, other)) {
          reasons += (reasons.empty() ? "" : "; ") + which + " would trigger itself without end";
          continue;
        }
        std::string why;
        auto free = unbound_ints(trigger, why);
        if (!why.empty()) {
          reasons += (reasons.empty() ? "" : "; ") + which + ": " + why;
          continue;
        }
        std::vector<std::map<std::string, std::int64_t>> assignments{{}};
        for (const auto* b : free) {
          std::vector<std::map<std::string, std::int64_t>> next;
          for (const auto& a : assignments)
            for (auto v : *b->domain) {
              auto extended = a;
              extended[b->name] = v;
              next.push_back(std::move(extended));
            }
          assignments = std::move(next);
        }
        if (assignments.size() > kMaxInstantiations) {
          reasons += (reasons.empty() ? "" : "; ") + which + ": too many instances of the integers it does not bind";
          continue;
        }
        for (const auto& a : assignments)
          if (auto formula = instance(trigger, other, a, trivial)) out.formulas.push_back(*formula);
      } catch (const LoomError& e) {
        reasons += (reasons.empty() ? "" : "; ") + which + ": " + e.what();
      }
    }
    if (out.formulas.empty())
      out.unusable = trivial ? "both sides are the same term once fused forms are expanded" : "no usable trigger (" + reasons + ")";
    return out;
  }

 private:
  struct Encoded {
    z3::expr trigger, other, guards;
    std::vector<z3::expr> fresh;
  };

  // Encodes both sides with `fixed` integers replaced by values; attribute arithmetic in the
  // trigger becomes fresh variables with equality guards.
  Encoded encode(const spec::Term& trigger, const spec::Term& other, const std::map<std::string, std::int64_t>& fixed) {
    EncodingScope scope;
    std::set<unsigned> symbolic;
    for (const auto* b : ints_) {
      if (auto it = fixed.find(b->name); it != fixed.end()) {
        scope.ints.emplace(b->name, c_.int_val(static_cast<int64_t>(it->second)));
      } else {
        const z3::expr& k = consts_.at(b->name);
        scope.ints.emplace(b->name, k);
        symbolic.insert(k.id());
      }
    }
    for (const auto* b : tensors_) scope.tensors.emplace(b->name, consts_.at(b->name));
    bind_dimension_symbols(vocab_, eq_.quantifier, scope);

    std::vector<z3::expr> fresh, equalities;
    TermEncoder pattern_encoder(vocab_, [&](const z3::expr& value) {
      if (value.is_numeral() || (value.is_const() && symbolic.count(value.id()))) return value;
      z3::expr f = c_.int_const(("ax!" + eq_.name + "!attr" + std::to_string(fresh.size())).c_str());
      fresh.push_back(f);
      equalities.push_back(f == value);
      return f;
    });
    z3::expr t = pattern_encoder.encode_single(trigger, scope);
    TermEncoder plain(vocab_);
    z3::expr o = plain.encode_single(other, scope);
    z3::expr guards = c_.bool_val(true);
    for (const auto* b : ints_)
      if (!fixed.count(b->name)) guards = guards && binder_domain(c_, *b, consts_.at(b->name));
    for (const auto& cond : axiom_.conditions) guards = guards && encode_condition(c_, *cond, scope);
    for (const auto& e : equalities) guards = guards && e;
    return {t, o, guards.simplify(), fresh};
  }

  // Integer binders the trigger does not bind; `why` says when the side cannot be a trigger.
  std::vector<const spec::Binder*> unbound_ints(const spec::Term& trigger, std::string& why) {
    Encoded probe = encode(trigger, trigger, {});
    std::set<unsigned> in_pattern;
    collect_constants(probe.trigger, in_pattern);
    for (const auto* b : tensors_)
      if (!in_pattern.count(consts_.at(b->name).id())) {
        why = "does not mention '" + b->name + "'";
        return {};
      }
    std::vector<const spec::Binder*> free;
    for (const auto* b : ints_) {
      if (in_pattern.count(consts_.at(b->name).id())) continue;
      if (!b->domain) {
        why = "does not bind the unbounded integer '" + b->name + "'";
        return {};
      }
      free.push_back(b);
    }
    return free;
  }

  // The formula for one assignment of the unbound integers; none when the guards cannot hold or
  // when both sides are the same term (then `trivial` is set).
  std::optional<z3::expr> instance(const spec::Term& trigger, const spec::Term& other, const std::map<std::string, std::int64_t>& fixed,
                                   bool& trivial) {
    Encoded e = encode(trigger, other, fixed);
    if (z3::eq(e.trigger, e.other)) {
      trivial = true;
      return std::nullopt;
    }
    if (e.guards.is_false()) return std::nullopt;
    std::vector<z3::expr> bound;
    for (const auto* b : ints_)
      if (!fixed.count(b->name)) bound.push_back(consts_.at(b->name));
    for (const auto* b : tensors_) bound.push_back(consts_.at(b->name));
    bound.insert(bound.end(), e.fresh.begin(), e.fresh.end());
    return make_forall(c_, bound, z3::implies(e.guards, e.trigger == e.other), e.trigger);
  }

  Vocabulary& vocab_;
  z3::context& c_;
  const PreparedAxiom& axiom_;
  const spec::EquationDecl& eq_;
  std::vector<const spec::Binder*> ints_, tensors_;
  std::map<std::string, z3::expr> consts_;
};

}  // namespace

EncodedAxiom encode_axiom(Vocabulary& vocabulary, const PreparedAxiom& axiom) { return AxiomEncoder(vocabulary, axiom).run(); }

}  // namespace loom::verifier
