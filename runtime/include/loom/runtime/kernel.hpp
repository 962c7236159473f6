#pragma once
// A kernel: the forward and backward computation of one operator on one backend. Kernels are
// fast paths of the operators the spec library defines and must agree with the interpreter.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "loom/pcg/op_catalog.hpp"
#include "loom/runtime/tensor.hpp"

namespace loom::runtime {

enum class Backend { Cpu, Cuda };

// One application of an operator: its attributes and input values (one task's pieces).
template <class T>
struct OpCall {
  std::string op;
  pcg::AttrMap attrs;
  std::vector<const Tensor<T>*> inputs;

  // The attribute's value; throws LoomError naming the op when it is missing.
  std::int64_t attr(const std::string& name) const;
  const Tensor<T>& input(std::size_t i) const { return *inputs.at(i); }
};

// The backward of one application: the forward call, its outputs, the gradient of every output
// (zeros where nothing reads it) and which inputs need a gradient.
template <class T>
struct GradCall {
  const OpCall<T>& call;
  std::vector<const Tensor<T>*> outputs;
  std::vector<const Tensor<T>*> output_grads;
  std::vector<bool> wanted;

  const Tensor<T>& input(std::size_t i) const { return call.input(i); }
  const Tensor<T>& output(std::size_t i) const { return *outputs.at(i); }
  const Tensor<T>& grad(std::size_t i) const { return *output_grads.at(i); }
  bool wants(std::size_t i) const { return wanted.at(i); }
};

template <class T>
struct Kernel {
  std::function<std::vector<Tensor<T>>(const OpCall<T>&)> forward;
  // One gradient per input, of the input's shape; an input not wanted may get an empty tensor
  // (no data).
  std::function<std::vector<Tensor<T>>(const GradCall<T>&)> backward;
};

}  // namespace loom::runtime
