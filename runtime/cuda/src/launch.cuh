#pragma once
// Launch shapes and the block-wide sum shared by Loom's CUDA kernels.
#include <algorithm>
#include <cstdint>

namespace loom::runtime::cuda {

constexpr int kBlock = 256;

// Blocks for a grid-stride loop over n elements.
inline unsigned grid_for(std::int64_t n) {
  const std::int64_t blocks = (n + kBlock - 1) / kBlock;
  return static_cast<unsigned>(std::clamp<std::int64_t>(blocks, 1, 65535));
}

// The sum of every thread's `v` over a block of kBlock threads, returned to every thread.
template <class T>
__device__ T block_sum(T v) {
  __shared__ T partial[kBlock];
  partial[threadIdx.x] = v;
  __syncthreads();
  for (int half = kBlock / 2; half > 0; half /= 2) {
    if (static_cast<int>(threadIdx.x) < half) partial[threadIdx.x] += partial[threadIdx.x + half];
    __syncthreads();
  }
  const T total = partial[0];
  __syncthreads();  // the shared array may be reused by the next call
  return total;
}

}  // namespace loom::runtime::cuda
