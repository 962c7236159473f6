#include "loom/runtime/cuda/elementwise.hpp"

#include "grid_stride.cuh"
#include "launch.cuh"
#include "library_status.hpp"

namespace loom::runtime::cuda {
namespace {

template <class T>
__device__ T apply(Unary f, T x) {
  switch (f) {
    case Unary::Relu: return x < T(0) ? T(0) : x;
    case Unary::Sigmoid: return T(1) / (T(1) + exp(-x));
    case Unary::Tanh: return tanh(x);
    case Unary::Gelu: return T(0.5) * x * (T(1) + erf(x * T(0.70710678118654752440)));
    case Unary::Exp: return exp(x);
    case Unary::Sqrt: return sqrt(x);
    case Unary::Erf: return erf(x);
    case Unary::Identity: break;
  }
  return x;
}

template <class T>
__device__ T derivative(Unary f, T x, T y) {
  switch (f) {
    case Unary::Relu: return x < T(0) ? T(0) : T(1);
    case Unary::Sigmoid: return y * (T(1) - y);
    case Unary::Tanh: return T(1) - y * y;
    case Unary::Gelu:
      // 0.5 (1 + erf(x / sqrt 2)) + x exp(-x^2 / 2) / sqrt(2 pi)
      return T(0.5) * (T(1) + erf(x * T(0.70710678118654752440))) + x * exp(T(-0.5) * x * x) * T(0.39894228040143267794);
    case Unary::Exp: return y;
    case Unary::Sqrt: return T(0.5) / y;
    case Unary::Erf: return T(1.12837916709551257390) * exp(-x * x);  // 2 / sqrt(pi)
    case Unary::Identity: break;
  }
  return T(1);
}

template <class T>
__global__ void unary_forward_kernel(Unary f, std::int64_t n, const T* x, T* y) {
  LOOM_GRID_STRIDE_LOOP(i, n) y[i] = apply(f, x[i]);
}

template <class T>
__global__ void unary_backward_kernel(Unary f, std::int64_t n, const T* x, const T* y, const T* dy, T* dx) {
  LOOM_GRID_STRIDE_LOOP(i, n) dx[i] = dy[i] * derivative(f, x[i], y[i]);
}

template <class T>
__device__ T activate(Activation act, T z) {
  switch (act) {
    case Activation::None: break;
    case Activation::Relu: return z > T(0) ? z : T(0);
    case Activation::Sigmoid: return T(1) / (T(1) + exp(-z));
    case Activation::Tanh: return tanh(z);
  }
  return z;
}

template <class T>
__device__ T activation_derivative(Activation act, T y) {
  switch (act) {
    case Activation::None: break;
    case Activation::Relu: return y > T(0) ? T(1) : T(0);
    case Activation::Sigmoid: return y * (T(1) - y);
    case Activation::Tanh: return T(1) - y * y;
  }
  return T(1);
}

template <class T>
__global__ void activation_forward_kernel(Activation act, std::int64_t n, T* y) {
  LOOM_GRID_STRIDE_LOOP(i, n) y[i] = activate(act, y[i]);
}

template <class T>
__global__ void activation_backward_kernel(Activation act, std::int64_t n, const T* y, const T* dy, T* dz) {
  LOOM_GRID_STRIDE_LOOP(i, n) dz[i] = dy[i] * activation_derivative(act, y[i]);
}

template <class T>
__device__ T combine(Arith op, T a, T b) {
  switch (op) {
    case Arith::Add: return a + b;
    case Arith::Sub: return a - b;
    case Arith::Mul: return a * b;
    case Arith::Div: return a / b;
  }
  return a;
}

template <class T>
__global__ void binary_forward_kernel(Arith op, std::int64_t n, const T* a, const T* b, T* y) {
  LOOM_GRID_STRIDE_LOOP(i, n) y[i] = combine(op, a[i], b[i]);
}

template <class T>
__global__ void binary_backward_kernel(Arith op, std::int64_t n, const T* a, const T* b, const T* dy, T* da, T* db) {
  LOOM_GRID_STRIDE_LOOP(i, n) {
    const T g = dy[i];
    switch (op) {
      case Arith::Add:
        if (da) da[i] = g;
        if (db) db[i] = g;
        break;
      case Arith::Sub:
        if (da) da[i] = g;
        if (db) db[i] = -g;
        break;
      case Arith::Mul:
        if (da) da[i] = g * b[i];
        if (db) db[i] = g * a[i];
        break;
      case Arith::Div:
        if (da) da[i] = g / b[i];
        if (db) db[i] = -g * a[i] / (b[i] * b[i]);
        break;
    }
  }
}

template <class T>
__global__ void scalar_forward_kernel(Arith op, std::int64_t n, const T* x, const T* s, T* y) {
  const T v = *s;
  LOOM_GRID_STRIDE_LOOP(i, n) y[i] = combine(op, x[i], v);
}

template <class T>
__global__ void scalar_backward_kernel(Arith op, std::int64_t n, const T* s, const T* dy, T* dx) {
  const T v = op == Arith::Mul ? *s : T(1);
  LOOM_GRID_STRIDE_LOOP(i, n) dx[i] = dy[i] * v;
}

template <class T>
__global__ void bias_add_kernel(std::int64_t rows, std::int64_t n, const T* x, const T* bias, T* y) {
  LOOM_GRID_STRIDE_LOOP(i, rows * n) y[i] = x[i] + bias[i % n];
}

// One thread per column, summing down the rows in order: deterministic, and coalesced across the
// threads of a warp.
template <class T>
__global__ void column_sums_kernel(std::int64_t rows, std::int64_t n, const T* a, const T* b, T* out) {
  LOOM_GRID_STRIDE_LOOP(j, n) {
    T total = 0;
    for (std::int64_t i = 0; i < rows; ++i) total += b ? a[i * n + j] * b[i * n + j] : a[i * n + j];
    out[j] = total;
  }
}

// One block; each thread sums a strided slice, then the block adds the slices.
template <class T>
__global__ void sum_all_kernel(std::int64_t n, const T* a, const T* b, T* out) {
  T total = 0;
  for (std::int64_t i = threadIdx.x; i < n; i += kBlock) total += b ? a[i] * b[i] : a[i];
  total = block_sum(total);
  if (threadIdx.x == 0) *out = total;
}

}  // namespace

template <class T>
void unary_forward(const CudaContext& ctx, Unary f, std::int64_t n, const T* x, T* y) {
  if (n == 0) return;
  unary_forward_kernel<<<grid_for(n), kBlock, 0, ctx.stream()>>>(f, n, x, y);
  check_launch("unary_forward_kernel");
}

template <class T>
void unary_backward(const CudaContext& ctx, Unary f, std::int64_t n, const T* x, const T* y, const T* dy, T* dx) {
  if (n == 0) return;
  unary_backward_kernel<<<grid_for(n), kBlock, 0, ctx.stream()>>>(f, n, x, y, dy, dx);
  check_launch("unary_backward_kernel");
}

template <class T>
void activation_forward(const CudaContext& ctx, Activation act, std::int64_t n, T* y) {
  if (n == 0 || act == Activation::None) return;
  activation_forward_kernel<<<grid_for(n), kBlock, 0, ctx.stream()>>>(act, n, y);
  check_launch("activation_forward_kernel");
}

template <class T>
void activation_backward(const CudaContext& ctx, Activation act, std::int64_t n, const T* y, const T* dy, T* dz) {
  if (n == 0) return;
  activation_backward_kernel<<<grid_for(n), kBlock, 0, ctx.stream()>>>(act, n, y, dy, dz);
  check_launch("activation_backward_kernel");
}

template <class T>
void binary_forward(const CudaContext& ctx, Arith op, std::int64_t n, const T* a, const T* b, T* y) {
  if (n == 0) return;
  binary_forward_kernel<<<grid_for(n), kBlock, 0, ctx.stream()>>>(op, n, a, b, y);
  check_launch("binary_forward_kernel");
}

template <class T>
void binary_backward(const CudaContext& ctx, Arith op, std::int64_t n, const T* a, const T* b, const T* dy, T* da, T* db) {
  if (n == 0 || (!da && !db)) return;
  binary_backward_kernel<<<grid_for(n), kBlock, 0, ctx.stream()>>>(op, n, a, b, dy, da, db);
  check_launch("binary_backward_kernel");
}

template <class T>
void scalar_forward(const CudaContext& ctx, Arith op, std::int64_t n, const T* x, const T* s, T* y) {
  if (n == 0) return;
  scalar_forward_kernel<<<grid_for(n), kBlock, 0, ctx.stream()>>>(op, n, x, s, y);
  check_launch("scalar_forward_kernel");
}

template <class T>
void scalar_backward(const CudaContext& ctx, Arith op, std::int64_t n, const T* s, const T* dy, T* dx) {
  if (n == 0) return;
  scalar_backward_kernel<<<grid_for(n), kBlock, 0, ctx.stream()>>>(op, n, s, dy, dx);
  check_launch("scalar_backward_kernel");
}

template <class T>
void bias_add_forward(const CudaContext& ctx, std::int64_t rows, std::int64_t n, const T* x, const T* bias, T* y) {
  if (rows * n == 0) return;
  bias_add_kernel<<<grid_for(rows * n), kBlock, 0, ctx.stream()>>>(rows, n, x, bias, y);
  check_launch("bias_add_kernel");
}

template <class T>
void column_sums(const CudaContext& ctx, std::int64_t rows, std::int64_t n, const T* a, const T* b, T* out) {
  if (n == 0) return;
  column_sums_kernel<<<grid_for(n), kBlock, 0, ctx.stream()>>>(rows, n, a, b, out);
  check_launch("column_sums_kernel");
}

template <class T>
void sum_all(const CudaContext& ctx, std::int64_t n, const T* a, const T* b, T* out) {
  sum_all_kernel<<<1, kBlock, 0, ctx.stream()>>>(n, a, b, out);
  check_launch("sum_all_kernel");
}

#define LOOM_INSTANTIATE(T)                                                                                        \
  template void unary_forward<T>(const CudaContext&, Unary, std::int64_t, const T*, T*);                           \
  template void unary_backward<T>(const CudaContext&, Unary, std::int64_t, const T*, const T*, const T*, T*);      \
  template void activation_forward<T>(const CudaContext&, Activation, std::int64_t, T*);                           \
  template void activation_backward<T>(const CudaContext&, Activation, std::int64_t, const T*, const T*, T*);      \
  template void binary_forward<T>(const CudaContext&, Arith, std::int64_t, const T*, const T*, T*);                \
  template void binary_backward<T>(const CudaContext&, Arith, std::int64_t, const T*, const T*, const T*, T*, T*); \
  template void scalar_forward<T>(const CudaContext&, Arith, std::int64_t, const T*, const T*, T*);                \
  template void scalar_backward<T>(const CudaContext&, Arith, std::int64_t, const T*, const T*, T*);               \
  template void bias_add_forward<T>(const CudaContext&, std::int64_t, std::int64_t, const T*, const T*, T*);       \
  template void column_sums<T>(const CudaContext&, std::int64_t, std::int64_t, const T*, const T*, T*);            \
  template void sum_all<T>(const CudaContext&, std::int64_t, const T*, const T*, T*);
LOOM_INSTANTIATE(float)
LOOM_INSTANTIATE(double)

}  // namespace loom::runtime::cuda
