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
    table<T>()[{op, backend}] = std::move(kernel);
  }
  // Null when the operator has no kernel on that backend (it then runs through the interpreter).
  template <class T>
  const Kernel<T>* find(const std::string& op, Backend backend) const {
    const auto& t = table<T>();
    auto it = t.find({op, backend});
    return it == t.end() ? nullptr : &it->second;
  }
  std::vector<std::string> ops(Backend backend) const;

 private:
  using Key = std::pair<std::string, Backend>;
  template <class T>
  std::map<Key, Kernel<T>>& table() {
    if constexpr (std::is_same_v<T, float>)
      return float_kernels_;
    else
      return double_kernels_;
  }
  template <class T>
  const std::map<Key, Kernel<T>>& table() const {
    if constexpr (std::is_same_v<T, float>)
      return float_kernels_;
    else
      return double_kernels_;
  }
  std::map<Key, Kernel<float>> float_kernels_;
  std::map<Key, Kernel<double>> double_kernels_;
};

// Every native CPU kernel (Eigen), registered once.
const KernelRegistry& builtin_kernels();

}  // namespace loom::runtime
