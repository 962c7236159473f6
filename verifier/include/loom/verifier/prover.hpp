#pragma once
// Proves obligations from the axioms with Z3: the negation of `lhs == rhs` (for every output) is
// checked under the axioms and the rule's side conditions; unsat is a proof, and the unsat core
// names the axioms it used. One Prover owns one Z3 context and is used by one thread.
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "loom/interpreter/library.hpp"
#include "loom/verifier/axiom_set.hpp"
#include "loom/verifier/obligation.hpp"

namespace loom::verifier {

struct ProofResult {
  bool proved = false;
  bool timed_out = false;
  std::vector<std::string> core;  // proved: the axioms used, in library order
  std::string reason;             // not proved: why
  double seconds = 0;
};

class Prover {
 public:
  Prover(const spec::Library& library, const AxiomSet& axioms);
  ~Prover();
  Prover(const Prover&) = delete;
  Prover& operator=(const Prover&) = delete;

  // `without`: axioms left out of this proof. A timeout of 0 means none. The core is what Z3
  // reports, which may hold axioms the proof can do without; with `minimal_core` it is shrunk
  // until every axiom in it is needed (about one more Z3 call per axiom in the core).
  ProofResult prove(const Obligation& obligation, unsigned timeout_ms, const std::set<std::string>& without = {},
                    bool minimal_core = false);

  // Axioms that no formula could be built for, each with the reason; proofs never use them.
  std::vector<std::pair<std::string, std::string>> unusable_axioms() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace loom::verifier
