#pragma once
// Which axioms the proofs rest on: how many proofs use each axiom (its unsat cores), the axioms
// no proof uses, and for each used axiom the rules that can no longer be proved without it (each
// proof that used it is attempted again with the axiom left out, briefly: see retry_limit_ms).
#include <cstddef>
#include <string>
#include <vector>

#include "loom/verifier/verify.hpp"

namespace loom::verifier {

struct AxiomUsage {
  std::string axiom;
  std::size_t proofs = 0;              // proofs whose core contains it
  std::vector<std::string> needed_by;  // rules not proved once it is removed
};

struct AxiomReport {
  std::vector<AxiomUsage> axioms;  // every axiom in use, in library order

  std::vector<std::string> unused() const;
};

// A retry without an axiom gets kRetryTimeFactor times as long as the proof took, at least
// kMinRetryTimeoutMs, at most the run's timeout: a rule not proved within it counts as needing the
// axiom. (Without the axiom Z3 mostly fails by exploring, for as long as it is let.)
inline constexpr double kRetryTimeFactor = 20;
inline constexpr unsigned kMinRetryTimeoutMs = 100;
unsigned retry_limit_ms(const pcg::Verification& proof, const VerifyOptions& options);

// `report` is the result of verify() on the same obligations with the same options; progress is
// reported through options.progress (done and total count retries; proved: still proved without
// the axiom, unknown: not).
AxiomReport axiom_report(const spec::Library& library, const AxiomSet& axioms, const std::vector<Obligation>& obligations,
                         const VerifyReport& report, const VerifyOptions& options);

}  // namespace loom::verifier
