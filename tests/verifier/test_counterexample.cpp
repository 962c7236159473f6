#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "loom/interpreter/term_eval.hpp"
#include "loom/verifier/counterexample.hpp"
#include "loom/verifier/rule_loading.hpp"
#include "loom/verifier/verify.hpp"
#include "verifier_test_support.hpp"

namespace loom::verifier {
namespace {

using Eval = spec::TermEvaluator<spec::RealDomain>;

const spec::Library& planted() {
  static const spec::Library library = spec::Library::load({spec::Library::default_specs_dir(), testing::data_file("planted_false.loom")});
  return library;
}

// Random values for the counterexample's shapes, in the binders' order.
Eval::Bindings random_inputs(const spec::Quantifier& shapes, spec::IntScope& ints, std::mt19937_64& rng) {
  Eval::Bindings vars;
  std::uniform_real_distribution<double> uni(-1, 1);
  for (const auto& b : shapes.binders) {
    if (b.is_int) {
      ints.values[b.name] = b.domain->at(0);
      continue;
    }
    std::vector<std::int64_t> dims;
    for (const auto& d : b.shape->dims) dims.push_back(spec::eval_int(*d.expr, ints));
    auto& v = vars[b.name];
    v.shape = pcg::ParallelShape::unpartitioned(dims);
    v.value = spec::Tensor<double>(dims);
    for (auto& x : v.value.data) x = uni(rng);
  }
  return vars;
}

TEST(Counterexample, PlantedFalseRuleIsRefutedAndTheInterpreterConfirms) {
  const auto rules = obligations_from_library(planted(), {testing::data_file("planted_false.loom")});
  const auto& rule = testing::find_obligation(rules, "relu_of_sum");

  VerifyOptions options;
  options.timeout_ms = 2000;
  const auto report = verify(planted(), prepare_axioms(planted()), {rule}, options);
  const auto& v = report.verdicts.at(0).verification;
  ASSERT_EQ(v.status, pcg::VerificationStatus::Refuted) << v.reason;
  EXPECT_NE(v.counterexample.find("differs"), std::string::npos) << v.counterexample;
  EXPECT_TRUE(v.core.empty());

  // The counterexample's shapes: evaluating both sides there, with values of our own, the
  // interpreter disagrees with itself, and its left side matches a hand computation.
  const auto found = find_counterexample(planted(), rule);
  ASSERT_TRUE(found.has_value());
  std::mt19937_64 rng(5);
  spec::IntScope ints;
  const auto vars = random_inputs(found->shapes, ints, rng);
  Eval eval(planted());
  const auto lhs = eval.eval_single(*rule.goals[0].lhs, vars, ints);
  const auto rhs = eval.eval_single(*rule.goals[0].rhs, vars, ints);
  const auto& x = vars.at("x").value;
  const std::int64_t rows = x.dims.at(0), cols = x.dims.at(1);
  ASSERT_EQ(lhs.value.data.size(), static_cast<std::size_t>(rows));
  bool differ = false;
  for (std::int64_t i = 0; i < rows; ++i) {
    double sum = 0, sum_of_relu = 0;
    for (std::int64_t j = 0; j < cols; ++j) {
      const double xij = x.data[static_cast<std::size_t>(i * cols + j)];
      sum += xij;
      sum_of_relu += std::max(xij, 0.0);
    }
    EXPECT_NEAR(lhs.value.data[static_cast<std::size_t>(i)], std::max(sum, 0.0), 1e-12);
    EXPECT_NEAR(rhs.value.data[static_cast<std::size_t>(i)], sum_of_relu, 1e-12);
    differ = differ || std::fabs(std::max(sum, 0.0) - sum_of_relu) > 1e-9;
  }
  EXPECT_TRUE(differ) << "relu(sum) == sum(relu) on every row of the drawn values";
}

TEST(Counterexample, TrueRuleHasNone) {
  const auto rules = obligations_from_library(planted(), {testing::data_file("planted_false.loom")});
  EXPECT_FALSE(find_counterexample(planted(), testing::find_obligation(rules, "relu_twice")).has_value());
}

TEST(Counterexample, RanksAreSearchedForVariablesWithoutShapes) {
  const auto lib = spec::Library::from_text(
      "import \"ops/core.loom\";\nimport \"ops/linalg.loom\";\n"
      "rule wrong: matmul(x, y) => matmul(y, x);\n",
      "<implicit>", spec::Library::default_specs_dir());
  const auto rules = obligations_from_library(lib);
  const auto found = find_counterexample(lib, rules.at(0));
  ASSERT_TRUE(found.has_value());
  // matmul needs matrices: the search found rank 2 for both.
  for (const auto& b : found->shapes.binders) EXPECT_EQ(b.shape->dims.size(), 2u) << b.name;
}

TEST(Counterexample, DifferentDegreesAreAShapeMismatch) {
  const auto lib = spec::Library::from_text(
      "import \"ops/core.loom\";\nimport \"ops/parallel.loom\";\n"
      "rule split_only: forall x: [m, n] where m % 2 == 0. relu(x) => relu(partition<0, 2>(x));\n",
      "<degrees>", spec::Library::default_specs_dir(),
      spec::LoadOptions{false});  // the loader would refuse it: the verifier's own check is tested
  EXPECT_THROW(spec::Library::from_text("import \"ops/core.loom\";\nimport \"ops/parallel.loom\";\n"
                                        "rule split_only: forall x: [m, n] where m % 2 == 0. relu(x) => relu(partition<0, 2>(x));\n",
                                        "<degrees>", spec::Library::default_specs_dir()),
               LoomError);
  const auto rules = obligations_from_library(lib);
  const auto mismatch = find_shape_mismatch(lib, rules.at(0));
  ASSERT_TRUE(mismatch.has_value());
  EXPECT_NE(mismatch->description.find("differ in parallel shape"), std::string::npos) << mismatch->description;

  // The values agree, so only the shape check can refute it; verify() does.
  const auto report = verify(lib, prepare_axioms(lib), rules, {});
  EXPECT_EQ(report.verdicts.at(0).verification.status, pcg::VerificationStatus::Refuted);
}

}  // namespace
}  // namespace loom::verifier
