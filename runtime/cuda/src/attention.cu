// The head projections run as one GEMM over every (batch, position) row with the heads side by
// side in the columns, so the per-head layouts [heads, ., .] are moved there and back with
// strided copies.
#include "loom/runtime/cuda/attention.hpp"

#include <limits>

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
__global__ void scale_kernel(std::int64_t n, T scale, T* x) {
  LOOM_GRID_STRIDE_LOOP(i, n) x[i] *= scale;
}

template <class T>
void scale_in_place(const CudaContext& ctx, std::int64_t n, T scale, T* x) {
  if (n == 0) return;
  scale_kernel<<<grid_for(n), kBlock, 0, ctx.stream()>>>(n, scale, x);
  check_launch("scale_kernel");
}

template <class T>
__global__ void causal_mask_kernel(CausalShape s, T masked, const T* x, T* y) {
  LOOM_GRID_STRIDE_LOOP(at, s.batches * s.rows * s.cols) {
    const std::int64_t j = at % s.cols, i = (at / s.cols) % s.rows;
    y[at] = s.col0 + j <= s.row0 + i ? x[at] : masked;
  }
}

template <class T>
void causal_mask(const CudaContext& ctx, const CausalShape& shape, T masked, const T* x, T* y) {
  const std::int64_t n = shape.batches * shape.rows * shape.cols;
  if (n == 0) return;
  causal_mask_kernel<<<grid_for(n), kBlock, 0, ctx.stream()>>>(shape, masked, x, y);
  check_launch("causal_mask_kernel");
}

template <class T>
__global__ void add_relative_bias_kernel(RelativeBiasShape s, const T* x, const T* bias, T* y) {
  LOOM_GRID_STRIDE_LOOP(at, s.blocks * s.size) {
    const std::int64_t block = at / s.size, p = at % s.size;
    y[at] = x[at] + bias[p * s.heads + block % s.heads];
  }
}

// One thread per bias element, adding its head's blocks in order (deterministic); consecutive
// threads read consecutive positions p of a block.
template <class T>
__global__ void relative_bias_grad_kernel(RelativeBiasShape s, const T* dy, T* dbias) {
  LOOM_GRID_STRIDE_LOOP(at, s.heads * s.size) {
    const std::int64_t head = at / s.size, p = at % s.size;
    T total = 0;
    for (std::int64_t block = head; block < s.blocks; block += s.heads) total += dy[block * s.size + p];
    dbias[p * s.heads + head] = total;
  }
}

template <class T>
DeviceBuffer<T> scratch(const CudaContext& ctx, std::int64_t size) {
  return DeviceBuffer<T>(ctx, static_cast<std::size_t>(size));
}

}  // namespace

template <class T>
void attention_scores_forward(const CudaContext& ctx, const ScoresShape& z, T scale, const T* q, const T* k, T* out) {
  gemm_batched<T>(ctx, false, true, z.s, z.t, z.d, z.batches, q, k, out);
  scale_in_place(ctx, z.batches * z.s * z.t, scale, out);
}

template <class T>
void attention_scores_backward(const CudaContext& ctx, const ScoresShape& z, T scale, const T* q, const T* k, const T* dy, T* dq, T* dk) {
  if (dq) {
    gemm_batched<T>(ctx, false, false, z.s, z.d, z.t, z.batches, dy, k, dq);
    scale_in_place(ctx, z.batches * z.s * z.d, scale, dq);
  }
  if (dk) {
    gemm_batched<T>(ctx, true, false, z.t, z.d, z.s, z.batches, dy, q, dk);
    scale_in_place(ctx, z.batches * z.t * z.d, scale, dk);
  }
}

template <class T>
void causal_mask_forward(const CudaContext& ctx, const CausalShape& shape, const T* x, T* y) {
  causal_mask(ctx, shape, -std::numeric_limits<T>::infinity(), x, y);
}

template <class T>
void causal_mask_backward(const CudaContext& ctx, const CausalShape& shape, const T* dy, T* dx) {
  causal_mask(ctx, shape, T(0), dy, dx);
}

template <class T>
void head_proj_forward(const CudaContext& ctx, const HeadProjShape& z, const T* x, const T* w, const T* bias, T* out) {
  const std::int64_t rows = z.batches * z.s, width = z.heads * z.d;
  auto w_by_input = scratch<T>(ctx, z.k * width);  // [k, heads, d]
  strided_copy(ctx, swap_adjacent_axes(1, z.heads, z.k, z.d), w, w_by_input.data());
  auto y = scratch<T>(ctx, rows * width);  // [batches, s, heads, d]
  gemm<T>(ctx, false, false, rows, width, z.k, x, w_by_input.data(), y.data());
  if (bias) bias_add_forward<T>(ctx, rows, width, y.data(), bias, y.data());
  strided_copy(ctx, swap_adjacent_axes(z.batches, z.s, z.heads, z.d), y.data(), out);
}

template <class T>
void head_proj_backward(const CudaContext& ctx, const HeadProjShape& z, const T* x, const T* w, const T* dy, T* dx, T* dw, T* dbias) {
  const std::int64_t rows = z.batches * z.s, width = z.heads * z.d;
  auto dy_by_row = scratch<T>(ctx, rows * width);  // [batches, s, heads, d]
  strided_copy(ctx, swap_adjacent_axes(z.batches, z.heads, z.s, z.d), dy, dy_by_row.data());
  if (dx) {
    auto w_by_input = scratch<T>(ctx, z.k * width);
    strided_copy(ctx, swap_adjacent_axes(1, z.heads, z.k, z.d), w, w_by_input.data());
    gemm<T>(ctx, false, true, rows, z.k, width, dy_by_row.data(), w_by_input.data(), dx);
  }
  if (dw) {
    auto dw_by_input = scratch<T>(ctx, z.k * width);  // [k, heads, d]
    gemm<T>(ctx, true, false, z.k, width, rows, x, dy_by_row.data(), dw_by_input.data());
    strided_copy(ctx, swap_adjacent_axes(1, z.k, z.heads, z.d), dw_by_input.data(), dw);
  }
  if (dbias) column_sums<T>(ctx, rows, width, dy_by_row.data(), nullptr, dbias);
}

template <class T>
void head_merge_forward(const CudaContext& ctx, const HeadMergeShape& z, const T* x, const T* w, const T* bias, T* out) {
  const std::int64_t rows = z.batches * z.s, width = z.heads * z.d;
  auto x_by_row = scratch<T>(ctx, rows * width);  // [batches, s, heads, d]
  strided_copy(ctx, swap_adjacent_axes(z.batches, z.heads, z.s, z.d), x, x_by_row.data());
  gemm<T>(ctx, false, false, rows, z.n, width, x_by_row.data(), w, out);
  bias_add_forward<T>(ctx, rows, z.n, out, bias, out);
}

template <class T>
void head_merge_backward(const CudaContext& ctx, const HeadMergeShape& z, const T* x, const T* w, const T* dy, T* dx, T* dw, T* dbias) {
  const std::int64_t rows = z.batches * z.s, width = z.heads * z.d;
  if (dx) {
    auto dx_by_row = scratch<T>(ctx, rows * width);
    gemm<T>(ctx, false, true, rows, width, z.n, dy, w, dx_by_row.data());
    strided_copy(ctx, swap_adjacent_axes(z.batches, z.s, z.heads, z.d), dx_by_row.data(), dx);
  }
  if (dw) {
    auto x_by_row = scratch<T>(ctx, rows * width);
    strided_copy(ctx, swap_adjacent_axes(z.batches, z.heads, z.s, z.d), x, x_by_row.data());
    gemm<T>(ctx, true, false, width, z.n, rows, x_by_row.data(), dy, dw);
  }
  if (dbias) column_sums<T>(ctx, rows, z.n, dy, nullptr, dbias);
}

template <class T>
void add_relative_bias_forward(const CudaContext& ctx, const RelativeBiasShape& shape, const T* x, const T* bias, T* y) {
  const std::int64_t n = shape.blocks * shape.size;
  if (n == 0) return;
  add_relative_bias_kernel<<<grid_for(n), kBlock, 0, ctx.stream()>>>(shape, x, bias, y);
  check_launch("add_relative_bias_kernel");
}

template <class T>
void add_relative_bias_backward(const CudaContext& ctx, const RelativeBiasShape& shape, const T* dy, T* dbias) {
  const std::int64_t n = shape.heads * shape.size;
  if (n == 0) return;
  relative_bias_grad_kernel<<<grid_for(n), kBlock, 0, ctx.stream()>>>(shape, dy, dbias);
  check_launch("relative_bias_grad_kernel");
}

#define LOOM_INSTANTIATE(T)                                                                                                    \
  template void attention_scores_forward<T>(const CudaContext&, const ScoresShape&, T, const T*, const T*, T*);                \
  template void attention_scores_backward<T>(const CudaContext&, const ScoresShape&, T, const T*, const T*, const T*, T*, T*); \
  template void causal_mask_forward<T>(const CudaContext&, const CausalShape&, const T*, T*);                                  \
  template void causal_mask_backward<T>(const CudaContext&, const CausalShape&, const T*, T*);                                 \
  template void head_proj_forward<T>(const CudaContext&, const HeadProjShape&, const T*, const T*, const T*, T*);              \
  template void head_proj_backward<T>(const CudaContext&, const HeadProjShape&, const T*, const T*, const T*, T*, T*, T*);     \
  template void head_merge_forward<T>(const CudaContext&, const HeadMergeShape&, const T*, const T*, const T*, T*);            \
  template void head_merge_backward<T>(const CudaContext&, const HeadMergeShape&, const T*, const T*, const T*, T*, T*, T*);   \
  template void add_relative_bias_forward<T>(const CudaContext&, const RelativeBiasShape&, const T*, const T*, T*);            \
  template void add_relative_bias_backward<T>(const CudaContext&, const RelativeBiasShape&, const T*, T*);
LOOM_INSTANTIATE(float)
LOOM_INSTANTIATE(double)

}  // namespace loom::runtime::cuda
