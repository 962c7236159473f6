#pragma once
// Searches for a counterexample to a rule with the interpreter: concrete shapes on which both
// sides are well-typed (sizes drawn at random, and ranks tried in turn for variables written
// without a shape), then random values, comparing both sides' values and parallel shapes.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "loom/interpreter/library.hpp"
#include "loom/verifier/obligation.hpp"

namespace loom::verifier {

struct CounterexampleOptions {
  int shapes = 6;            // well-typed shape assignments to evaluate
  int values_per_shape = 3;  // random value assignments per shape
  int tries = 300;           // shape samples drawn to find them (per rank combination)
  int max_rank = 3;          // ranks tried for variables without a shape: 0..max_rank
  std::int64_t max_dim = 5;  // sizes are drawn from 1..max_dim
  std::uint64_t seed = 1;
};

struct Counterexample {
  std::size_t goal = 0;     // which output of the rule
  spec::Quantifier shapes;  // the concrete shapes (and integers) the sides differ on
  std::string description;  // the interpreter's account: the values and where they differ
};

// Shapes on which both sides are well-typed but differ in parallel shape (degrees), or nothing.
// Cheap: only shapes are computed.
std::optional<Counterexample> find_shape_mismatch(const spec::Library& library, const Obligation& obligation,
                                                  const CounterexampleOptions& options = {});

// An instance where the sides differ in parallel shape or in value, or nothing.
std::optional<Counterexample> find_counterexample(const spec::Library& library, const Obligation& obligation,
                                                  const CounterexampleOptions& options = {});

}  // namespace loom::verifier
