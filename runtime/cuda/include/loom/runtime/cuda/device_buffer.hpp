#pragma once
// An owned array of T in device memory, allocated and freed in the order of a context's stream
// (cudaMallocAsync / cudaFreeAsync): a buffer may go out of scope while kernels queued before its
// release still read it. Copies to and from the host run on the same stream.
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "loom/runtime/cuda/cuda_context.hpp"

namespace loom::runtime::cuda {

template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const CudaContext& ctx, std::size_t size) : stream_(ctx.stream()), size_(size) {
    if (size_ > 0) check_cuda(cudaMallocAsync(reinterpret_cast<void**>(&data_), size_ * sizeof(T), stream_), "cudaMallocAsync");
  }
  // A copy of `host`.
  DeviceBuffer(const CudaContext& ctx, const std::vector<T>& host) : DeviceBuffer(ctx, host.size()) { upload(host); }
  ~DeviceBuffer() {
    if (data_) cudaFreeAsync(data_, stream_);
  }
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : stream_(other.stream_), data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    std::swap(stream_, other.stream_);
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  T* data() { return data_; }
  const T* data() const { return data_; }
  std::size_t size() const { return size_; }

  void upload(const std::vector<T>& host) { upload(host.data(), host.size()); }
  void upload(const T* host, std::size_t count) {
    if (count != size_)
      throw CudaError("DeviceBuffer::upload: the host array has " + std::to_string(count) + " elements, the buffer " +
                      std::to_string(size_));
    if (size_ > 0) check_cuda(cudaMemcpyAsync(data_, host, size_ * sizeof(T), cudaMemcpyHostToDevice, stream_), "cudaMemcpyAsync");
  }
  // Copies the buffer into `host` (resized) and waits for the copy and everything queued before it.
  void download(std::vector<T>& host) const {
    host.resize(size_);
    download(host.data(), host.size());
  }
  // The same into `count` elements at `host`, which must be the buffer's size.
  void download(T* host, std::size_t count) const {
    if (count != size_)
      throw CudaError("DeviceBuffer::download: the host array has " + std::to_string(count) + " elements, the buffer " +
                      std::to_string(size_));
    if (size_ > 0) check_cuda(cudaMemcpyAsync(host, data_, size_ * sizeof(T), cudaMemcpyDeviceToHost, stream_), "cudaMemcpyAsync");
    check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  }
  std::vector<T> download() const {
    std::vector<T> host;
    download(host);
    return host;
  }

 private:
  cudaStream_t stream_ = nullptr;
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace loom::runtime::cuda
