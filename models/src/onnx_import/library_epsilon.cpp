#include "onnx_import/library_epsilon.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "loom/interpreter/evaluate.hpp"
#include "loom/pcg/diagnostic.hpp"

namespace loom::models::onnx_import {
namespace {

using Values = spec::Tensor<double>;

// The first element of `op`'s output on `inputs`.
double first_output(const spec::Library& library, const std::string& op, const std::vector<Values>& inputs) {
  const spec::OpDecl* decl = library.find_op(op);
  if (!decl) throw LoomError("the spec library has no '" + op + "' operator");
  std::vector<std::vector<std::int64_t>> dims;
  std::vector<const Values*> pointers;
  for (const Values& v : inputs) {
    dims.push_back(v.dims);
    pointers.push_back(&v);
  }
  return spec::evaluate<spec::RealDomain>(*library.compiled(*decl, {}, dims), pointers).at(0).data.at(0);
}

Values filled(std::vector<std::int64_t> dims, std::vector<double> data) {
  Values t(std::move(dims));
  t.data = std::move(data);
  return t;
}

double checked(const std::string& op, double epsilon) {
  if (!std::isfinite(epsilon) || epsilon <= 0)
    throw LoomError("the spec library's '" + op + "' does not compute x / sqrt(variance + epsilon) with a positive epsilon");
  return epsilon;
}

}  // namespace

double batchnorm_epsilon(const spec::Library& library) {
  // One element at 1, mean 0, variance 0, scale 1, bias 0: the result is 1 / sqrt(epsilon).
  const double out = first_output(library, "batchnorm",
                                  {filled({1, 1, 1, 1}, {1}), filled({1}, {1}), filled({1}, {0}), filled({1}, {0}), filled({1}, {0})});
  return checked("batchnorm", 1 / (out * out));
}

double layer_norm_epsilon(const spec::Library& library) {
  // A row (a, -a), scale 1, shift 0: mean 0, variance a², and the first result a / sqrt(a² + epsilon).
  // A small variance keeps the epsilon's digits.
  const double a = 1e-3;
  const double out = first_output(library, "layer_norm", {filled({1, 2}, {a, -a}), filled({2}, {1, 1}), filled({2}, {0, 0})});
  return checked("layer_norm", a * a * (1 / (out * out) - 1));
}

bool same_epsilon(double model, double library) { return std::abs(model - library) <= 1e-6 * std::max(std::abs(model), std::abs(library)); }

}  // namespace loom::models::onnx_import
