#include "loom/runtime/kernel_registry.hpp"

#include "kernels/kernels.hpp"

namespace loom::runtime {

std::vector<std::string> KernelRegistry::ops(Backend backend) const {
  std::vector<std::string> names;
  for (const auto& [key, kernel] : kernels_.of<double>())
    if (key.second == backend) names.push_back(key.first);
  return names;
}

const KernelRegistry& builtin_kernels() {
  static const KernelRegistry registry = [] {
    BackendKernels k;
    kernels::add_matmul_kernels(k);
    kernels::add_elementwise_kernels(k);
    kernels::add_normalization_kernels(k);
    kernels::add_conv_kernels(k);
    kernels::add_pooling_kernels(k);
    kernels::add_embedding_kernels(k);
    kernels::add_layout_kernels(k);
    kernels::add_lstm_kernels(k);
    kernels::add_attention_kernels(k);
    kernels::add_window_kernels(k);
    kernels::add_pair_kernels(k);
    KernelRegistry r;
    k.register_all(r, Backend::Cpu);
    return r;
  }();
  return registry;
}

}  // namespace loom::runtime
