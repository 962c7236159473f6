#pragma once
// Verifies a list of obligations over several threads (one Z3 context each). The interpreter
// first compares the two sides' parallel shapes (degrees, which Z3 does not see); then Z3 looks
// for a proof; when it finds none, the interpreter searches for a counterexample. A rule is
// `proved` only with an unsat core, `refuted` only with a concrete counterexample, and `unknown`
// otherwise, with the reason and the time spent.
#include <cstddef>
#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "loom/interpreter/library.hpp"
#include "loom/pcg/rule.hpp"
#include "loom/verifier/axiom_set.hpp"
#include "loom/verifier/counterexample.hpp"
#include "loom/verifier/obligation.hpp"
#include "loom/verifier/result_cache.hpp"

namespace loom::verifier {

struct VerifyProgress {
  std::size_t done = 0, total = 0;
  std::size_t proved = 0, refuted = 0, unknown = 0, cached = 0;
  double seconds = 0;
};

struct VerifyOptions {
  int jobs = 1;
  unsigned timeout_ms = 10000;    // per rule; 0: none
  std::set<std::string> without;  // axioms left out of every proof
  bool minimal_cores = false;     // shrink each unsat core until every axiom in it is needed
  CounterexampleOptions counterexamples;
  ResultCache* cache = nullptr;                         // read and updated when set
  std::function<void(const VerifyProgress&)> progress;  // called after each rule, from one thread at a time
};

struct Verdict {
  pcg::Verification verification;
  bool cached = false;
};

struct VerifyReport {
  std::vector<Verdict> verdicts;                                     // in obligation order
  std::vector<std::pair<std::string, std::string>> unusable_axioms;  // axiom, why Z3 cannot use it
  double seconds = 0;
  std::size_t count(pcg::VerificationStatus status) const;
};

VerifyReport verify(const spec::Library& library, const AxiomSet& axioms, const std::vector<Obligation>& obligations,
                    const VerifyOptions& options);

// The cache context of a run: the forms' fingerprint, the axioms in use (all but `without`), the timeout.
CacheContext cache_context(const spec::Library& library, const AxiomSet& axioms, const VerifyOptions& options);

}  // namespace loom::verifier
