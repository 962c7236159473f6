#pragma once
// Runs tasks 0..count-1 on `jobs` threads, each with its own Prover (and so its own Z3 context).
#include <cstddef>

#include "loom/pcg/run_concurrently.hpp"
#include "loom/verifier/prover.hpp"

namespace loom::verifier {

template <class Task>
void run_on_provers(const spec::Library& library, const AxiomSet& axioms, int jobs, std::size_t count, Task&& task) {
  pcg::run_concurrently(
      jobs, count, [&] { return Prover(library, axioms); }, task);
}

}  // namespace loom::verifier
