#include "loom/runtime/cuda/normalization.hpp"

#include "cudnn_descriptors.hpp"
#include "launch.cuh"
#include "loom/runtime/cuda/device_buffer.hpp"
#include "loom/runtime/cuda/elementwise.hpp"

namespace loom::runtime::cuda {
namespace {

constexpr double kEpsilon = 1e-5;

// Mean and 1 / sqrt(variance + eps) of one row, computed by the whole block (two passes).
template <class T>
__device__ void row_moments(std::int64_t n, const T* row, T& mean, T& inv_std) {
  T total = 0;
  for (std::int64_t j = threadIdx.x; j < n; j += kBlock) total += row[j];
  mean = block_sum(total) / T(n);
  T squares = 0;
  for (std::int64_t j = threadIdx.x; j < n; j += kBlock) squares += (row[j] - mean) * (row[j] - mean);
  inv_std = T(1) / sqrt(block_sum(squares) / T(n) + T(kEpsilon));
}

// One block per row.
template <class T>
__global__ void layer_norm_forward_kernel(std::int64_t n, const T* x, const T* gamma, const T* beta, T* y) {
  const std::int64_t at = blockIdx.x * n;
  T mean, inv_std;
  row_moments(n, x + at, mean, inv_std);
  for (std::int64_t j = threadIdx.x; j < n; j += kBlock) y[at + j] = (x[at + j] - mean) * inv_std * gamma[j] + beta[j];
}

// One block per row: dx from dxhat = dy gamma, and the normalized row xhat for dgamma.
template <class T>
__global__ void layer_norm_backward_kernel(std::int64_t n, const T* x, const T* gamma, const T* dy, T* dx, T* xhat) {
  const std::int64_t at = blockIdx.x * n;
  T mean, inv_std;
  row_moments(n, x + at, mean, inv_std);
  T sum_dxhat = 0, sum_dxhat_xhat = 0;
  for (std::int64_t j = threadIdx.x; j < n; j += kBlock) {
    const T normalized = (x[at + j] - mean) * inv_std;
    const T d = dy[at + j] * gamma[j];
    xhat[at + j] = normalized;
    sum_dxhat += d;
    sum_dxhat_xhat += d * normalized;
  }
  const T mean_dxhat = block_sum(sum_dxhat) / T(n);
  const T mean_dxhat_xhat = block_sum(sum_dxhat_xhat) / T(n);
  if (!dx) return;
  for (std::int64_t j = threadIdx.x; j < n; j += kBlock)
    dx[at + j] = (dy[at + j] * gamma[j] - mean_dxhat - xhat[at + j] * mean_dxhat_xhat) * inv_std;
}

// One block per channel: sums over every sample's plane of that channel.
template <class T>
__global__ void batchnorm_backward_kernel(BatchNormShape s, const T* x, const T* scale, const T* mean, const T* var, const T* dy, T* dx,
                                          T* dscale, T* dbias, T* dmean, T* dvar) {
  const std::int64_t c = blockIdx.x;
  const T inv_std = T(1) / sqrt(var[c] + T(kEpsilon));
  const T a = scale[c] * inv_std, mu = mean[c];
  T sum_dy = 0, sum_dy_centered = 0;
  for (std::int64_t b = 0; b < s.batch; ++b) {
    const std::int64_t at = (b * s.channels + c) * s.plane;
    for (std::int64_t p = threadIdx.x; p < s.plane; p += kBlock) {
      const T g = dy[at + p];
      dx[at + p] = g * a;
      sum_dy += g;
      sum_dy_centered += g * (x[at + p] - mu);
    }
  }
  sum_dy = block_sum(sum_dy);
  sum_dy_centered = block_sum(sum_dy_centered);
  if (threadIdx.x != 0) return;
  dscale[c] = sum_dy_centered * inv_std;
  dbias[c] = sum_dy;
  dmean[c] = -sum_dy * a;
  dvar[c] = T(-0.5) * sum_dy_centered * a * inv_std * inv_std;
}

unsigned blocks(std::int64_t count, const char* what) { return static_cast<unsigned>(cudnn_int(count, what)); }

}  // namespace

template <class T>
void softmax_forward(const CudaContext& ctx, std::int64_t rows, std::int64_t n, const T* x, T* y) {
  if (rows * n == 0) return;
  const TensorDescriptor desc(cudnn_type<T>(), rows, n, 1, 1);
  const Scaling<T> s;
  check_cudnn(
      cudnnSoftmaxForward(ctx.cudnn(), CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_INSTANCE, &s.one, desc.get(), x, &s.zero, desc.get(), y),
      "cudnnSoftmaxForward");
}

template <class T>
void softmax_backward(const CudaContext& ctx, std::int64_t rows, std::int64_t n, const T* y, const T* dy, T* dx) {
  if (rows * n == 0) return;
  const TensorDescriptor desc(cudnn_type<T>(), rows, n, 1, 1);
  const Scaling<T> s;
  check_cudnn(cudnnSoftmaxBackward(ctx.cudnn(), CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_INSTANCE, &s.one, desc.get(), y, desc.get(), dy,
                                   &s.zero, desc.get(), dx),
              "cudnnSoftmaxBackward");
}

template <class T>
void layer_norm_forward(const CudaContext& ctx, std::int64_t rows, std::int64_t n, const T* x, const T* gamma, const T* beta, T* y) {
  if (rows * n == 0) return;
  layer_norm_forward_kernel<<<blocks(rows, "layer_norm rows"), kBlock, 0, ctx.stream()>>>(n, x, gamma, beta, y);
  check_launch("layer_norm_forward_kernel");
}

template <class T>
void layer_norm_backward(const CudaContext& ctx, std::int64_t rows, std::int64_t n, const T* x, const T* gamma, const T* dy, T* dx,
                         T* dgamma, T* dbeta) {
  if (rows * n == 0) return;
  DeviceBuffer<T> xhat(ctx, static_cast<std::size_t>(rows * n));
  layer_norm_backward_kernel<<<blocks(rows, "layer_norm rows"), kBlock, 0, ctx.stream()>>>(n, x, gamma, dy, dx, xhat.data());
  check_launch("layer_norm_backward_kernel");
  if (dgamma) column_sums(ctx, rows, n, dy, xhat.data(), dgamma);
  if (dbeta) column_sums<T>(ctx, rows, n, dy, nullptr, dbeta);
}

template <class T>
void batchnorm_forward(const CudaContext& ctx, const BatchNormShape& shape, const T* x, const T* scale, const T* bias, const T* mean,
                       const T* var, T* y) {
  if (shape.batch * shape.channels * shape.plane == 0) return;
  const TensorDescriptor data(cudnn_type<T>(), shape.batch, shape.channels, shape.plane, 1);
  const TensorDescriptor per_channel(cudnn_type<T>(), 1, shape.channels, 1, 1);
  const Scaling<T> s;
  check_cudnn(cudnnBatchNormalizationForwardInference(ctx.cudnn(), CUDNN_BATCHNORM_SPATIAL, &s.one, &s.zero, data.get(), x, data.get(), y,
                                                      per_channel.get(), scale, bias, mean, var, kEpsilon),
              "cudnnBatchNormalizationForwardInference");
}

template <class T>
void batchnorm_backward(const CudaContext& ctx, const BatchNormShape& shape, const T* x, const T* scale, const T* mean, const T* var,
                        const T* dy, T* dx, T* dscale, T* dbias, T* dmean, T* dvar) {
  if (shape.channels == 0) return;
  batchnorm_backward_kernel<<<blocks(shape.channels, "batchnorm channels"), kBlock, 0, ctx.stream()>>>(shape, x, scale, mean, var, dy, dx,
                                                                                                       dscale, dbias, dmean, dvar);
  check_launch("batchnorm_backward_kernel");
}

#define LOOM_INSTANTIATE(T)                                                                                                                \
  template void softmax_forward<T>(const CudaContext&, std::int64_t, std::int64_t, const T*, T*);                                          \
  template void softmax_backward<T>(const CudaContext&, std::int64_t, std::int64_t, const T*, const T*, T*);                               \
  template void layer_norm_forward<T>(const CudaContext&, std::int64_t, std::int64_t, const T*, const T*, const T*, T*);                   \
  template void layer_norm_backward<T>(const CudaContext&, std::int64_t, std::int64_t, const T*, const T*, const T*, T*, T*, T*);          \
  template void batchnorm_forward<T>(const CudaContext&, const BatchNormShape&, const T*, const T*, const T*, const T*, const T*, T*);     \
  template void batchnorm_backward<T>(const CudaContext&, const BatchNormShape&, const T*, const T*, const T*, const T*, const T*, T*, T*, \
                                      T*, T*, T*);
LOOM_INSTANTIATE(float)
LOOM_INSTANTIATE(double)

}  // namespace loom::runtime::cuda
