#pragma once
// Which axioms the proofs rest on: how many proofs use each axiom (its unsat cores), the axioms
// no proof uses, and for each used axiom the rules that can no longer be proved without it (each
// proof that used it is attempted again with the axiom left out).
#include <cstddef>
#include <string>
#include <vector>

#include "loom/verifier/verify.hpp"

namespace loom::verifier {

struct AxiomUsage {
  std::string axiom;
  std::size_t proofs = 0;               // proofs whose core contains it
  std::vector<std::string> needed_by;   // rules not proved once it is removed
};

struct AxiomReport {
  std::vector<AxiomUsage> axioms;  // every axiom in use, in library order

  std::vector<std::string> unused() const;
};

// `report` is the result of verify() on the same obligations with the same options.
AxiomReport axiom_report(const spec::Library& library, const AxiomSet& axioms, const std::vector<Obligation>& obligations,
                         const VerifyReport& report, const VerifyOptions& options);

}  // namespace loom::verifier
