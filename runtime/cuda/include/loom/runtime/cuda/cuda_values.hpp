#pragma once
// Values the CUDA backend holds: device arrays of the current device's memory, where its kernels
// read and leave them (runtime/value.hpp).
#include <cstdint>
#include <vector>

#include "loom/runtime/cuda/device_buffer.hpp"
#include "loom/runtime/value.hpp"

namespace loom::runtime::cuda {

template <class T>
class CudaArray final : public DeviceArray<T> {
 public:
  CudaArray(const DeviceMemory<T>& memory, DeviceBuffer<T> buffer) : memory_(memory), buffer_(std::move(buffer)) {}
  std::size_t size() const override { return buffer_.size(); }
  void copy_to_host(T* host) const override { buffer_.download(host, buffer_.size()); }
  const DeviceMemory<T>& memory() const override { return memory_; }
  DeviceBuffer<T>& buffer() { return buffer_; }
  const DeviceBuffer<T>& buffer() const { return buffer_; }

 private:
  const DeviceMemory<T>& memory_;
  DeviceBuffer<T> buffer_;
};

// The memory of the calling thread's current device (made on first use, kept for the process).
template <class T>
const DeviceMemory<T>& device_memory();

// The device array holding `v`'s elements, copied to the current device first when only on the host.
template <class T>
const DeviceBuffer<T>& device_buffer(const Value<T>& v);

// A copy of `buffer` on its stream.
template <class T>
DeviceBuffer<T> copy_of(const DeviceBuffer<T>& buffer);

// A value of `dims` held in `buffer`.
template <class T>
Value<T> device_value(DeviceBuffer<T> buffer, std::vector<std::int64_t> dims);

}  // namespace loom::runtime::cuda
