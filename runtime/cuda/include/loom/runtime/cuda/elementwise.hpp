#pragma once
// Elementwise operators, broadcasts and reductions on device pointers: Loom's own CUDA kernels, in
// float and double, queued on the context's stream.
#include <cstdint>

#include "loom/runtime/cuda/cuda_context.hpp"

namespace loom::runtime::cuda {

enum class Unary { Relu, Sigmoid, Tanh, Gelu, Exp, Sqrt, Erf, Identity };

// y = f(x), and dx = dy f'(x) (from x or y = f(x), whichever the derivative needs).
template <class T>
void unary_forward(const CudaContext& ctx, Unary f, std::int64_t n, const T* x, T* y);
template <class T>
void unary_backward(const CudaContext& ctx, Unary f, std::int64_t n, const T* x, const T* y, const T* dy, T* dx);

// The activations fused into convolutions, numbered as their `act` attribute.
enum class Activation { None = 0, Relu = 1, Sigmoid = 2, Tanh = 3 };

// y = act(y) in place, and dz = dy act'(z) computed from the activation's output y alone (relu:
// y > 0).
template <class T>
void activation_forward(const CudaContext& ctx, Activation act, std::int64_t n, T* y);
template <class T>
void activation_backward(const CudaContext& ctx, Activation act, std::int64_t n, const T* y, const T* dy, T* dz);

enum class Arith { Add, Sub, Mul, Div };

// y = a op b, and the gradients of a and b given dy (either may be null when not wanted).
template <class T>
void binary_forward(const CudaContext& ctx, Arith op, std::int64_t n, const T* a, const T* b, T* y);
template <class T>
void binary_backward(const CudaContext& ctx, Arith op, std::int64_t n, const T* a, const T* b, const T* dy, T* da, T* db);

// y = x op s with s one device value, op Add or Mul; dx = dy (Add) or dy s (Mul). The gradient of
// s is a reduction: sum_all of dy (Add) or of dy x (Mul).
template <class T>
void scalar_forward(const CudaContext& ctx, Arith op, std::int64_t n, const T* x, const T* s, T* y);
template <class T>
void scalar_backward(const CudaContext& ctx, Arith op, std::int64_t n, const T* s, const T* dy, T* dx);

// y[i, j] = x[i, j] + bias[j] over rows x n.
template <class T>
void bias_add_forward(const CudaContext& ctx, std::int64_t rows, std::int64_t n, const T* x, const T* bias, T* y);

// out[j] = sum over i of a[i, j] (times b[i, j] when b is not null), over rows x n.
template <class T>
void column_sums(const CudaContext& ctx, std::int64_t rows, std::int64_t n, const T* a, const T* b, T* out);

// out[0] = sum of a[i] (times b[i] when b is not null).
template <class T>
void sum_all(const CudaContext& ctx, std::int64_t n, const T* a, const T* b, T* out);

}  // namespace loom::runtime::cuda
