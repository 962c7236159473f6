#pragma once
// The CUDA core's handle on one device: the device, a stream and the cuBLAS and cuDNN handles
// bound to it. Every failing CUDA, cuBLAS or cuDNN call becomes a CudaError naming the call and
// the library's error string. This layer depends on the CUDA toolkit only.
#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

struct cublasContext;
struct cudnnContext;

namespace loom::runtime::cuda {

class CudaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws CudaError("<call> failed: <name>: <description>") unless `status` is cudaSuccess.
void check_cuda(cudaError_t status, const char* call);

class CudaContext {
 public:
  // Binds the given device (cudaSetDevice) and creates the stream and library handles on it.
  explicit CudaContext(int device);
  ~CudaContext();
  CudaContext(const CudaContext&) = delete;
  CudaContext& operator=(const CudaContext&) = delete;

  int device() const { return device_; }
  cudaStream_t stream() const { return stream_; }
  cublasContext* cublas() const { return cublas_; }
  cudnnContext* cudnn() const { return cudnn_; }
  // Waits for everything queued on the stream.
  void synchronize() const;

 private:
  int device_ = 0;
  cudaStream_t stream_ = nullptr;
  cublasContext* cublas_ = nullptr;
  cudnnContext* cudnn_ = nullptr;
};

}  // namespace loom::runtime::cuda
