#include "loom/runtime/cuda/layout.hpp"

#include <algorithm>
#include <initializer_list>
#include <string>

#include "grid_stride.cuh"
#include "launch.cuh"
#include "library_status.hpp"

namespace loom::runtime::cuda {
namespace {

// One thread per element of the box: the flat index, taken apart into coordinates from the last
// dimension, gives both offsets.
template <class T>
__global__ void strided_copy_kernel(StridedCopy copy, std::int64_t n, const T* src, T* dst) {
  LOOM_GRID_STRIDE_LOOP(i, n) {
    std::int64_t rest = i, from = 0, to = 0;
    for (std::size_t d = copy.rank; d-- > 0;) {
      const std::int64_t at = rest % copy.extents[d];
      rest /= copy.extents[d];
      from += at * copy.src_strides[d];
      to += at * copy.dst_strides[d];
    }
    dst[to] = src[from];
  }
}

}  // namespace

StridedCopy strided_box(std::initializer_list<std::int64_t> extents, std::initializer_list<std::int64_t> src_strides,
                        std::initializer_list<std::int64_t> dst_strides) {
  StridedCopy copy;
  copy.rank = extents.size();
  std::copy(extents.begin(), extents.end(), copy.extents);
  std::copy(src_strides.begin(), src_strides.end(), copy.src_strides);
  std::copy(dst_strides.begin(), dst_strides.end(), copy.dst_strides);
  return copy;
}

std::int64_t StridedCopy::elements() const {
  std::int64_t n = 1;
  for (std::size_t d = 0; d < rank; ++d) n *= extents[d];
  return n;
}

StridedCopy block_copy(std::int64_t rows, std::int64_t width, std::int64_t src_pitch, std::int64_t dst_pitch) {
  return strided_box({rows, width}, {src_pitch, 1}, {dst_pitch, 1});
}

StridedCopy swap_adjacent_axes(std::int64_t outer, std::int64_t m, std::int64_t n, std::int64_t inner) {
  return strided_box({outer, m, n, inner}, {m * n * inner, n * inner, inner, 1}, {m * n * inner, inner, m * inner, 1});
}

template <class T>
void strided_copy(const CudaContext& ctx, const StridedCopy& copy, const T* src, T* dst) {
  if (copy.rank > kMaxCopyRank)
    throw CudaError("strided_copy: rank " + std::to_string(copy.rank) + " exceeds the supported " + std::to_string(kMaxCopyRank));
  const std::int64_t n = copy.elements();
  if (n == 0) return;
  strided_copy_kernel<<<grid_for(n), kBlock, 0, ctx.stream()>>>(copy, n, src, dst);
  check_launch("strided_copy_kernel");
}

template <class T>
void zero_fill(const CudaContext& ctx, std::int64_t n, T* dst) {
  if (n == 0) return;
  check_cuda(cudaMemsetAsync(dst, 0, static_cast<std::size_t>(n) * sizeof(T), ctx.stream()), "cudaMemsetAsync");
}

template void strided_copy<float>(const CudaContext&, const StridedCopy&, const float*, float*);
template void strided_copy<double>(const CudaContext&, const StridedCopy&, const double*, double*);
template void zero_fill<float>(const CudaContext&, std::int64_t, float*);
template void zero_fill<double>(const CudaContext&, std::int64_t, double*);

}  // namespace loom::runtime::cuda
