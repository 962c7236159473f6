#pragma once
// For kernels whose piece of the logical result cannot be computed from split inputs along some
// dimension (a roll that wraps around it, a softmax over it): the call is refused, never answered
// with a wrong piece. The plans the search makes do not split those dimensions.
#include <string>

#include "loom/pcg/diagnostic.hpp"
#include "loom/runtime/kernel.hpp"

namespace loom::runtime {

// Whether input `i` of the call holds its whole logical extent along `dim`.
template <class T, class Held>
bool whole_along(const OpCall<T, Held>& c, std::size_t i, std::size_t dim) {
  return c.offset(i, dim) == 0 && dims_of(c.input(i)).at(dim) == c.logical_size(i, dim);
}

// Throws LoomError naming the op unless input `i` is whole along `dim`; `why` says what the
// op's body needs of that dimension.
template <class T, class Held>
void require_whole(const OpCall<T, Held>& c, std::size_t i, std::size_t dim, const std::string& why) {
  if (whole_along(c, i, dim)) return;
  throw LoomError(c.op + ": input " + std::to_string(i) + " is split along dimension " + std::to_string(dim) + " (" +
                  std::to_string(dims_of(c.input(i)).at(dim)) + " of " + std::to_string(c.logical_size(i, dim)) + " entries from " +
                  std::to_string(c.offset(i, dim)) + "), but " + why + "; a plan must not split that dimension");
}

}  // namespace loom::runtime
