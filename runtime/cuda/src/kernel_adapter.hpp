#pragma once
// What the Backend::Cuda kernel adapters share: the calling thread's device context, host-device
// copies of tensors, and shape helpers. Private to loom_runtime_cuda.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "loom/pcg/diagnostic.hpp"
#include "loom/runtime/cuda/device_buffer.hpp"
#include "loom/runtime/kernel_table.hpp"

namespace loom::runtime::cuda_adapter {

using cuda::CudaContext;
using cuda::DeviceBuffer;
template <class T>
using Tensors = std::vector<Tensor<T>>;

// The context of the calling thread's current device, made on first use.
const CudaContext& context();

template <class T>
DeviceBuffer<T> upload(const Tensor<T>& t) {
  return DeviceBuffer<T>(context(), t.data);
}

// An uninitialized device array of `size` elements.
template <class T>
DeviceBuffer<T> scratch(std::size_t size) {
  return DeviceBuffer<T>(context(), size);
}

template <class T>
Tensor<T> download(const DeviceBuffer<T>& buffer, std::vector<std::int64_t> dims) {
  Tensor<T> t;
  t.dims = std::move(dims);
  buffer.download(t.data);
  return t;
}

// The device array of the gradient of input i when it is wanted, else an empty one.
template <class T>
DeviceBuffer<T> gradient_buffer(const GradCall<T>& g, std::size_t i) {
  return g.wants(i) ? scratch<T>(g.input(i).size()) : DeviceBuffer<T>();
}

// The downloaded gradient of input i, or an empty tensor when it was not wanted.
template <class T>
Tensor<T> gradient_of(const GradCall<T>& g, std::size_t i, const DeviceBuffer<T>& buffer) {
  return g.wants(i) ? download(buffer, g.input(i).dims) : Tensor<T>();
}

// The product of dims[begin, end).
inline std::int64_t product(const std::vector<std::int64_t>& dims, std::size_t begin, std::size_t end) {
  std::int64_t p = 1;
  for (std::size_t i = begin; i < end; ++i) p *= dims[i];
  return p;
}
inline std::int64_t last_dim(const std::vector<std::int64_t>& dims) { return dims.empty() ? 1 : dims.back(); }
inline std::int64_t leading_rows(const std::vector<std::int64_t>& dims) { return dims.empty() ? 1 : product(dims, 0, dims.size() - 1); }
template <class T>
std::int64_t count(const Tensor<T>& t) {
  return static_cast<std::int64_t>(t.size());
}

template <class T>
void require_rank(const OpCall<T>& c, std::size_t input, std::size_t rank) {
  if (c.input(input).rank() != rank)
    throw LoomError(c.op + ": input " + std::to_string(input) + " has rank " + std::to_string(c.input(input).rank()) +
                    ", the CUDA kernel needs rank " + std::to_string(rank));
}

template <class T>
void require_min_rank(const OpCall<T>& c, std::size_t input, std::size_t rank) {
  if (c.input(input).rank() < rank)
    throw LoomError(c.op + ": input " + std::to_string(input) + " has rank " + std::to_string(c.input(input).rank()) +
                    ", the CUDA kernel needs rank " + std::to_string(rank) + " or more");
}

// The `axis` attribute, checked against the rank of input 0 (`axis + extra < rank`).
template <class T>
std::size_t axis_of(const OpCall<T>& c, std::size_t extra = 0) {
  const std::int64_t axis = c.attr("axis");
  const std::size_t rank = c.input(0).rank();
  if (axis < 0 || static_cast<std::size_t>(axis) + extra >= rank)
    throw LoomError(c.op + ": axis " + std::to_string(axis) + " does not fit an input of rank " + std::to_string(rank));
  return static_cast<std::size_t>(axis);
}

// The operators of cuda_kernels_layout.cpp and cuda_kernels_sequence.cpp, in float and double.
void add_layout_kernels(BackendKernels& k);
void add_sequence_kernels(BackendKernels& k);
// The model zoo's operators of cuda_kernels_models.cpp, in float and double.
void add_model_kernels(BackendKernels& k);

}  // namespace loom::runtime::cuda_adapter
