#pragma once
// The generation the Studio tests ask for on docs/examples/axpy.loom: axpy with the three parallel
// forms, two operators deep, over a scalar and two matrices, implied rules pruned.
#include "loom/superopt/options.hpp"

namespace loom::gui::test {

inline superopt::GeneratorOptions axpy_generation() {
  superopt::GeneratorOptions options;
  options.ops = {"axpy"};
  options.parallel = {"partition", "combine", "replicate"};
  options.max_ops = 2;
  options.inputs = superopt::parse_inputs("a: [], x: [4, 6], y: [4, 6]");
  options.prune_implied = true;
  return options;
}

}  // namespace loom::gui::test
