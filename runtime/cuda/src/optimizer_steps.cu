#include "grid_stride.cuh"
#include "launch.cuh"
#include "library_status.hpp"
#include "loom/runtime/cuda/optimizer_steps.hpp"

namespace loom::runtime::cuda {
namespace {

template <class T>
__global__ void sgd_kernel(std::int64_t n, T learning_rate, const T* g, T* w) {
  LOOM_GRID_STRIDE_LOOP(i, n) w[i] -= learning_rate * g[i];
}

template <class T>
__global__ void adam_kernel(std::int64_t n, T learning_rate, T beta1, T beta2, T epsilon, T correction1, T correction2, const T* g, T* m,
                            T* v, T* w) {
  LOOM_GRID_STRIDE_LOOP(i, n) {
    m[i] = beta1 * m[i] + (T(1) - beta1) * g[i];
    v[i] = beta2 * v[i] + (T(1) - beta2) * g[i] * g[i];
    w[i] -= learning_rate * (m[i] / correction1) / (sqrt(v[i] / correction2) + epsilon);
  }
}

}  // namespace

template <class T>
void sgd_step(const CudaContext& ctx, std::int64_t n, T learning_rate, const T* g, T* w) {
  if (n == 0) return;
  sgd_kernel<<<grid_for(n), kBlock, 0, ctx.stream()>>>(n, learning_rate, g, w);
  check_launch("sgd_kernel");
}

template <class T>
void adam_step(const CudaContext& ctx, std::int64_t n, T learning_rate, T beta1, T beta2, T epsilon, T correction1, T correction2,
               const T* g, T* m, T* v, T* w) {
  if (n == 0) return;
  adam_kernel<<<grid_for(n), kBlock, 0, ctx.stream()>>>(n, learning_rate, beta1, beta2, epsilon, correction1, correction2, g, m, v, w);
  check_launch("adam_kernel");
}

#define LOOM_INSTANTIATE(T)                                                     \
  template void sgd_step<T>(const CudaContext&, std::int64_t, T, const T*, T*); \
  template void adam_step<T>(const CudaContext&, std::int64_t, T, T, T, T, T, T, const T*, T*, T*, T*);
LOOM_INSTANTIATE(float)
LOOM_INSTANTIATE(double)

}  // namespace loom::runtime::cuda
