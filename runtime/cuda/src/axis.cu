#include "loom/runtime/cuda/axis.hpp"

#include <algorithm>

#include "grid_stride.cuh"
#include "launch.cuh"
#include "library_status.hpp"
#include "loom/runtime/cuda/device_buffer.hpp"

namespace loom::runtime::cuda {
namespace {

// Elements each thread of a summing block adds, at the least, before a second block shares an
// entry's sum; and about how many blocks a sum should spread over to fill the device.
constexpr std::int64_t kSumsPerThread = 16;
constexpr std::int64_t kBlocksWanted = 1024;
constexpr std::int64_t kMaxGridX = 65535;

template <class T>
__global__ void axis_bias_kernel(AxisShape s, std::int64_t total, const T* x, const T* bias, T* y) {
  LOOM_GRID_STRIDE_LOOP(i, total) y[i] = x[i] + bias[(i / s.inner) % s.n];
}

// Block (j, c) adds chunk c of the outer * inner elements of entry j, in order of their flat index
// (o, k): neighbouring threads read neighbouring k. Entries past the grid's width are taken by
// the same block in turn, so every thread of a block runs the same iterations and reaches the
// barriers of block_sum together.
template <class T>
__global__ void axis_partial_sums_kernel(AxisShape s, std::int64_t chunks, const T* a, T* partial) {
  const std::int64_t m = s.outer * s.inner;
  const std::int64_t per_chunk = (m + chunks - 1) / chunks;
  const std::int64_t begin = blockIdx.y * per_chunk, end = begin + per_chunk < m ? begin + per_chunk : m;
  for (std::int64_t j = blockIdx.x; j < s.n; j += gridDim.x) {
    T total = 0;
    for (std::int64_t e = begin + threadIdx.x; e < end; e += kBlock) {
      const std::int64_t o = e / s.inner, k = e - o * s.inner;
      total += a[(o * s.n + j) * s.inner + k];
    }
    total = block_sum(total);
    if (threadIdx.x == 0) partial[j * chunks + blockIdx.y] = total;
  }
}

// Blocks per entry: enough that each thread adds about kSumsPerThread elements, no more than
// needed for about kBlocksWanted blocks in all. At most kBlocksWanted, so the partial sums of
// an entry take a single block to add.
std::int64_t chunks_for(AxisShape s) {
  const std::int64_t m = s.outer * s.inner;
  const std::int64_t by_work = (m + kBlock * kSumsPerThread - 1) / (kBlock * kSumsPerThread);
  const std::int64_t by_device = (kBlocksWanted + s.n - 1) / s.n;
  return std::max<std::int64_t>(1, std::min(by_work, by_device));
}

template <class T>
void launch_partial_sums(const CudaContext& ctx, AxisShape s, std::int64_t chunks, const T* a, T* partial) {
  const dim3 grid(static_cast<unsigned>(std::min(s.n, kMaxGridX)), static_cast<unsigned>(chunks));
  axis_partial_sums_kernel<<<grid, kBlock, 0, ctx.stream()>>>(s, chunks, a, partial);
  check_launch("axis_partial_sums_kernel");
}

}  // namespace

template <class T>
void axis_bias_forward(const CudaContext& ctx, AxisShape s, const T* x, const T* bias, T* y) {
  const std::int64_t total = s.elements();
  if (total == 0) return;
  axis_bias_kernel<<<grid_for(total), kBlock, 0, ctx.stream()>>>(s, total, x, bias, y);
  check_launch("axis_bias_kernel");
}

template <class T>
void axis_sums(const CudaContext& ctx, AxisShape s, const T* a, T* out) {
  if (s.n == 0) return;
  const std::int64_t chunks = chunks_for(s);
  if (chunks == 1) return launch_partial_sums(ctx, s, 1, a, out);
  // The partial sums, [n, chunks], are summed along their last axis in one block per entry.
  DeviceBuffer<T> partial(ctx, static_cast<std::size_t>(s.n * chunks));
  launch_partial_sums(ctx, s, chunks, a, partial.data());
  launch_partial_sums(ctx, AxisShape{1, s.n, chunks}, 1, partial.data(), out);
}

#define LOOM_INSTANTIATE(T)                                                                  \
  template void axis_bias_forward<T>(const CudaContext&, AxisShape, const T*, const T*, T*); \
  template void axis_sums<T>(const CudaContext&, AxisShape, const T*, T*);
LOOM_INSTANTIATE(float)
LOOM_INSTANTIATE(double)

}  // namespace loom::runtime::cuda
