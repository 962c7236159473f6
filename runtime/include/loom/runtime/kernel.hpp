#pragma once
// A kernel: the forward and backward computation of one operator on one backend. Kernels are
// fast paths of the operators the spec library defines and must agree with the interpreter.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

#include "loom/pcg/op_catalog.hpp"
#include "loom/pcg/piece_moves.hpp"
#include "loom/runtime/tensor.hpp"

namespace loom::runtime {

enum class Backend { Cpu, Cuda };

// One application of an operator: its attributes and input values (one task's pieces).
template <class T>
struct OpCall {
  std::string op;
  pcg::AttrMap attrs;
  std::vector<const Tensor<T>*> inputs;
  // Where each input piece and each output piece lies in its logical value, and the inputs'
  // logical dimensions: an operator whose body reads a dimension's size or an index's value
  // computes its piece of the logical result from them. All empty when every value is whole.
  std::vector<pcg::Region> regions;
  std::vector<std::vector<std::int64_t>> logical_dims;
  std::vector<pcg::Region> output_regions;
  // The dims of each output piece, as the operator's spec infers them: a kernel that needs an
  // output's shape reads it here instead of deriving it again.
  std::vector<std::vector<std::int64_t>> output_dims;

  // The attribute's value; throws LoomError naming the op when it is missing.
  std::int64_t attr(const std::string& name) const;
  const Tensor<T>& input(std::size_t i) const { return *inputs.at(i); }
  std::int64_t offset(std::size_t i, std::size_t dim) const { return regions.empty() ? 0 : regions.at(i).lo.at(dim); }
  // Output `i`'s dims; throws LoomError naming the op when the caller gave none.
  const std::vector<std::int64_t>& output_shape(std::size_t i) const;
  std::int64_t logical_size(std::size_t i, std::size_t dim) const {
    return logical_dims.empty() ? input(i).dims.at(dim) : logical_dims.at(i).at(dim);
  }
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

// How a kernel computes: hand-written for the backend, compiled from the operator's
// comprehension, or through the spec interpreter.
enum class KernelRoute { Native, Compiled, Interpreted };

template <class T>
struct Kernel {
  std::function<std::vector<Tensor<T>>(const OpCall<T>&)> forward;
  // One gradient per input, of the input's shape; an input not wanted may get an empty tensor
  // (no data).
  std::function<std::vector<Tensor<T>>(const GradCall<T>&)> backward;
  KernelRoute route = KernelRoute::Native;
};

// Kernels by key, one map per element type the runtime computes in.
template <class Key>
class KernelMaps {
 public:
  template <class T>
  std::map<Key, Kernel<T>>& of() {
    if constexpr (std::is_same_v<T, float>)
      return float_;
    else
      return double_;
  }
  template <class T>
  const std::map<Key, Kernel<T>>& of() const {
    if constexpr (std::is_same_v<T, float>)
      return float_;
    else
      return double_;
  }

 private:
  std::map<Key, Kernel<float>> float_;
  std::map<Key, Kernel<double>> double_;
};

}  // namespace loom::runtime
