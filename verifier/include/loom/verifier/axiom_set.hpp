#pragma once
// The axioms a proof may use, after the interpreter has checked each of them on random instances.
//
// Z3 sees tensors without shapes, so an axiom's side conditions on dimension symbols are handled
// here, once: a condition is dropped when it only guards well-typedness in a way that cannot make
// Z3 prove a false rule (see only_typing in axiom_set.cpp: with parallel forms erased, violating it
// leaves both sides ill-typed, or both equal); otherwise it is kept and reaches Z3 as a guard over
// the tensors' dimensions, which Z3 knows where a rule states them.
#include <string>
#include <vector>

#include "loom/interpreter/axiom_check.hpp"
#include "loom/interpreter/library.hpp"

namespace loom::verifier {

struct PreparedAxiom {
  const spec::EquationDecl* decl = nullptr;
  std::vector<spec::ExprPtr> conditions;         // side conditions that reach Z3
  std::vector<spec::ExprPtr> typing_conditions;  // dropped: they only express well-typedness
  std::string fingerprint;                       // axiom_hash: changes whenever its statement or meaning does
  int checked_instances = 0;                     // instances the interpreter found it sound on

  const std::string& name() const { return decl->name; }
};

struct AxiomSet {
  std::vector<PreparedAxiom> axioms;

  const PreparedAxiom* find(const std::string& name) const;
};

// Checks every axiom of `library` numerically and prepares it. Throws LoomError listing each
// unsound axiom at its location, with the instance that breaks it; nothing is proved then.
AxiomSet prepare_axioms(const spec::Library& library, const spec::AxiomCheckOptions& options = {});

// The top-level conjuncts of a condition (`a && (b && c)` gives a, b, c).
std::vector<spec::ExprPtr> conjuncts(const spec::ExprPtr& condition);

}  // namespace loom::verifier
