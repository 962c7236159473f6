#pragma once
// Kernels by operator name and backend, in float and double.
#include <map>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "loom/runtime/kernel.hpp"

namespace loom::runtime {

class KernelRegistry {
 public:
  template <class T>
  void add(const std::string& op, Backend backend, Kernel<T> kernel) {
    kernels_.of<T>()[{op, backend}] = std::move(kernel);
  }
  // Null when the operator has no kernel on that backend (it then runs through the interpreter).
  template <class T>
  const Kernel<T>* find(const std::string& op, Backend backend) const {
    const auto& t = kernels_.of<T>();
    auto it = t.find({op, backend});
    return it == t.end() ? nullptr : &it->second;
  }
  std::vector<std::string> ops(Backend backend) const;

 private:
  KernelMaps<std::pair<std::string, Backend>> kernels_;
};

// Every native CPU kernel (Eigen), registered once.
const KernelRegistry& builtin_kernels();

}  // namespace loom::runtime
