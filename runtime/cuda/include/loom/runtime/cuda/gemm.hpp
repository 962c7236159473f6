#pragma once
// Row-major matrix products on device pointers through cuBLAS, in float and double.
#include <cstdint>

#include "loom/runtime/cuda/cuda_context.hpp"

namespace loom::runtime::cuda {

// C[m, n] = op(A) op(B) + beta C, all row-major, with op(A) of shape [m, k] and op(B) [k, n]. A
// transposed operand is stored as its transpose: A as [k, m] when trans_a, B as [n, k] when trans_b.
template <class T>
void gemm(const CudaContext& ctx, bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, const T* a, const T* b, T* c,
          T beta = T(0));

// `batches` independent products over contiguous operands: A_i at a + i m k, B_i at b + i k n,
// C_i at c + i m n (a strided batched GEMM).
template <class T>
void gemm_batched(const CudaContext& ctx, bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batches,
                  const T* a, const T* b, T* c);

}  // namespace loom::runtime::cuda
