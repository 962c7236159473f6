#pragma once
// The runtime's tensors are the interpreter's dense row-major tensors, in float or double.
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "loom/interpreter/tensor.hpp"

namespace loom::runtime {

template <class T>
using Tensor = spec::Tensor<T>;

// Values of graph inputs and weights (or their gradients), by node name.
template <class T>
using NamedTensors = std::map<std::string, Tensor<T>>;

template <class To, class From>
Tensor<To> convert(const Tensor<From>& t) {
  Tensor<To> out;
  out.dims = t.dims;
  out.data.assign(t.data.begin(), t.data.end());
  return out;
}

template <class To, class From>
NamedTensors<To> convert(const NamedTensors<From>& named) {
  NamedTensors<To> out;
  for (const auto& [name, t] : named) out.emplace(name, convert<To>(t));
  return out;
}

// Pointers to each tensor, for calls that take their inputs by pointer.
template <class T>
std::vector<const Tensor<T>*> pointers(const std::vector<Tensor<T>>& tensors) {
  std::vector<const Tensor<T>*> out;
  for (const auto& t : tensors) out.push_back(&t);
  return out;
}

template <class T>
bool all_finite(const Tensor<T>& t) {
  for (T v : t.data)
    if (!std::isfinite(v)) return false;
  return true;
}

}  // namespace loom::runtime
