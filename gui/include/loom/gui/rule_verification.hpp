#pragma once
// Proving rules of a rule library as `loom verify` does (every axiom checked by the interpreter
// first, Z3 per rule, a counterexample search when no proof is found, the same result cache), in
// small batches so that a run can be cancelled between them.
#include <atomic>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "loom/interpreter/library.hpp"
#include "loom/pcg/rule.hpp"

namespace loom::gui {

struct VerifyRun {
  std::vector<std::size_t> which;          // indices into the rules, in the order verified
  std::vector<pcg::Verification> results;  // one per verified rule (fewer when cancelled)
  std::string cache_path;                  // empty: no cache
};

struct VerifyCounts {
  std::size_t done = 0, total = 0, proved = 0, refuted = 0, unknown = 0;
};

// Verifies rules[i] for each i in `run.which`, appending to `run.results`. Throws LoomError when the
// library has an unsound axiom (nothing is proved then) or a rule uses a form it lacks.
void verify_rules(const spec::Library& library, const std::vector<pcg::Rule>& rules, VerifyRun& run, const std::atomic<bool>& cancelled,
                  const std::function<void(const VerifyCounts&)>& progress = {});

}  // namespace loom::gui
