// The gradient derived from a comprehension (spec::evaluate_gradient) against central finite
// differences, on bundled operators and on an operator written in the spec language.
#include <gtest/gtest.h>

#include "loom/interpreter/evaluate.hpp"
#include "loom/interpreter/gradient.hpp"
#include "runtime_test_support.hpp"

namespace loom::spec {
namespace {

using runtime::testing::bundled_library;
using runtime::testing::uniform_tensor;

// sum over outputs of <output, weights>: a scalar whose gradient is evaluate_gradient's.
double weighted_sum(const Program& p, const std::vector<Tensor<double>>& inputs, const std::vector<Tensor<double>>& weights) {
  std::vector<const Tensor<double>*> args;
  for (const auto& t : inputs) args.push_back(&t);
  const auto outputs = evaluate<RealDomain>(p, args);
  double s = 0;
  for (std::size_t k = 0; k < outputs.size(); ++k)
    for (std::size_t i = 0; i < outputs[k].size(); ++i) s += outputs[k].data[i] * weights[k].data[i];
  return s;
}

// Worst |derived - numeric| / max(1, |numeric|) over every input element.
double gradient_error(const Library& lib, const std::string& op, const pcg::AttrMap& attrs,
                      const std::vector<std::vector<std::int64_t>>& dims, double lo = -1, double hi = 1) {
  const Program p = lib.instantiate(op, attrs, dims);
  std::mt19937_64 rng(3);
  std::vector<Tensor<double>> inputs;
  for (const auto& d : dims) inputs.push_back(uniform_tensor(d, rng, lo, hi));
  std::vector<const Tensor<double>*> args;
  for (const auto& t : inputs) args.push_back(&t);
  std::vector<Tensor<double>> weights;
  for (const auto& o : evaluate<RealDomain>(p, args)) weights.push_back(uniform_tensor(o.dims, rng));
  std::vector<const Tensor<double>*> weight_args;
  for (const auto& w : weights) weight_args.push_back(&w);
  const auto derived = evaluate_gradient(p, args, weight_args);
  double worst = 0;
  const double h = 1e-6;
  for (std::size_t k = 0; k < inputs.size(); ++k)
    for (std::size_t i = 0; i < inputs[k].size(); ++i) {
      auto plus = inputs, minus = inputs;
      plus[k].data[i] += h;
      minus[k].data[i] -= h;
      const double numeric = (weighted_sum(p, plus, weights) - weighted_sum(p, minus, weights)) / (2 * h);
      worst = std::max(worst, std::abs(derived[k].data[i] - numeric) / std::max(1.0, std::abs(numeric)));
    }
  return worst;
}

TEST(DerivedGradient, MatchesFiniteDifferencesOnBundledOperators) {
  const Library& lib = bundled_library();
  EXPECT_LT(gradient_error(lib, "softmax", {}, {{3, 4}}), 1e-7);
  EXPECT_LT(gradient_error(lib, "layer_norm", {}, {{2, 5}, {5}, {5}}), 1e-7);
  EXPECT_LT(gradient_error(lib, "conv2d", {{"stride_h", 1}, {"stride_w", 2}, {"pad_h", 1}, {"pad_w", 0}, {"act", 3}},
                           {{1, 2, 4, 5}, {3, 2, 3, 3}}),
            1e-7);
  EXPECT_LT(gradient_error(lib, "lstm_cell", {}, {{2, 3}, {2, 2}, {2, 2}, {3, 8}, {2, 8}, {8}}), 1e-7);
  EXPECT_LT(gradient_error(lib, "dot_attention", {}, {{2, 3}, {2, 4, 3}}), 1e-7);
  EXPECT_LT(gradient_error(lib, "scalar_pow", {}, {{3, 2}, {}}, 0.5, 1.5), 1e-7);
}

TEST(DerivedGradient, DifferentiatesAnOperatorWrittenInTheSpecLanguage) {
  const Library lib =
      Library::from_text("op squash(x: [n], y: [n]) -> [n] { out[i] = x[i] * exp(y[i]) / (1 + x[i] * x[i]) + max(j < n) (x[j] * y[i]); }");
  EXPECT_LT(gradient_error(lib, "squash", {}, {{5}, {5}}), 1e-7);
}

TEST(DerivedGradient, AWrongDerivativeWouldBeCaught) {
  // The check is not vacuous: the gradient of a non-linear op is not the all-ones tensor.
  const Library& lib = bundled_library();
  const Program p = lib.instantiate("tanh", {}, {{4}});
  Tensor<double> x({4}, 0.7), g({4}, 1.0);
  const auto derived = evaluate_gradient(p, {&x}, {&g});
  EXPECT_NEAR(derived[0].data[0], 1 - std::tanh(0.7) * std::tanh(0.7), 1e-12);
}

}  // namespace
}  // namespace loom::spec
