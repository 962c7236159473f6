#pragma once
// Softmax and layer normalization over the last axis of rows x n values, and inference batch
// normalization of NCHW values with given statistics (every input differentiable), epsilon 1e-5.
#include <cstdint>

#include "loom/runtime/cuda/cuda_context.hpp"

namespace loom::runtime::cuda {

// Through cuDNN (accurate softmax per row); the backward reads the forward's output y.
template <class T>
void softmax_forward(const CudaContext& ctx, std::int64_t rows, std::int64_t n, const T* x, T* y);
template <class T>
void softmax_backward(const CudaContext& ctx, std::int64_t rows, std::int64_t n, const T* y, const T* dy, T* dx);

// y = (x - mean) / sqrt(var + eps) * gamma + beta per row.
template <class T>
void layer_norm_forward(const CudaContext& ctx, std::int64_t rows, std::int64_t n, const T* x, const T* gamma, const T* beta, T* y);
// dx, dgamma and dbeta (each of them may be null when not wanted).
template <class T>
void layer_norm_backward(const CudaContext& ctx, std::int64_t rows, std::int64_t n, const T* x, const T* gamma, const T* dy, T* dx,
                         T* dgamma, T* dbeta);

struct BatchNormShape {
  std::int64_t batch, channels, plane;  // plane = height * width
};

// y = (x - mean[c]) scale[c] / sqrt(var[c] + eps) + bias[c], through cuDNN.
template <class T>
void batchnorm_forward(const CudaContext& ctx, const BatchNormShape& shape, const T* x, const T* scale, const T* bias, const T* mean,
                       const T* var, T* y);
// Gradients of x and of the four per-channel inputs, all written.
template <class T>
void batchnorm_backward(const CudaContext& ctx, const BatchNormShape& shape, const T* x, const T* scale, const T* mean, const T* var,
                        const T* dy, T* dx, T* dscale, T* dbias, T* dmean, T* dvar);

}  // namespace loom::runtime::cuda
