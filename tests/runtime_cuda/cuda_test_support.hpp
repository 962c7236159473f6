#pragma once
// What the CUDA tests share: the registry of the CUDA backend's kernels alone, the one training
// runs with (the CPU's kernels beside them), and how a case is named in a failure.
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "loom/pcg/op_catalog.hpp"
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

// The CUDA kernels where there are some and the CPU's elsewhere, as `loom train --backend cuda` runs.
inline const KernelRegistry& cuda_training_registry() {
  static const KernelRegistry registry = [] {
    KernelRegistry r = builtin_kernels();
    add_cuda_kernels(r);
    return r;
  }();
  return registry;
}

// "op k=v [d0,d1] [d0]", with " (pieces)" for a call on pieces of its inputs.
inline std::ostream& describe_case(std::ostream& os, const std::string& op, const pcg::AttrMap& attrs,
                                   const std::vector<std::vector<std::int64_t>>& inputs, bool on_pieces) {
  os << op;
  for (const auto& [k, v] : attrs) os << " " << k << "=" << v;
  for (const auto& dims : inputs) {
    os << " [";
    for (std::size_t i = 0; i < dims.size(); ++i) os << (i ? "," : "") << dims[i];
    os << "]";
  }
  if (on_pieces) os << " (pieces)";
  return os;
}

}  // namespace loom::runtime::testing
