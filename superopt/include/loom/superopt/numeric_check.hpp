#pragma once
// The double-precision re-check of every candidate, by the interpreter's axiom checker on the
// rule text itself: first at the example sizes with fresh random values (a failure there is a
// fingerprint collision), then with the symbolic sizes drawn at random under the rule's side
// conditions (a failure there means the rule held only at the example sizes).
#include <string>
#include <vector>

#include "loom/interpreter/library.hpp"
#include "loom/superopt/options.hpp"
#include "loom/superopt/progress.hpp"
#include "loom/superopt/render.hpp"

namespace loom::superopt {

struct NumericCheck {
  bool at_example_sizes = false;
  bool at_random_sizes = false;
  int instances = 0;    // instances evaluated, both checks together
  std::string problem;  // the first failure, with the instance that shows it

  bool passed() const { return at_example_sizes && at_random_sizes; }
};

// Loads the rules' text next to the spec files they use (a rendering that does not load throws
// LoomError with its diagnostics) and checks each rule.
std::vector<NumericCheck> check_numerically(const spec::Library& library, const std::vector<RenderedRule>& rules,
                                            const GeneratorOptions& options, const ProgressFn& progress = {});

}  // namespace loom::superopt
