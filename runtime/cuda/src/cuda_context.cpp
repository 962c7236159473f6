#include "loom/runtime/cuda/cuda_context.hpp"

#include <cublas_v2.h>
#include <cudnn.h>

#include "library_status.hpp"

namespace loom::runtime::cuda {

void check_cuda(cudaError_t status, const char* call) {
  if (status == cudaSuccess) return;
  throw CudaError(std::string(call) + " failed: " + cudaGetErrorName(status) + ": " + cudaGetErrorString(status));
}

CudaContext::CudaContext(int device) : device_(device) {
  check_cuda(cudaSetDevice(device), "cudaSetDevice");
  check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  try {
    check_cublas(cublasCreate(&cublas_), "cublasCreate");
    check_cublas(cublasSetStream(cublas_, stream_), "cublasSetStream");
    // The default math mode keeps float GEMMs in FP32 (no TF32), as agreement with the CPU needs.
    check_cublas(cublasSetMathMode(cublas_, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
    check_cudnn(cudnnCreate(&cudnn_), "cudnnCreate");
    check_cudnn(cudnnSetStream(cudnn_, stream_), "cudnnSetStream");
  } catch (...) {
    if (cublas_) cublasDestroy(cublas_);
    cudaStreamDestroy(stream_);
    throw;
  }
}

CudaContext::~CudaContext() {
  cudaSetDevice(device_);
  if (cudnn_) cudnnDestroy(cudnn_);
  if (cublas_) cublasDestroy(cublas_);
  if (stream_) cudaStreamDestroy(stream_);
}

void CudaContext::synchronize() const { check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"); }

}  // namespace loom::runtime::cuda
