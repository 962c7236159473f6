#include "launch.cuh"
#include "library_status.hpp"
#include "loom/runtime/cuda/element_runs.hpp"

namespace loom::runtime::cuda {
namespace {

// A block per run (the grid strides over the runs), its threads over the run's elements.
template <class T>
__global__ void add_runs_kernel(const std::int64_t* runs, std::int64_t count, const T* from, T* into) {
  for (std::int64_t r = blockIdx.x; r < count; r += gridDim.x) {
    const std::int64_t source = runs[3 * r], target = runs[3 * r + 1], length = runs[3 * r + 2];
    for (std::int64_t k = threadIdx.x; k < length; k += blockDim.x) into[target + k] += from[source + k];
  }
}

}  // namespace

template <class T>
void add_runs(const CudaContext& ctx, const std::int64_t* runs, std::int64_t count, const T* from, T* into) {
  if (count == 0) return;
  const auto blocks = static_cast<unsigned>(count < 65535 ? count : 65535);
  add_runs_kernel<<<blocks, kBlock, 0, ctx.stream()>>>(runs, count, from, into);
  check_launch("add_runs_kernel");
}

template void add_runs<float>(const CudaContext&, const std::int64_t*, std::int64_t, const float*, float*);
template void add_runs<double>(const CudaContext&, const std::int64_t*, std::int64_t, const double*, double*);

}  // namespace loom::runtime::cuda
