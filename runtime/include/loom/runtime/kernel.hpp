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
#include "loom/runtime/value.hpp"

namespace loom::runtime {

enum class Backend { Cpu, Cuda };

template <class T>
const std::vector<std::int64_t>& dims_of(const Tensor<T>& t) {
  return t.dims;
}
template <class T>
const std::vector<std::int64_t>& dims_of(const Value<T>& v) {
  return v.dims();
}

// One application of an operator: its attributes and input values (one task's pieces), host
// tensors or (ValueCall) values a backend holds.
template <class T, class Held = Tensor<T>>
struct OpCall {
  std::string op;
  pcg::AttrMap attrs;
  std::vector<const Held*> inputs;
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
  const Held& input(std::size_t i) const { return *inputs.at(i); }
  std::int64_t offset(std::size_t i, std::size_t dim) const { return regions.empty() ? 0 : regions.at(i).lo.at(dim); }
  // Output `i`'s dims; throws LoomError naming the op when the caller gave none.
  const std::vector<std::int64_t>& output_shape(std::size_t i) const;
  std::int64_t logical_size(std::size_t i, std::size_t dim) const {
    return logical_dims.empty() ? dims_of(input(i)).at(dim) : logical_dims.at(i).at(dim);
  }
};

// The backward of one application: the forward call, its outputs, the gradient of every output
// (zeros where nothing reads it) and which inputs need a gradient.
template <class T, class Held = Tensor<T>>
struct GradCall {
  const OpCall<T, Held>& call;
  std::vector<const Held*> outputs;
  std::vector<const Held*> output_grads;
  std::vector<bool> wanted;

  const Held& input(std::size_t i) const { return call.input(i); }
  const Held& output(std::size_t i) const { return *outputs.at(i); }
  const Held& grad(std::size_t i) const { return *output_grads.at(i); }
  bool wants(std::size_t i) const { return wanted.at(i); }
};

template <class T>
using ValueCall = OpCall<T, Value<T>>;
template <class T>
using ValueGradCall = GradCall<T, Value<T>>;

// How a kernel computes: hand-written for the backend, compiled from the operator's
// comprehension, or through the spec interpreter.
enum class KernelRoute { Native, Compiled, Interpreted };

template <class T>
struct Kernel {
  std::function<std::vector<Tensor<T>>(const OpCall<T>&)> forward;
  // One gradient per input, of the input's shape; an input not wanted may get an empty tensor
  // (no data).
  std::function<std::vector<Tensor<T>>(const GradCall<T>&)> backward;
  // The same over values, for a backend that computes where its values lie (device memory): the
  // executor calls these when set, and its values stay in the backend's memory between kernels.
  // forward and backward, when also set, run the same computation from host tensors.
  std::function<std::vector<Value<T>>(const ValueCall<T>&)> forward_values;
  std::function<std::vector<Value<T>>(const ValueGradCall<T>&)> backward_values;
  KernelRoute route = KernelRoute::Native;
};

// `kernel` with host forms made from its value forms where it has only those: the host tensors
// are copied into values and the results read back (for callers that hold host tensors).
template <class T>
Kernel<T> with_host_form(Kernel<T> kernel) {
  if (!kernel.forward && kernel.forward_values)
    kernel.forward = [f = kernel.forward_values](const OpCall<T>& c) {
      const std::vector<Value<T>> inputs = copies_of(c.inputs);
      return host_results(f(ValueCall<T>{c.op, c.attrs, pointers(inputs), c.regions, c.logical_dims, c.output_regions, c.output_dims}));
    };
  if (!kernel.backward && kernel.backward_values)
    kernel.backward = [b = kernel.backward_values](const GradCall<T>& g) {
      const std::vector<Value<T>> inputs = copies_of(g.call.inputs), outputs = copies_of(g.outputs), grads = copies_of(g.output_grads);
      const ValueCall<T> call{g.call.op,           g.call.attrs,          pointers(inputs),  g.call.regions,
                              g.call.logical_dims, g.call.output_regions, g.call.output_dims};
      return host_results(b(ValueGradCall<T>{call, pointers(outputs), pointers(grads), g.wanted}));
    };
  return kernel;
}

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
