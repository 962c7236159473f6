#include "loom/runtime/cuda/embedding.hpp"

#include <cmath>

#include "grid_stride.cuh"
#include "launch.cuh"
#include "library_status.hpp"

namespace loom::runtime::cuda {
namespace {

// The row of the table piece an id selects, or -1. In double, which holds every float and every
// offset exactly, so no rounding can turn a fraction or an out-of-range id into a row.
template <class T>
__device__ std::int64_t selected_row(T id, const LookupShape& s) {
  const double value = static_cast<double>(id);
  if (floor(value) != value) return -1;
  const double local = value - static_cast<double>(s.first_row);
  if (!(local >= 0) || local >= static_cast<double>(s.rows)) return -1;
  return static_cast<std::int64_t>(local);
}

// One thread per output element (bag b, column j), adding the bag's rows in id order.
template <class T>
__global__ void lookup_forward_kernel(LookupShape s, const T* ids, const T* table, T* out) {
  LOOM_GRID_STRIDE_LOOP(i, s.bags * s.width) {
    const std::int64_t b = i / s.width, j = i % s.width;
    T total = 0;
    for (std::int64_t t = 0; t < s.per_bag; ++t)
      if (const std::int64_t row = selected_row(ids[b * s.per_bag + t], s); row >= 0) total += table[row * s.width + j];
    out[i] = total;
  }
}

// One thread per (id, column): ids may repeat, so the rows are accumulated atomically.
template <class T>
__global__ void lookup_backward_kernel(LookupShape s, const T* ids, const T* dout, T* dtable) {
  LOOM_GRID_STRIDE_LOOP(i, s.bags * s.per_bag * s.width) {
    const std::int64_t id = i / s.width, j = i % s.width;
    if (const std::int64_t row = selected_row(ids[id], s); row >= 0)
      atomicAdd(dtable + row * s.width + j, dout[(id / s.per_bag) * s.width + j]);
  }
}

}  // namespace

template <class T>
void lookup_forward(const CudaContext& ctx, const LookupShape& shape, const T* ids, const T* table, T* out) {
  const std::int64_t n = shape.bags * shape.width;
  if (n == 0) return;
  lookup_forward_kernel<<<grid_for(n), kBlock, 0, ctx.stream()>>>(shape, ids, table, out);
  check_launch("lookup_forward_kernel");
}

template <class T>
void lookup_backward(const CudaContext& ctx, const LookupShape& shape, const T* ids, const T* dout, T* dtable) {
  const std::int64_t table_size = shape.rows * shape.width;
  if (table_size == 0) return;
  check_cuda(cudaMemsetAsync(dtable, 0, static_cast<std::size_t>(table_size) * sizeof(T), ctx.stream()), "cudaMemsetAsync");
  const std::int64_t n = shape.bags * shape.per_bag * shape.width;
  if (n == 0) return;
  lookup_backward_kernel<<<grid_for(n), kBlock, 0, ctx.stream()>>>(shape, ids, dout, dtable);
  check_launch("lookup_backward_kernel");
}

template void lookup_forward<float>(const CudaContext&, const LookupShape&, const float*, const float*, float*);
template void lookup_forward<double>(const CudaContext&, const LookupShape&, const double*, const double*, double*);
template void lookup_backward<float>(const CudaContext&, const LookupShape&, const float*, const float*, float*);
template void lookup_backward<double>(const CudaContext&, const LookupShape&, const double*, const double*, double*);

}  // namespace loom::runtime::cuda
