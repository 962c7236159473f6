#pragma once
// The optimizer's updates of n elements on device pointers, queued on the context's stream; the
// same rules as runtime::sgd_update and runtime::adam_update on the host.
#include <cstdint>

#include "loom/runtime/cuda/cuda_context.hpp"

namespace loom::runtime::cuda {

// w -= learning_rate * g.
template <class T>
void sgd_step(const CudaContext& ctx, std::int64_t n, T learning_rate, const T* g, T* w);

// m = beta1 m + (1 - beta1) g; v = beta2 v + (1 - beta2) g^2;
// w -= learning_rate (m / correction1) / (sqrt(v / correction2) + epsilon).
template <class T>
void adam_step(const CudaContext& ctx, std::int64_t n, T learning_rate, T beta1, T beta2, T epsilon, T correction1, T correction2,
               const T* g, T* m, T* v, T* w);

}  // namespace loom::runtime::cuda
