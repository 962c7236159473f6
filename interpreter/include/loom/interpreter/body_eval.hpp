#pragma once
// The value of a compiled body at one point of its index space, in a number domain: what
// evaluation computes for every element of a statement's target, and what differentiation
// re-reads for the partial derivatives of products, quotients and functions.
#include <cstddef>
#include <vector>

#include "loom/interpreter/compiled_eval.hpp"
#include "loom/interpreter/numeric.hpp"
#include "loom/interpreter/tensor.hpp"

namespace loom::spec {

template <class Domain>
class BodyEvaluator {
 public:
  using Value = typename Domain::Value;

  // Reads of buffer b go to the tensor bound to b, which must be bound before a body reads it.
  explicit BodyEvaluator(std::size_t buffer_count) : buffers_(buffer_count, nullptr) {}
  void bind(int buffer, const Tensor<Value>* value) { buffers_[static_cast<std::size_t>(buffer)] = value; }

  // The body's value with the index slots as they are (a reduction leaves its own slots changed).
  // Reads outside a tensor give 0 or the read's `??` fallback.
  Value operator()(const CNode& n, Slots& slots) const;

 private:
  Value reduce(const CNode& n, Slots& slots) const;

  std::vector<const Tensor<Value>*> buffers_;
};

extern template class BodyEvaluator<RealDomain>;
extern template class BodyEvaluator<ModularDomain>;

}  // namespace loom::spec
