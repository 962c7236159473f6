#pragma once
// The parts of evaluating a compiled comprehension that do not depend on the number domain:
// integer index expressions, the element a read addresses, and the points of a reduction. The
// value evaluator and the gradient evaluator both walk a body with them.
#include <cstdint>
#include <optional>
#include <vector>

#include "loom/interpreter/program.hpp"

namespace loom::spec {

using Slots = std::vector<std::int64_t>;

// The value of an integer index expression with the index slots as they are.
std::int64_t eval_index(const CNode& n, Slots& slots);

// The row-major offset of the element the read `n` addresses in a tensor of `dims`, or nullopt
// when the address falls outside it.
std::optional<std::size_t> read_offset(const CNode& n, const std::vector<std::int64_t>& dims, Slots& slots);

// Calls `visit` at every point of the reduction `n`'s index space, with its slots set.
template <class Visit>
void for_each_reduce_point(const CNode& n, Slots& slots, Visit&& visit) {
  const std::size_t depth = n.reduce_slots.size();
  for (std::size_t k = 0; k < depth; ++k) {
    if (n.reduce_extents[k] <= 0) return;
    slots[static_cast<std::size_t>(n.reduce_slots[k])] = 0;
  }
  while (true) {
    visit();
    std::size_t k = depth;
    while (k-- > 0) {
      auto& s = slots[static_cast<std::size_t>(n.reduce_slots[k])];
      if (++s < n.reduce_extents[k]) break;
      s = 0;
    }
    if (k == static_cast<std::size_t>(-1)) return;
  }
}

}  // namespace loom::spec
