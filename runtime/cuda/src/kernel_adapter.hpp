#pragma once
// What the Backend::Cuda kernel adapters share: the calling thread's device context, the device
// arrays of the values they read and make, and shape helpers. Private to loom_runtime_cuda.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "loom/pcg/diagnostic.hpp"
#include "loom/runtime/cuda/cuda_values.hpp"
#include "loom/runtime/cuda/device_buffer.hpp"
#include "loom/runtime/kernel_table.hpp"

namespace loom::runtime::cuda_adapter {

using cuda::CudaContext;
using cuda::device_buffer;
using cuda::DeviceBuffer;
template <class T>
using Values = std::vector<Value<T>>;

// The context of the calling thread's current device, made on first use.
const CudaContext& context();

// A value's elements on the current device, read where they lie (copied there first when only on
// the host).
template <class T>
const T* in(const Value<T>& v) {
  return device_buffer(v).data();
}

// A copy of a value's elements on the current device, for a kernel that writes over it.
template <class T>
DeviceBuffer<T> device_copy(const Value<T>& v) {
  return cuda::copy_of(device_buffer(v));
}

// An uninitialized device array of `size` elements.
template <class T>
DeviceBuffer<T> scratch(std::size_t size) {
  return DeviceBuffer<T>(context(), size);
}

// A value of `dims` made by a kernel in `buffer`, left on the device.
template <class T>
Value<T> hold(DeviceBuffer<T>&& buffer, std::vector<std::int64_t> dims) {
  return cuda::device_value(std::move(buffer), std::move(dims));
}

// Zeros of `dims` on the current device.
template <class T>
Value<T> zeros(std::vector<std::int64_t> dims) {
  const std::size_t size = Tensor<T>::element_count(dims);
  return Value<T>(std::move(dims), cuda::device_memory<T>().zeros(size));
}

// The device array of the gradient of input i when it is wanted, else an empty one.
template <class T>
DeviceBuffer<T> gradient_buffer(const ValueGradCall<T>& g, std::size_t i) {
  return g.wants(i) ? scratch<T>(g.input(i).size()) : DeviceBuffer<T>();
}

// The gradient of input i held in `buffer`, or an empty value when it was not wanted.
template <class T>
Value<T> gradient_of(const ValueGradCall<T>& g, std::size_t i, DeviceBuffer<T>&& buffer) {
  return g.wants(i) ? hold(std::move(buffer), g.input(i).dims()) : Value<T>();
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
std::int64_t count(const Value<T>& t) {
  return static_cast<std::int64_t>(t.size());
}

template <class T>
void require_rank(const ValueCall<T>& c, std::size_t input, std::size_t rank) {
  if (c.input(input).rank() != rank)
    throw LoomError(c.op + ": input " + std::to_string(input) + " has rank " + std::to_string(c.input(input).rank()) +
                    ", the CUDA kernel needs rank " + std::to_string(rank));
}

template <class T>
void require_min_rank(const ValueCall<T>& c, std::size_t input, std::size_t rank) {
  if (c.input(input).rank() < rank)
    throw LoomError(c.op + ": input " + std::to_string(input) + " has rank " + std::to_string(c.input(input).rank()) +
                    ", the CUDA kernel needs rank " + std::to_string(rank) + " or more");
}

// The `axis` attribute, checked against the rank of input 0 (`axis + extra < rank`).
template <class T>
std::size_t axis_of(const ValueCall<T>& c, std::size_t extra = 0) {
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
