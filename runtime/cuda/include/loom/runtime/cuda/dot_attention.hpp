#pragma once
// Luong dot attention (NMT) on device pointers, in float and double: one query per batch over a
// memory of t states. Gradient pointers may be null when that gradient is not wanted.
#include <cstdint>

#include "loom/runtime/cuda/cuda_context.hpp"

namespace loom::runtime::cuda {

struct DotAttentionShape {
  std::int64_t batch, t, n;  // q [batch, n], mem [batch, t, n], out [batch, n]
};

// p[b] = softmax over u of q[b] . mem[b, u]; out[b] = sum over u of p[b, u] mem[b, u].
template <class T>
void dot_attention_forward(const CudaContext& ctx, const DotAttentionShape& shape, const T* q, const T* mem, T* out);
// Recomputes p from q and mem.
template <class T>
void dot_attention_backward(const CudaContext& ctx, const DotAttentionShape& shape, const T* q, const T* mem, const T* dy, T* dq, T* dmem);

}  // namespace loom::runtime::cuda
