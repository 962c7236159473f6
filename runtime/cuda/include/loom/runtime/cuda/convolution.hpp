#pragma once
// 2-D convolution (cross-correlation, NCHW, grouped when groups > 1) and pooling through cuDNN,
// in float and double. The fused activation of Loom's conv operators is applied separately
// (elementwise.hpp's activation_forward / activation_backward).
#include <cstdint>

#include "loom/runtime/cuda/cuda_context.hpp"

namespace loom::runtime::cuda {

struct ConvShape {
  std::int64_t batch, channels, height, width;  // input x
  std::int64_t filters, kh, kw;                 // weight [filters, channels / groups, kh, kw]
  std::int64_t groups, stride_h, stride_w, pad_h, pad_w;

  std::int64_t out_h() const { return (height + 2 * pad_h - kh) / stride_h + 1; }
  std::int64_t out_w() const { return (width + 2 * pad_w - kw) / stride_w + 1; }
};

template <class T>
void conv2d_forward(const CudaContext& ctx, const ConvShape& shape, const T* x, const T* w, T* y);
template <class T>
void conv2d_backward_data(const CudaContext& ctx, const ConvShape& shape, const T* w, const T* dy, T* dx);
template <class T>
void conv2d_backward_filter(const CudaContext& ctx, const ConvShape& shape, const T* x, const T* dy, T* dw);

// Max pooling never lets padding win; average pooling counts the padding (divides by kh kw).
enum class Pooling { Max, Average };

struct PoolShape {
  std::int64_t batch, channels, height, width;
  std::int64_t kh, kw, stride_h, stride_w, pad_h, pad_w;

  std::int64_t out_h() const { return (height + 2 * pad_h - kh) / stride_h + 1; }
  std::int64_t out_w() const { return (width + 2 * pad_w - kw) / stride_w + 1; }
};

template <class T>
void pool2d_forward(const CudaContext& ctx, Pooling mode, const PoolShape& shape, const T* x, T* y);
// dx from the forward's input x, output y and the output gradient dy.
template <class T>
void pool2d_backward(const CudaContext& ctx, Pooling mode, const PoolShape& shape, const T* x, const T* y, const T* dy, T* dx);

}  // namespace loom::runtime::cuda
