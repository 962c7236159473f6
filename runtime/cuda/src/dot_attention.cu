// Scores and context are strided batched GEMMs with one row per batch; the softmax over the
// memory is cuDNN's. The memory's gradient has two rank-one terms per batch, one small kernel.
#include "loom/runtime/cuda/dot_attention.hpp"

#include "grid_stride.cuh"
#include "launch.cuh"
#include "library_status.hpp"
#include "loom/runtime/cuda/device_buffer.hpp"
#include "loom/runtime/cuda/gemm.hpp"
#include "loom/runtime/cuda/normalization.hpp"

namespace loom::runtime::cuda {
namespace {

// dmem[b, u, j] = p[b, u] dy[b, j] + dscore[b, u] q[b, j].
template <class T>
__global__ void memory_grad_kernel(DotAttentionShape s, const T* p, const T* dscore, const T* q, const T* dy, T* dmem) {
  LOOM_GRID_STRIDE_LOOP(at, s.batch * s.t * s.n) {
    const std::int64_t j = at % s.n, row = at / s.n, b = row / s.t;  // row = b * t + u
    dmem[at] = p[row] * dy[b * s.n + j] + dscore[row] * q[b * s.n + j];
  }
}

// The attention weights p [batch, t].
template <class T>
DeviceBuffer<T> weights(const CudaContext& ctx, const DotAttentionShape& s, const T* q, const T* mem) {
  DeviceBuffer<T> p(ctx, static_cast<std::size_t>(s.batch * s.t));
  gemm_batched<T>(ctx, false, true, 1, s.t, s.n, s.batch, q, mem, p.data());
  softmax_forward<T>(ctx, s.batch, s.t, p.data(), p.data());
  return p;
}

}  // namespace

template <class T>
void dot_attention_forward(const CudaContext& ctx, const DotAttentionShape& s, const T* q, const T* mem, T* out) {
  const auto p = weights(ctx, s, q, mem);
  gemm_batched<T>(ctx, false, false, 1, s.n, s.t, s.batch, p.data(), mem, out);
}

template <class T>
void dot_attention_backward(const CudaContext& ctx, const DotAttentionShape& s, const T* q, const T* mem, const T* dy, T* dq, T* dmem) {
  const auto p = weights(ctx, s, q, mem);
  // dp[b] = dy[b] mem[b]^T, then through the softmax.
  DeviceBuffer<T> dscore(ctx, p.size());
  gemm_batched<T>(ctx, false, true, 1, s.t, s.n, s.batch, dy, mem, dscore.data());
  softmax_backward<T>(ctx, s.batch, s.t, p.data(), dscore.data(), dscore.data());
  if (dq) gemm_batched<T>(ctx, false, false, 1, s.n, s.t, s.batch, dscore.data(), mem, dq);
  const std::int64_t n = s.batch * s.t * s.n;
  if (dmem && n > 0) {
    memory_grad_kernel<<<grid_for(n), kBlock, 0, ctx.stream()>>>(s, p.data(), dscore.data(), q, dy, dmem);
    check_launch("memory_grad_kernel");
  }
}

#define LOOM_INSTANTIATE(T)                                                                                     \
  template void dot_attention_forward<T>(const CudaContext&, const DotAttentionShape&, const T*, const T*, T*); \
  template void dot_attention_backward<T>(const CudaContext&, const DotAttentionShape&, const T*, const T*, const T*, T*, T*);
LOOM_INSTANTIATE(float)
LOOM_INSTANTIATE(double)
#undef LOOM_INSTANTIATE

}  // namespace loom::runtime::cuda
