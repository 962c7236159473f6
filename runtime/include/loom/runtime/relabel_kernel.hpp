#pragma once
// The kernel of every reshape that keeps the row-major order (reshape, flatten, merging, splitting,
// squeezing an axis): the values stay as they are and only the dims change, to the output dims
// the spec infers. Its value form copies the elements where they lie, so every backend registers
// it as it is.
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
  k.forward_values = [](const ValueCall<T>& c) {
    const std::vector<std::int64_t>& dims = c.output_shape(0);
    if (Tensor<T>::element_count(dims) != c.input(0).size())
      throw LoomError(c.op + ": output dims " + Tensor<T>::dims_text(dims) + " do not hold the input's " +
                      std::to_string(c.input(0).size()) + " elements");
    return std::vector<Value<T>>{c.input(0).with_dims(dims)};
  };
  k.backward_values = [](const ValueGradCall<T>& g) { return std::vector<Value<T>>{g.grad(0).with_dims(g.input(0).dims())}; };
  return k;
}

}  // namespace loom::runtime
