#pragma once
#include <cmath>
#include <random>

#include "loom/interpreter/library.hpp"
#include "loom/runtime/tensor.hpp"

namespace loom::runtime::testing {

inline const spec::Library& bundled_library() {
  static const spec::Library lib = spec::Library::load({spec::Library::default_specs_dir()});
  return lib;
}

// The dims of each output of `op` on whole inputs of these dims, as the library's spec infers them
// (what the executor gives a kernel in OpCall::output_dims).
inline std::vector<std::vector<std::int64_t>> spec_output_dims(const std::string& op, const pcg::AttrMap& attrs,
                                                               const std::vector<std::vector<std::int64_t>>& inputs) {
  std::vector<pcg::ParallelShape> shapes;
  for (const auto& dims : inputs) shapes.push_back(pcg::ParallelShape::unpartitioned(dims));
  std::vector<std::vector<std::int64_t>> outputs;
  for (const auto& shape : bundled_library().infer(op, attrs, shapes)) outputs.push_back(shape.dims);
  return outputs;
}

inline Tensor<double> uniform_tensor(const std::vector<std::int64_t>& dims, std::mt19937_64& rng, double lo = -1, double hi = 1) {
  Tensor<double> t(dims);
  std::uniform_real_distribution<double> u(lo, hi);
  for (double& v : t.data) v = u(rng);
  return t;
}

// Largest |a - b| / max(1, |b|) over the elements; infinity when the shapes differ.
template <class A>
double relative_error(const Tensor<A>& a, const Tensor<double>& b) {
  if (a.dims != b.dims || a.size() != b.size()) return HUGE_VAL;
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    worst = std::max(worst, std::abs(static_cast<double>(a.data[i]) - b.data[i]) / std::max(1.0, std::abs(b.data[i])));
  return worst;
}

// Whether `a` holds the same infinities as `b` at the same places (relative_error skips them).
template <class A, class B>
bool same_infinities(const Tensor<A>& a, const Tensor<B>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double x = static_cast<double>(a.data[i]), y = static_cast<double>(b.data[i]);
    if ((std::isinf(x) || std::isinf(y)) && x != y) return false;
  }
  return true;
}

}  // namespace loom::runtime::testing
