#pragma once
// Loom's CUDA kernels as runtime kernels. Their value forms (Kernel::forward_values) read their
// inputs on the current device, where the executor keeps the values they made (an input held only
// on the host is copied there first), and leave their outputs there. Their host forms copy host
// tensors in and the results back, for callers that hold host tensors.
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
