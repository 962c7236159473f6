#include "loom/verifier/prover.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>

#include <z3++.h>

#include "loom/verifier/axiom_encoding.hpp"
#include "loom/verifier/encoding.hpp"
#include "shape_facts.hpp"
#include "watchdog.hpp"

namespace loom::verifier {

struct Prover::Impl {
  z3::context context;
  Vocabulary vocabulary;
  std::vector<EncodedAxiom> axioms;
  std::vector<z3::expr> literals;  // one tracking literal per axiom: the unsat core reports them
  std::map<unsigned, std::size_t> axiom_of_literal;
  std::optional<z3::solver> solver;
  static constexpr int kChecksPerSolver = 200;
  int checks_since_fresh = 0;

  Watchdog watchdog{context};

  Impl(const spec::Library& library, const AxiomSet& set) : vocabulary(context, library) {
    for (const auto& a : set.axioms) {
      axioms.push_back(encode_axiom(vocabulary, a));
      literals.push_back(context.bool_const(("use " + a.name()).c_str()));
      axiom_of_literal[literals.back().id()] = axioms.size() - 1;
    }
  }

  // The rule's variables and dimension symbols, its side conditions, and what it says about shapes.
  z3::expr hypotheses(const Obligation& ob, EncodingScope& scope) {
    z3::expr facts = context.bool_val(true);
    for (const auto& b : ob.quantifier.binders) {
      const std::string symbol = "rule!" + b.name;
      if (b.is_int) {
        z3::expr k = context.int_const(symbol.c_str());
        scope.ints.emplace(b.name, k);
        facts = facts && binder_domain(context, b, k);
      } else {
        scope.tensors.emplace(b.name, context.constant(symbol.c_str(), vocabulary.tensor()));
      }
    }
    for (const auto& name : goal_variables(ob))
      if (!scope.tensors.count(name)) scope.tensors.emplace(name, context.constant(("rule!" + name).c_str(), vocabulary.tensor()));
    bind_dimension_symbols(vocabulary, ob.quantifier, scope);
    // Sizes written in the binders (numbers, shared symbols, expressions) become facts.
    for (const auto& b : ob.quantifier.binders) {
      if (b.is_int || !b.shape) continue;
      const auto& dims = b.shape->dims;
      const z3::expr& t = scope.tensors.at(b.name);
      const auto first_pack = std::find_if(dims.begin(), dims.end(), [](const auto& d) { return d.is_pack(); });
      const auto last_pack = std::find_if(dims.rbegin(), dims.rend(), [](const auto& d) { return d.is_pack(); });
      for (std::size_t i = 0; i < dims.size(); ++i) {
        if (dims[i].is_pack()) continue;
        const bool before_packs = dims.begin() + static_cast<std::ptrdiff_t>(i) < first_pack;
        const bool after_packs = last_pack == dims.rend() || dims.rbegin() + static_cast<std::ptrdiff_t>(dims.size() - 1 - i) < last_pack;
        try {
          const z3::expr size = encode_int(context, *dims[i].expr, scope);
          if (before_packs) facts = facts && vocabulary.dim(t, static_cast<int>(i)) == size;
          if (after_packs) facts = facts && vocabulary.rdim(t, static_cast<int>(dims.size() - 1 - i)) == size;
        } catch (const LoomError&) {
          // A size Z3 cannot express (rank(...)) states nothing.
        }
      }
    }
    if (ob.quantifier.where) facts = facts && encode_condition(context, *ob.quantifier.where, scope);
    return facts && output_shape_facts(vocabulary, ob, scope);
  }

  // The solver holds every axiom, each behind its tracking literal, at its base level; a rule's
  // hypotheses and negated goal live in one push/pop scope.
  z3::solver& base_solver() {
    // Z3 keeps some state of every check (instances, learned clauses): a fresh solver now and then
    // keeps memory bounded over long runs.
    if (solver && ++checks_since_fresh > kChecksPerSolver) solver.reset();
    if (!solver) {
      checks_since_fresh = 0;
      solver.emplace(context);
      z3::params params(context);
      params.set("mbqi", false);  // E-matching on the triggers only: fail fast when no axiom applies
      solver->set(params);
      for (std::size_t i = 0; i < axioms.size(); ++i)
        for (const auto& f : axioms[i].formulas) solver->add(z3::implies(literals[i], f));
    }
    return *solver;
  }

  // One check under the time limit `ms` (0: none).
  z3::check_result check(z3::solver& solver, const z3::expr_vector& assumptions, unsigned ms) {
    watchdog.arm(ms);
    struct Disarm {
      Watchdog& w;
      ~Disarm() { w.disarm(); }
    } disarm{watchdog};
    return solver.check(assumptions);
  }

  // Assumptions enabling exactly the axioms in `enabled` (indices into `axioms`).
  z3::expr_vector enabling(const std::vector<bool>& enabled) {
    z3::expr_vector assumptions(context);
    for (std::size_t i = 0; i < axioms.size(); ++i) assumptions.push_back(enabled[i] ? literals[i] : !literals[i]);
    return assumptions;
  }

  std::vector<std::size_t> core_axioms(z3::solver& solver) {
    std::vector<std::size_t> used;
    for (const auto& lit : solver.unsat_core())
      if (auto it = axiom_of_literal.find(lit.id()); it != axiom_of_literal.end()) used.push_back(it->second);
    std::sort(used.begin(), used.end());
    return used;
  }

  // Shrinks a core until no axiom can be left out: each is dropped in turn and the proof retried
  // with the rest, within `budget_ms` overall (a retry that runs out keeps the axiom).
  std::vector<std::size_t> minimize(z3::solver& solver, std::vector<std::size_t> core, unsigned budget_ms) {
    const auto start = std::chrono::steady_clock::now();
    for (std::size_t k = 0; k < core.size();) {
      const auto spent =
          static_cast<unsigned>(std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count());
      if (budget_ms > 0 && spent >= budget_ms) break;
      std::vector<bool> enabled(axioms.size(), false);
      for (std::size_t j = 0; j < core.size(); ++j) enabled[core[j]] = j != k;
      if (check(solver, enabling(enabled), budget_ms > 0 ? budget_ms - spent : 0) == z3::unsat)
        core = core_axioms(solver);  // smaller: retry at the same place
      else
        ++k;
    }
    return core;
  }

  ProofResult prove(const Obligation& ob, unsigned timeout_ms, const std::set<std::string>& without, bool minimal_core) {
    ProofResult result;
    z3::solver& solver = base_solver();
    solver.push();
    struct Pop {
      z3::solver& s;
      ~Pop() { s.pop(); }
    } pop{solver};

    EncodingScope scope;
    TermEncoder encoder(vocabulary);
    solver.add(hypotheses(ob, scope));
    z3::expr differ = context.bool_val(false);
    for (const auto& g : ob.goals) differ = differ || encoder.encode_single(*g.lhs, scope) != encoder.encode_single(*g.rhs, scope);
    solver.add(differ);

    std::vector<bool> enabled(axioms.size());
    for (std::size_t i = 0; i < axioms.size(); ++i) enabled[i] = axioms[i].unusable.empty() && !without.count(axioms[i].name);
    switch (check(solver, enabling(enabled), timeout_ms)) {
      case z3::unsat:
        // The core: the axioms whose tracking literals the refutation used. Z3 may include some the
        // proof could do without; minimizing removes them.
        result.proved = true;
        for (auto i : minimal_core ? minimize(solver, core_axioms(solver), timeout_ms) : core_axioms(solver))
          result.core.push_back(axioms[i].name);
        break;
      case z3::sat: result.reason = "Z3 found a model of the axioms in which the sides differ: the axioms do not imply the rule"; break;
      case z3::unknown: {
        const std::string why = solver.reason_unknown();
        if (why.find("timeout") != std::string::npos || why.find("canceled") != std::string::npos ||
            why.find("interrupted") != std::string::npos) {
          result.timed_out = true;
          result.reason = "timeout after " + std::to_string(timeout_ms) + " ms";
        } else if (why.find("incomplete quantifiers") != std::string::npos) {
          result.reason = "no proof from the axioms: Z3 ran out of axiom instances to try (a missing axiom?)";
        } else {
          result.reason = "Z3 gave up: " + why;
        }
        break;
      }
    }
    return result;
  }
};

Prover::Prover(const spec::Library& library, const AxiomSet& axioms) : impl_(std::make_unique<Impl>(library, axioms)) {}
Prover::~Prover() = default;

ProofResult Prover::prove(const Obligation& obligation, unsigned timeout_ms, const std::set<std::string>& without, bool minimal_core) {
  const auto start = std::chrono::steady_clock::now();
  ProofResult result;
  try {
    result = impl_->prove(obligation, timeout_ms, without, minimal_core);
  } catch (const LoomError& e) {
    result.reason = "cannot encode the rule for Z3: " + std::string(e.what());
  } catch (const z3::exception& e) {
    result.reason = "Z3 error: " + std::string(e.msg());
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

std::vector<std::pair<std::string, std::string>> Prover::unusable_axioms() const {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& a : impl_->axioms)
    if (!a.unusable.empty()) out.emplace_back(a.name, a.unusable);
  return out;
}

}  // namespace loom::verifier
