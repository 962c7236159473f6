#pragma once
// The grid-stride loop of Loom's elementwise CUDA kernels: i runs over [0, n) across every thread
// of the grid, whatever the grid's size.
#include <cstdint>

#define LOOM_GRID_STRIDE_LOOP(i, n) \
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < (n); i += std::int64_t(blockDim.x) * gridDim.x)
