// A row-major product C = op(A) op(B) is the column-major product C^T = op(B)^T op(A)^T, so cuBLAS
// is called with the operands swapped and every matrix read as its transpose.
#include "loom/runtime/cuda/gemm.hpp"

#include <algorithm>
#include <limits>
#include <string>
#include <type_traits>

#include "library_status.hpp"

namespace loom::runtime::cuda {
namespace {

int as_int(std::int64_t v, const char* what) {
  if (v < 0 || v > std::numeric_limits<int>::max())
    throw CudaError(std::string("gemm: ") + what + " = " + std::to_string(v) + " is out of cuBLAS's int range");
  return static_cast<int>(v);
}

// cuBLAS wants a leading dimension of at least 1, even for an empty operand.
int leading_dimension(std::int64_t columns) { return as_int(std::max<std::int64_t>(1, columns), "leading dimension"); }

struct ColumnMajorCall {
  cublasOperation_t op_first, op_second;
  int rows, cols, inner, ld_first, ld_second, ld_out;
};

// The column-major call computing row-major C[m, n] = op(A) op(B); B is the first operand.
ColumnMajorCall column_major(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k) {
  return {trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, as_int(n, "n"),      as_int(m, "m"), as_int(k, "k"),
          leading_dimension(trans_b ? k : n),  leading_dimension(trans_a ? m : k),  leading_dimension(n)};
}

}  // namespace

template <class T>
void gemm(const CudaContext& ctx, bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, const T* a, const T* b, T* c,
          T beta) {
  if (m == 0 || n == 0) return;
  const ColumnMajorCall g = column_major(trans_a, trans_b, m, n, k);
  const T one = 1;
  if constexpr (std::is_same_v<T, float>)
    check_cublas(cublasSgemm(ctx.cublas(), g.op_first, g.op_second, g.rows, g.cols, g.inner, &one, b, g.ld_first, a, g.ld_second, &beta, c,
                             g.ld_out),
                 "cublasSgemm");
  else
    check_cublas(cublasDgemm(ctx.cublas(), g.op_first, g.op_second, g.rows, g.cols, g.inner, &one, b, g.ld_first, a, g.ld_second, &beta, c,
                             g.ld_out),
                 "cublasDgemm");
}

template <class T>
void gemm_batched(const CudaContext& ctx, bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batches,
                  const T* a, const T* b, T* c) {
  if (m == 0 || n == 0 || batches == 0) return;
  const ColumnMajorCall g = column_major(trans_a, trans_b, m, n, k);
  const T one = 1, zero = 0;
  const int count = as_int(batches, "batches");
  if constexpr (std::is_same_v<T, float>)
    check_cublas(cublasSgemmStridedBatched(ctx.cublas(), g.op_first, g.op_second, g.rows, g.cols, g.inner, &one, b, g.ld_first, k * n, a,
                                           g.ld_second, m * k, &zero, c, g.ld_out, m * n, count),
                 "cublasSgemmStridedBatched");
  else
    check_cublas(cublasDgemmStridedBatched(ctx.cublas(), g.op_first, g.op_second, g.rows, g.cols, g.inner, &one, b, g.ld_first, k * n, a,
                                           g.ld_second, m * k, &zero, c, g.ld_out, m * n, count),
                 "cublasDgemmStridedBatched");
}

template void gemm<float>(const CudaContext&, bool, bool, std::int64_t, std::int64_t, std::int64_t, const float*, const float*, float*,
                          float);
template void gemm<double>(const CudaContext&, bool, bool, std::int64_t, std::int64_t, std::int64_t, const double*, const double*, double*,
                           double);
template void gemm_batched<float>(const CudaContext&, bool, bool, std::int64_t, std::int64_t, std::int64_t, std::int64_t, const float*,
                                  const float*, float*);
template void gemm_batched<double>(const CudaContext&, bool, bool, std::int64_t, std::int64_t, std::int64_t, std::int64_t, const double*,
                                   const double*, double*);

}  // namespace loom::runtime::cuda
