#pragma once
// AlphaFold2's pair operators on device pointers, in float and double: the pair bias added to
// attention scores, the outer product mean and the triangle multiplicative updates (strided
// batched GEMMs between permutation copies). Gradient pointers may be null when that gradient is
// not wanted.
#include <cstdint>

#include "loom/runtime/cuda/cuda_context.hpp"

namespace loom::runtime::cuda {

struct PairBiasShape {
  std::int64_t batch, rows, heads, t, u;  // x [batch, rows, heads, t, u], bias [batch, t, u, heads]
};

// y[b, s, a, r, c] = x[b, s, a, r, c] + bias[b, r, c, a] (y may be x); dbias = dy summed over s.
template <class T>
void add_pair_bias_forward(const CudaContext& ctx, const PairBiasShape& shape, const T* x, const T* bias, T* y);
template <class T>
void add_pair_bias_backward(const CudaContext& ctx, const PairBiasShape& shape, const T* dy, T* dbias);

struct OuterProductShape {
  std::int64_t batches, s, r, c, u, e;  // a [batches, s, r, c], b [batches, s, u, e], out [batches, r, u, c * e]
};

// out[n, x, y, f * e + g] = scale * sum over t of a[n, t, x, f] b[n, t, y, g].
template <class T>
void outer_product_mean_forward(const CudaContext& ctx, const OuterProductShape& shape, T scale, const T* a, const T* b, T* out);
template <class T>
void outer_product_mean_backward(const CudaContext& ctx, const OuterProductShape& shape, T scale, const T* a, const T* b, const T* dy,
                                 T* da, T* db);

// Outgoing: a [batches, i, k, c], b [batches, j, k, c], out[n, x, y, f] = sum over z of
// a[n, x, z, f] b[n, y, z, f]. Incoming: a [batches, k, i, c], b [batches, k, j, c],
// out[n, x, y, f] = sum over z of a[n, z, x, f] b[n, z, y, f]. out is [batches, i, j, c].
struct TriangleShape {
  std::int64_t batches, i, j, k, c;
  bool incoming;
};

template <class T>
void triangle_mult_forward(const CudaContext& ctx, const TriangleShape& shape, const T* a, const T* b, T* out);
template <class T>
void triangle_mult_backward(const CudaContext& ctx, const TriangleShape& shape, const T* a, const T* b, const T* dy, T* da, T* db);

}  // namespace loom::runtime::cuda
