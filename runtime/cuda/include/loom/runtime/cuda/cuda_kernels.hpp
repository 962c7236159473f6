#pragma once
// Loom's CUDA kernels as runtime kernels: each copies its host tensors to the current device, runs
// the CUDA core's operator there and copies the results back (the correctness path; values stay
// on the host between operators).
#include <optional>
#include <string>

#include "loom/runtime/kernel_registry.hpp"

namespace loom::runtime {

// Registers the Backend::Cuda kernels, in float and double. Needs no GPU: a device context is
// made the first time a kernel runs.
void add_cuda_kernels(KernelRegistry& registry);

// Null when a CUDA device this build can run on is present; otherwise why not.
std::optional<std::string> cuda_unavailable_reason();

// The CUDA devices this process sees (0 when none or when the driver cannot be asked).
int visible_cuda_devices();
// Makes `device` the calling thread's current device, where its kernels run; throws CudaError.
void use_cuda_device(int device);

}  // namespace loom::runtime
