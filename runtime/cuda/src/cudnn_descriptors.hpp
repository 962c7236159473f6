#pragma once
// Owned cuDNN descriptors (NCHW, packed) and the cuDNN data type of float and double.
#include <cudnn.h>

#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include "library_status.hpp"

namespace loom::runtime::cuda {

template <class T>
constexpr cudnnDataType_t cudnn_type() {
  return std::is_same_v<T, float> ? CUDNN_DATA_FLOAT : CUDNN_DATA_DOUBLE;
}

inline int cudnn_int(std::int64_t v, const char* what) {
  if (v < 0 || v > std::numeric_limits<int>::max())
    throw CudaError(std::string("cuDNN: ") + what + " = " + std::to_string(v) + " is out of cuDNN's int range");
  return static_cast<int>(v);
}

class TensorDescriptor {
 public:
  TensorDescriptor(cudnnDataType_t type, std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w) {
    check_cudnn(cudnnCreateTensorDescriptor(&handle_), "cudnnCreateTensorDescriptor");
    try {
      check_cudnn(cudnnSetTensor4dDescriptor(handle_, CUDNN_TENSOR_NCHW, type, cudnn_int(n, "n"), cudnn_int(c, "c"), cudnn_int(h, "h"),
                                             cudnn_int(w, "w")),
                  "cudnnSetTensor4dDescriptor");
    } catch (...) {
      cudnnDestroyTensorDescriptor(handle_);
      throw;
    }
  }
  ~TensorDescriptor() { cudnnDestroyTensorDescriptor(handle_); }
  TensorDescriptor(const TensorDescriptor&) = delete;
  TensorDescriptor& operator=(const TensorDescriptor&) = delete;
  cudnnTensorDescriptor_t get() const { return handle_; }

 private:
  cudnnTensorDescriptor_t handle_ = nullptr;
};

// alpha = 1 and beta = 0 as cuDNN wants them: float for float data, double for double.
template <class T>
struct Scaling {
  T one = 1;
  T zero = 0;
};

}  // namespace loom::runtime::cuda
