#pragma once
// The fingerprint of a graph output (Unity's extension of TASO's): a hash of its exact modular
// values on the fixed random inputs together with its parallel shape (sizes and D, P, V, R).
#include <cstdint>

#include "loom/interpreter/numeric.hpp"
#include "loom/superopt/step_eval.hpp"

namespace loom::superopt {

std::uint64_t fingerprint(const Value<spec::ModularValue>& value);

// The fingerprint of a graph's two outputs, in order.
std::uint64_t pair_fingerprint(std::uint64_t first, std::uint64_t second);

// Keeps the low `bits` bits (1..64): fewer bits make unequal graphs collide.
std::uint64_t truncate_fingerprint(std::uint64_t fingerprint, int bits);

}  // namespace loom::superopt
