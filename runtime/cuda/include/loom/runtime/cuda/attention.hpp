#pragma once
// Attention's operators on device pointers, in float and double: scaled scores, the causal mask,
// the per-head projections and their merge, and relative position bias. The gradient pointers of
// the scores, projections and merge may be null when that gradient is not wanted.
#include <cstdint>

#include "loom/runtime/cuda/cuda_context.hpp"

namespace loom::runtime::cuda {

struct ScoresShape {
  std::int64_t batches, s, t, d;  // q [batches, s, d], k [batches, t, d]
};

// out[b] = scale q[b] k[b]^T, one strided batched GEMM.
template <class T>
void attention_scores_forward(const CudaContext& ctx, const ScoresShape& shape, T scale, const T* q, const T* k, T* out);
template <class T>
void attention_scores_backward(const CudaContext& ctx, const ScoresShape& shape, T scale, const T* q, const T* k, const T* dy, T* dq,
                               T* dk);

// A piece [batches, rows, cols] whose element (i, j) is logical element (row0 + i, col0 + j).
struct CausalShape {
  std::int64_t batches, rows, cols, row0 = 0, col0 = 0;
};

// y = x where the logical column is at most the logical row, -infinity elsewhere; the backward
// passes dy where kept and zeros elsewhere. y may be x, dx may be dy.
template <class T>
void causal_mask_forward(const CudaContext& ctx, const CausalShape& shape, const T* x, T* y);
template <class T>
void causal_mask_backward(const CudaContext& ctx, const CausalShape& shape, const T* dy, T* dx);

struct HeadProjShape {
  std::int64_t batches, s, k, heads, d;  // x [batches, s, k], w [heads, k, d], out [batches, heads, s, d]
};

// out[b, a] = x[b] w[a] (+ bias[a] when bias is not null, bias [heads, d]).
template <class T>
void head_proj_forward(const CudaContext& ctx, const HeadProjShape& shape, const T* x, const T* w, const T* bias, T* out);
template <class T>
void head_proj_backward(const CudaContext& ctx, const HeadProjShape& shape, const T* x, const T* w, const T* dy, T* dx, T* dw, T* dbias);

struct HeadMergeShape {
  std::int64_t batches, heads, s, d, n;  // x [batches, heads, s, d], w [heads, d, n], out [batches, s, n]
};

// out[b] = the sum over heads a of x[b, a] w[a], plus bias [n].
template <class T>
void head_merge_forward(const CudaContext& ctx, const HeadMergeShape& shape, const T* x, const T* w, const T* bias, T* out);
template <class T>
void head_merge_backward(const CudaContext& ctx, const HeadMergeShape& shape, const T* x, const T* w, const T* dy, T* dx, T* dw, T* dbias);

struct RelativeBiasShape {
  std::int64_t blocks, size, heads;  // x as [blocks, size] with block i of head i % heads; bias [size, heads]
};

// y[i, p] = x[i, p] + bias[p, i % heads]; dbias[p, a] = the sum of dy[i, p] over the blocks i of head a.
template <class T>
void add_relative_bias_forward(const CudaContext& ctx, const RelativeBiasShape& shape, const T* x, const T* bias, T* y);
template <class T>
void add_relative_bias_backward(const CudaContext& ctx, const RelativeBiasShape& shape, const T* dy, T* dbias);

}  // namespace loom::runtime::cuda
