#pragma once
// Operators along one axis of a tensor seen as [outer, n, inner] (the dimensions before the axis
// flattened into outer, those after it into inner): a per-entry bias broadcast along the axis and
// its gradient, the sums over every other dimension; in float and double, on device pointers.
#include <cstdint>

#include "loom/runtime/cuda/cuda_context.hpp"

namespace loom::runtime::cuda {

struct AxisShape {
  std::int64_t outer = 1, n = 1, inner = 1;

  std::int64_t elements() const { return outer * n * inner; }
};

// y[o, j, k] = x[o, j, k] + bias[j]; y may be x.
template <class T>
void axis_bias_forward(const CudaContext& ctx, AxisShape s, const T* x, const T* bias, T* y);

// out[j] = the sum over o and k of a[o, j, k]: blocks of partial sums, added in a fixed order
// (deterministic, no atomics).
template <class T>
void axis_sums(const CudaContext& ctx, AxisShape s, const T* a, T* out);

}  // namespace loom::runtime::cuda
