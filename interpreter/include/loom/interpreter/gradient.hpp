#pragma once
// Reverse-mode differentiation of an operator's comprehension, in double precision: for every
// point of every statement (outputs and `let`s, last statement first), the partial derivative of
// the body with respect to each tensor element it reads, times the point's gradient, is added to
// that element's gradient. Index arithmetic and conditions are not differentiated; a `max`/`min`
// reduction passes its gradient to the first element that attains it; a read outside its tensor
// passes it to the read's `??` fallback.
#include <vector>

#include "loom/interpreter/program.hpp"
#include "loom/interpreter/tensor.hpp"

namespace loom::spec {

// `output_grads[k]` is the gradient of output k (null: zero). Returns one gradient per input, of
// the input's shape. Throws LoomError like `evaluate` for inputs of the wrong shape.
std::vector<Tensor<double>> evaluate_gradient(const Program& program, const std::vector<const Tensor<double>*>& inputs,
                                              const std::vector<const Tensor<double>*>& output_grads);

// Whether the derived gradient through `parent` reads the value of its child `i`: a product's
// factor where the other factor reads tensors, a quotient's denominator (and its numerator where
// the denominator reads tensors), a select's condition, a max or min reduction's body, a
// function's argument. A sum's terms, a sum reduction's body and the operands of comparisons
// pass the gradient on without their values.
bool gradient_reads_operand(const CNode& parent, std::size_t i);

// Whether `n` reads a tensor anywhere below it.
bool reads_values(const CNode& n);

}  // namespace loom::spec
