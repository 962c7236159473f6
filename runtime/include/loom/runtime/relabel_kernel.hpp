#pragma once
// The kernel of every reshape that keeps the row-major order (reshape, flatten, merging, splitting,
// squeezing an axis): the values stay as they are and only the dims change, to the output dims
// the spec infers. It touches no device memory, so every backend registers it as it is.
#include <utility>
#include <vector>

#include "loom/pcg/diagnostic.hpp"
#include "loom/runtime/kernel.hpp"

namespace loom::runtime {

template <class T>
Kernel<T> relabel_kernel() {
  Kernel<T> k;
  k.forward = [](const OpCall<T>& c) {
    Tensor<T> y = c.input(0);
    y.dims = c.output_shape(0);
    if (Tensor<T>::element_count(y.dims) != y.data.size())
      throw LoomError(c.op + ": output dims " + Tensor<T>::dims_text(y.dims) + " do not hold the input's " + std::to_string(y.data.size()) +
                      " elements");
    return std::vector<Tensor<T>>{std::move(y)};
  };
  k.backward = [](const GradCall<T>& g) {
    Tensor<T> dx = g.grad(0);
    dx.dims = g.input(0).dims;
    return std::vector<Tensor<T>>{std::move(dx)};
  };
  return k;
}

}  // namespace loom::runtime
