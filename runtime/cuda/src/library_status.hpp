#pragma once
// cuBLAS and cuDNN status codes as CudaErrors naming the call.
#include <cublas_v2.h>
#include <cudnn.h>

#include <string>

#include "loom/runtime/cuda/cuda_context.hpp"

namespace loom::runtime::cuda {

inline void check_cublas(cublasStatus_t status, const char* call) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  throw CudaError(std::string(call) + " failed: " + cublasGetStatusName(status) + ": " + cublasGetStatusString(status));
}

inline void check_cudnn(cudnnStatus_t status, const char* call) {
  if (status == CUDNN_STATUS_SUCCESS) return;
  throw CudaError(std::string(call) + " failed: " + cudnnGetErrorString(status));
}

// Kernels launched by this library: a failed launch is reported with the kernel's name.
inline void check_launch(const char* kernel) { check_cuda(cudaGetLastError(), kernel); }

}  // namespace loom::runtime::cuda
