#pragma once
// What the CUDA kernel tests share: the registry of the CUDA backend's kernels alone.
#include "loom/runtime/cuda/cuda_kernels.hpp"
#include "loom/runtime/kernel_registry.hpp"

namespace loom::runtime::testing {

inline const KernelRegistry& cuda_registry() {
  static const KernelRegistry registry = [] {
    KernelRegistry r;
    add_cuda_kernels(r);
    return r;
  }();
  return registry;
}

}  // namespace loom::runtime::testing
