// The outer product mean and the triangle updates are strided batched GEMMs: the triangle updates
// move the channel dimension in front ([n, p, q, c] -> [n, c, p, q]) so every (n, channel) pair is
// one matrix product, and the outer product mean's result [n, r, c, u, e] swaps c and u.
#include "loom/runtime/cuda/pair.hpp"

#include <vector>

#include "grid_stride.cuh"
#include "launch.cuh"
#include "library_status.hpp"
#include "loom/runtime/cuda/device_buffer.hpp"
#include "loom/runtime/cuda/elementwise.hpp"
#include "loom/runtime/cuda/gemm.hpp"
#include "loom/runtime/cuda/layout.hpp"

namespace loom::runtime::cuda {
namespace {

template <class T>
__global__ void add_pair_bias_kernel(PairBiasShape s, const T* x, const T* bias, T* y) {
  LOOM_GRID_STRIDE_LOOP(at, s.batch * s.rows * s.heads * s.t * s.u) {
    const std::int64_t c = at % s.u, r = (at / s.u) % s.t, head = (at / (s.u * s.t)) % s.heads;
    const std::int64_t b = at / (s.u * s.t * s.heads * s.rows);
    y[at] = x[at] + bias[((b * s.t + r) * s.u + c) * s.heads + head];
  }
}

// One thread per bias element, adding its rows in order (deterministic).
template <class T>
__global__ void pair_bias_grad_kernel(PairBiasShape s, const T* dy, T* dbias) {
  LOOM_GRID_STRIDE_LOOP(at, s.batch * s.t * s.u * s.heads) {
    const std::int64_t head = at % s.heads, c = (at / s.heads) % s.u, r = (at / (s.heads * s.u)) % s.t;
    const std::int64_t b = at / (s.heads * s.u * s.t);
    T total = 0;
    for (std::int64_t row = 0; row < s.rows; ++row) total += dy[((((b * s.rows + row) * s.heads + head) * s.t + r) * s.u) + c];
    dbias[at] = total;
  }
}

template <class T>
DeviceBuffer<T> scratch(const CudaContext& ctx, std::int64_t size) {
  return DeviceBuffer<T>(ctx, static_cast<std::size_t>(size));
}

template <class T>
void scale_in_place(const CudaContext& ctx, std::int64_t n, T scale, T* x) {
  const DeviceBuffer<T> factor(ctx, std::vector<T>{scale});
  scalar_forward<T>(ctx, Arith::Mul, n, x, factor.data(), x);
}

// [n, p, q, c] <-> [n, c, p, q], the box visited as [n, c, p, q].
StridedCopy channel_box(std::int64_t n, std::int64_t p, std::int64_t q, std::int64_t c, bool to_front) {
  const std::initializer_list<std::int64_t> channel_last{p * q * c, 1, q * c, c}, channel_first{c * p * q, p * q, q, 1};
  return strided_box({n, c, p, q}, to_front ? channel_last : channel_first, to_front ? channel_first : channel_last);
}

template <class T>
DeviceBuffer<T> channels_first(const CudaContext& ctx, std::int64_t n, std::int64_t p, std::int64_t q, std::int64_t c, const T* x) {
  auto out = scratch<T>(ctx, n * p * q * c);
  strided_copy(ctx, channel_box(n, p, q, c, true), x, out.data());
  return out;
}

template <class T>
void channels_last(const CudaContext& ctx, std::int64_t n, std::int64_t p, std::int64_t q, std::int64_t c, const T* x, T* out) {
  strided_copy(ctx, channel_box(n, p, q, c, false), x, out);
}

}  // namespace

template <class T>
void add_pair_bias_forward(const CudaContext& ctx, const PairBiasShape& shape, const T* x, const T* bias, T* y) {
  const std::int64_t n = shape.batch * shape.rows * shape.heads * shape.t * shape.u;
  if (n == 0) return;
  add_pair_bias_kernel<<<grid_for(n), kBlock, 0, ctx.stream()>>>(shape, x, bias, y);
  check_launch("add_pair_bias_kernel");
}

template <class T>
void add_pair_bias_backward(const CudaContext& ctx, const PairBiasShape& shape, const T* dy, T* dbias) {
  const std::int64_t n = shape.batch * shape.t * shape.u * shape.heads;
  if (n == 0) return;
  pair_bias_grad_kernel<<<grid_for(n), kBlock, 0, ctx.stream()>>>(shape, dy, dbias);
  check_launch("pair_bias_grad_kernel");
}

template <class T>
void outer_product_mean_forward(const CudaContext& ctx, const OuterProductShape& z, T scale, const T* a, const T* b, T* out) {
  // g[n] = a[n]^T b[n], [r * c, u * e] per batch.
  auto g = scratch<T>(ctx, z.batches * z.r * z.c * z.u * z.e);
  gemm_batched<T>(ctx, true, false, z.r * z.c, z.u * z.e, z.s, z.batches, a, b, g.data());
  scale_in_place(ctx, static_cast<std::int64_t>(g.size()), scale, g.data());
  strided_copy(ctx, swap_adjacent_axes(z.batches * z.r, z.c, z.u, z.e), g.data(), out);
}

template <class T>
void outer_product_mean_backward(const CudaContext& ctx, const OuterProductShape& z, T scale, const T* a, const T* b, const T* dy, T* da,
                                 T* db) {
  auto dg = scratch<T>(ctx, z.batches * z.r * z.c * z.u * z.e);
  strided_copy(ctx, swap_adjacent_axes(z.batches * z.r, z.u, z.c, z.e), dy, dg.data());
  scale_in_place(ctx, static_cast<std::int64_t>(dg.size()), scale, dg.data());
  if (da) gemm_batched<T>(ctx, false, true, z.s, z.r * z.c, z.u * z.e, z.batches, b, dg.data(), da);
  if (db) gemm_batched<T>(ctx, false, false, z.s, z.u * z.e, z.r * z.c, z.batches, a, dg.data(), db);
}

template <class T>
void triangle_mult_forward(const CudaContext& ctx, const TriangleShape& z, const T* a, const T* b, T* out) {
  const std::int64_t matrices = z.batches * z.c;
  // Outgoing: A [i, k] B [j, k]^T; incoming: A [k, i]^T B [k, j].
  auto A = z.incoming ? channels_first(ctx, z.batches, z.k, z.i, z.c, a) : channels_first(ctx, z.batches, z.i, z.k, z.c, a);
  auto B = z.incoming ? channels_first(ctx, z.batches, z.k, z.j, z.c, b) : channels_first(ctx, z.batches, z.j, z.k, z.c, b);
  auto O = scratch<T>(ctx, matrices * z.i * z.j);
  gemm_batched<T>(ctx, z.incoming, !z.incoming, z.i, z.j, z.k, matrices, A.data(), B.data(), O.data());
  channels_last(ctx, z.batches, z.i, z.j, z.c, O.data(), out);
}

template <class T>
void triangle_mult_backward(const CudaContext& ctx, const TriangleShape& z, const T* a, const T* b, const T* dy, T* da, T* db) {
  const std::int64_t matrices = z.batches * z.c;
  auto dO = channels_first(ctx, z.batches, z.i, z.j, z.c, dy);
  if (z.incoming) {
    // dA [k, i] = B dO^T, dB [k, j] = A dO.
    if (da) {
      auto B = channels_first(ctx, z.batches, z.k, z.j, z.c, b);
      auto dA = scratch<T>(ctx, matrices * z.k * z.i);
      gemm_batched<T>(ctx, false, true, z.k, z.i, z.j, matrices, B.data(), dO.data(), dA.data());
      channels_last(ctx, z.batches, z.k, z.i, z.c, dA.data(), da);
    }
    if (db) {
      auto A = channels_first(ctx, z.batches, z.k, z.i, z.c, a);
      auto dB = scratch<T>(ctx, matrices * z.k * z.j);
      gemm_batched<T>(ctx, false, false, z.k, z.j, z.i, matrices, A.data(), dO.data(), dB.data());
      channels_last(ctx, z.batches, z.k, z.j, z.c, dB.data(), db);
    }
    return;
  }
  // dA [i, k] = dO B, dB [j, k] = dO^T A.
  if (da) {
    auto B = channels_first(ctx, z.batches, z.j, z.k, z.c, b);
    auto dA = scratch<T>(ctx, matrices * z.i * z.k);
    gemm_batched<T>(ctx, false, false, z.i, z.k, z.j, matrices, dO.data(), B.data(), dA.data());
    channels_last(ctx, z.batches, z.i, z.k, z.c, dA.data(), da);
  }
  if (db) {
    auto A = channels_first(ctx, z.batches, z.i, z.k, z.c, a);
    auto dB = scratch<T>(ctx, matrices * z.j * z.k);
    gemm_batched<T>(ctx, true, false, z.j, z.k, z.i, matrices, dO.data(), A.data(), dB.data());
    channels_last(ctx, z.batches, z.j, z.k, z.c, dB.data(), db);
  }
}

#define LOOM_INSTANTIATE(T)                                                                                                            \
  template void add_pair_bias_forward<T>(const CudaContext&, const PairBiasShape&, const T*, const T*, T*);                            \
  template void add_pair_bias_backward<T>(const CudaContext&, const PairBiasShape&, const T*, T*);                                     \
  template void outer_product_mean_forward<T>(const CudaContext&, const OuterProductShape&, T, const T*, const T*, T*);                \
  template void outer_product_mean_backward<T>(const CudaContext&, const OuterProductShape&, T, const T*, const T*, const T*, T*, T*); \
  template void triangle_mult_forward<T>(const CudaContext&, const TriangleShape&, const T*, const T*, T*);                            \
  template void triangle_mult_backward<T>(const CudaContext&, const TriangleShape&, const T*, const T*, const T*, T*, T*);
LOOM_INSTANTIATE(float)
LOOM_INSTANTIATE(double)
#undef LOOM_INSTANTIATE

}  // namespace loom::runtime::cuda
