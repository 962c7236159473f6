#include "loom/runtime/kernel_registry.hpp"

#include "kernels/kernels.hpp"

namespace loom::runtime {

std::vector<std::string> KernelRegistry::ops(Backend backend) const {
  std::vector<std::string> names;
  for (const auto& [key, kernel] : double_kernels_)
    if (key.second == backend) names.push_back(key.first);
  return names;
}

const KernelRegistry& builtin_kernels() {
  static const KernelRegistry registry = [] {
    KernelRegistry r;
    kernels::add_matmul_kernels(r);
    kernels::add_elementwise_kernels(r);
    kernels::add_normalization_kernels(r);
    kernels::add_conv_kernels(r);
    kernels::add_pooling_kernels(r);
    kernels::add_embedding_kernels(r);
    kernels::add_layout_kernels(r);
    kernels::add_lstm_kernels(r);
    kernels::add_attention_kernels(r);
    kernels::add_window_kernels(r);
    kernels::add_pair_kernels(r);
    return r;
  }();
  return registry;
}

}  // namespace loom::runtime
