#include "loom/runtime/cuda/convolution.hpp"

#include <cstddef>
#include <string>

#include "cudnn_descriptors.hpp"
#include "loom/runtime/cuda/device_buffer.hpp"

namespace loom::runtime::cuda {
namespace {

class FilterDescriptor {
 public:
  FilterDescriptor(cudnnDataType_t type, std::int64_t k, std::int64_t c, std::int64_t h, std::int64_t w) {
    check_cudnn(cudnnCreateFilterDescriptor(&handle_), "cudnnCreateFilterDescriptor");
    try {
      check_cudnn(cudnnSetFilter4dDescriptor(handle_, type, CUDNN_TENSOR_NCHW, cudnn_int(k, "filters"), cudnn_int(c, "filter channels"),
                                             cudnn_int(h, "kh"), cudnn_int(w, "kw")),
                  "cudnnSetFilter4dDescriptor");
    } catch (...) {
      cudnnDestroyFilterDescriptor(handle_);
      throw;
    }
  }
  ~FilterDescriptor() { cudnnDestroyFilterDescriptor(handle_); }
  FilterDescriptor(const FilterDescriptor&) = delete;
  FilterDescriptor& operator=(const FilterDescriptor&) = delete;
  cudnnFilterDescriptor_t get() const { return handle_; }

 private:
  cudnnFilterDescriptor_t handle_ = nullptr;
};

class ConvolutionDescriptor {
 public:
  ConvolutionDescriptor(cudnnDataType_t type, const ConvShape& s) {
    check_cudnn(cudnnCreateConvolutionDescriptor(&handle_), "cudnnCreateConvolutionDescriptor");
    try {
      check_cudnn(cudnnSetConvolution2dDescriptor(handle_, cudnn_int(s.pad_h, "pad_h"), cudnn_int(s.pad_w, "pad_w"),
                                                  cudnn_int(s.stride_h, "stride_h"), cudnn_int(s.stride_w, "stride_w"), 1, 1,
                                                  CUDNN_CROSS_CORRELATION, type),
                  "cudnnSetConvolution2dDescriptor");
      check_cudnn(cudnnSetConvolutionGroupCount(handle_, cudnn_int(s.groups, "groups")), "cudnnSetConvolutionGroupCount");
      // Plain FMA arithmetic: tensor-op (TF32) algorithms would break agreement with the CPU.
      check_cudnn(cudnnSetConvolutionMathType(handle_, CUDNN_FMA_MATH), "cudnnSetConvolutionMathType");
    } catch (...) {
      cudnnDestroyConvolutionDescriptor(handle_);
      throw;
    }
  }
  ~ConvolutionDescriptor() { cudnnDestroyConvolutionDescriptor(handle_); }
  ConvolutionDescriptor(const ConvolutionDescriptor&) = delete;
  ConvolutionDescriptor& operator=(const ConvolutionDescriptor&) = delete;
  cudnnConvolutionDescriptor_t get() const { return handle_; }

 private:
  cudnnConvolutionDescriptor_t handle_ = nullptr;
};

// The descriptors of one convolution: input, weight, output and the convolution itself.
template <class T>
struct ConvDescriptors {
  explicit ConvDescriptors(const ConvShape& s)
      : x(cudnn_type<T>(), s.batch, s.channels, s.height, s.width),
        y(cudnn_type<T>(), s.batch, s.filters, s.out_h(), s.out_w()),
        w(cudnn_type<T>(), s.filters, s.channels / s.groups, s.kh, s.kw),
        conv(cudnn_type<T>(), s) {}
  TensorDescriptor x, y;
  FilterDescriptor w;
  ConvolutionDescriptor conv;
};

// Tries cuDNN's heuristically ranked algorithms, best first, skipping tensor-op ones, until
// `attempt(algo)` (workspace query and run) is not refused as unsupported.
template <class Perf, class Attempt>
void run_first_supported(const Perf* perf, int count, const char* call, Attempt attempt) {
  cudnnStatus_t status = CUDNN_STATUS_NOT_SUPPORTED;
  for (int i = 0; i < count && status == CUDNN_STATUS_NOT_SUPPORTED; ++i)
    if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].mathType != CUDNN_TENSOR_OP_MATH &&
        perf[i].mathType != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION)
      status = attempt(perf[i].algo);
  check_cudnn(status, call);
}

class PoolingDescriptor {
 public:
  PoolingDescriptor(Pooling mode, const PoolShape& s) {
    check_cudnn(cudnnCreatePoolingDescriptor(&handle_), "cudnnCreatePoolingDescriptor");
    try {
      check_cudnn(cudnnSetPooling2dDescriptor(
                      handle_, mode == Pooling::Max ? CUDNN_POOLING_MAX_DETERMINISTIC : CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING,
                      CUDNN_PROPAGATE_NAN, cudnn_int(s.kh, "kh"), cudnn_int(s.kw, "kw"), cudnn_int(s.pad_h, "pad"),
                      cudnn_int(s.pad_w, "pad"), cudnn_int(s.stride_h, "stride"), cudnn_int(s.stride_w, "stride")),
                  "cudnnSetPooling2dDescriptor");
    } catch (...) {
      cudnnDestroyPoolingDescriptor(handle_);
      throw;
    }
  }
  ~PoolingDescriptor() { cudnnDestroyPoolingDescriptor(handle_); }
  PoolingDescriptor(const PoolingDescriptor&) = delete;
  PoolingDescriptor& operator=(const PoolingDescriptor&) = delete;
  cudnnPoolingDescriptor_t get() const { return handle_; }

 private:
  cudnnPoolingDescriptor_t handle_ = nullptr;
};

}  // namespace

template <class T>
void conv2d_forward(const CudaContext& ctx, const ConvShape& shape, const T* x, const T* w, T* y) {
  const ConvDescriptors<T> d(shape);
  cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  int count = 0;
  check_cudnn(cudnnGetConvolutionForwardAlgorithm_v7(ctx.cudnn(), d.x.get(), d.w.get(), d.conv.get(), d.y.get(),
                                                     CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &count, perf),
              "cudnnGetConvolutionForwardAlgorithm_v7");
  const Scaling<T> s;
  run_first_supported(perf, count, "cudnnConvolutionForward", [&](cudnnConvolutionFwdAlgo_t algo) {
    std::size_t bytes = 0;
    const cudnnStatus_t sized =
        cudnnGetConvolutionForwardWorkspaceSize(ctx.cudnn(), d.x.get(), d.w.get(), d.conv.get(), d.y.get(), algo, &bytes);
    if (sized != CUDNN_STATUS_SUCCESS) return sized;
    DeviceBuffer<std::byte> space(ctx, bytes);
    return cudnnConvolutionForward(ctx.cudnn(), &s.one, d.x.get(), x, d.w.get(), w, d.conv.get(), algo, space.data(), bytes, &s.zero,
                                   d.y.get(), y);
  });
}

template <class T>
void conv2d_backward_data(const CudaContext& ctx, const ConvShape& shape, const T* w, const T* dy, T* dx) {
  const ConvDescriptors<T> d(shape);
  cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
  int count = 0;
  check_cudnn(cudnnGetConvolutionBackwardDataAlgorithm_v7(ctx.cudnn(), d.w.get(), d.y.get(), d.conv.get(), d.x.get(),
                                                          CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &count, perf),
              "cudnnGetConvolutionBackwardDataAlgorithm_v7");
  const Scaling<T> s;
  run_first_supported(perf, count, "cudnnConvolutionBackwardData", [&](cudnnConvolutionBwdDataAlgo_t algo) {
    std::size_t bytes = 0;
    const cudnnStatus_t sized =
        cudnnGetConvolutionBackwardDataWorkspaceSize(ctx.cudnn(), d.w.get(), d.y.get(), d.conv.get(), d.x.get(), algo, &bytes);
    if (sized != CUDNN_STATUS_SUCCESS) return sized;
    DeviceBuffer<std::byte> space(ctx, bytes);
    return cudnnConvolutionBackwardData(ctx.cudnn(), &s.one, d.w.get(), w, d.y.get(), dy, d.conv.get(), algo, space.data(), bytes, &s.zero,
                                        d.x.get(), dx);
  });
}

template <class T>
void conv2d_backward_filter(const CudaContext& ctx, const ConvShape& shape, const T* x, const T* dy, T* dw) {
  const ConvDescriptors<T> d(shape);
  cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
  int count = 0;
  check_cudnn(cudnnGetConvolutionBackwardFilterAlgorithm_v7(ctx.cudnn(), d.x.get(), d.y.get(), d.conv.get(), d.w.get(),
                                                            CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &count, perf),
              "cudnnGetConvolutionBackwardFilterAlgorithm_v7");
  const Scaling<T> s;
  run_first_supported(perf, count, "cudnnConvolutionBackwardFilter", [&](cudnnConvolutionBwdFilterAlgo_t algo) {
    std::size_t bytes = 0;
    const cudnnStatus_t sized =
        cudnnGetConvolutionBackwardFilterWorkspaceSize(ctx.cudnn(), d.x.get(), d.y.get(), d.conv.get(), d.w.get(), algo, &bytes);
    if (sized != CUDNN_STATUS_SUCCESS) return sized;
    DeviceBuffer<std::byte> space(ctx, bytes);
    return cudnnConvolutionBackwardFilter(ctx.cudnn(), &s.one, d.x.get(), x, d.y.get(), dy, d.conv.get(), algo, space.data(), bytes,
                                          &s.zero, d.w.get(), dw);
  });
}

template <class T>
void pool2d_forward(const CudaContext& ctx, Pooling mode, const PoolShape& shape, const T* x, T* y) {
  const PoolingDescriptor pool(mode, shape);
  const TensorDescriptor in(cudnn_type<T>(), shape.batch, shape.channels, shape.height, shape.width);
  const TensorDescriptor out(cudnn_type<T>(), shape.batch, shape.channels, shape.out_h(), shape.out_w());
  const Scaling<T> s;
  check_cudnn(cudnnPoolingForward(ctx.cudnn(), pool.get(), &s.one, in.get(), x, &s.zero, out.get(), y), "cudnnPoolingForward");
}

template <class T>
void pool2d_backward(const CudaContext& ctx, Pooling mode, const PoolShape& shape, const T* x, const T* y, const T* dy, T* dx) {
  const PoolingDescriptor pool(mode, shape);
  const TensorDescriptor in(cudnn_type<T>(), shape.batch, shape.channels, shape.height, shape.width);
  const TensorDescriptor out(cudnn_type<T>(), shape.batch, shape.channels, shape.out_h(), shape.out_w());
  const Scaling<T> s;
  check_cudnn(cudnnPoolingBackward(ctx.cudnn(), pool.get(), &s.one, out.get(), y, out.get(), dy, in.get(), x, &s.zero, in.get(), dx),
              "cudnnPoolingBackward");
}

#define LOOM_INSTANTIATE(T)                                                                              \
  template void conv2d_forward<T>(const CudaContext&, const ConvShape&, const T*, const T*, T*);         \
  template void conv2d_backward_data<T>(const CudaContext&, const ConvShape&, const T*, const T*, T*);   \
  template void conv2d_backward_filter<T>(const CudaContext&, const ConvShape&, const T*, const T*, T*); \
  template void pool2d_forward<T>(const CudaContext&, Pooling, const PoolShape&, const T*, T*);          \
  template void pool2d_backward<T>(const CudaContext&, Pooling, const PoolShape&, const T*, const T*, const T*, T*);
LOOM_INSTANTIATE(float)
LOOM_INSTANTIATE(double)

}  // namespace loom::runtime::cuda
