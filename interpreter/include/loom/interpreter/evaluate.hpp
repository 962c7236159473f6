#pragma once
#include <vector>

#include "loom/interpreter/numeric.hpp"
#include "loom/interpreter/program.hpp"
#include "loom/interpreter/tensor.hpp"

namespace loom::spec {

// Evaluates a compiled operator instance on concrete inputs, in the number domain `Domain`
// (RealDomain or ModularDomain). Reads outside a tensor give 0 (or the read's `??` fallback).
template <class Domain>
std::vector<Tensor<typename Domain::Value>> evaluate(const Program& program,
                                                     const std::vector<const Tensor<typename Domain::Value>*>& inputs);

}  // namespace loom::spec
