// An exported layer normalization (ReduceMean, Sub, square, ReduceMean, Add epsilon, Sqrt, Div, Mul
// scale, Add shift) is fused into one operator by the proved rules of specs/rules/onnx.loom, at
// every rank and in every order the rules state, reading the file's scale and shift as weights.
// Without the rules, or without a scale and shift, the nodes stay and compute the same values.
#include <cmath>
#include <string>
#include <vector>

#include "loom/models/model_stats.hpp"
#include "loom/models/onnx_import.hpp"
#include "support.hpp"

namespace loom::models::test {
namespace {

struct ExportedForm {
  std::vector<std::int64_t> dims;
  bool square_by_product = false;  // Mul(c, c) rather than Pow(c, 2)
  bool scale_first = false;        // Mul(scale, normalized)
  bool affine = true;
};

std::string text(const ExportedForm& f) {
  std::string s = "x [";
  for (std::size_t i = 0; i < f.dims.size(); ++i) s += (i ? ", " : "") + std::to_string(f.dims[i]);
  return s + "]" + (f.square_by_product ? ", Mul(c, c)" : ", Pow(c, 2)") + (f.scale_first ? ", scale first" : "") +
         (f.affine ? "" : ", no scale or shift");
}

// The model `x -> layer normalization -> y` as an exporter writes it, with scale and shift given.
OnnxModel exported_layer_norm(const ExportedForm& f, const TensorValue& gamma, const TensorValue& beta, float eps) {
  const std::int64_t n = f.dims.back();
  OnnxModel m;
  m.input("x", f.dims);
  OnnxModel::attr(m.node("ReduceMean", {"x"}, {"mean"}), "axes", std::vector<std::int64_t>{-1});
  m.node("Sub", {"x", "mean"}, {"centered"});
  if (f.square_by_product) {
    m.node("Mul", {"centered", "centered"}, {"squared"});
  } else {
    m.scalar("two", 2);
    m.node("Pow", {"centered", "two"}, {"squared"});
  }
  OnnxModel::attr(m.node("ReduceMean", {"squared"}, {"var"}), "axes", std::vector<std::int64_t>{-1});
  m.scalar("eps", eps);
  m.node("Add", {"var", "eps"}, {"shifted"});
  m.node("Sqrt", {"shifted"}, {"deviation"});
  m.node("Div", {"centered", "deviation"}, {f.affine ? "normalized" : "y"});
  if (f.affine) {
    m.initializer("ln.weight", {n}, floats(gamma));
    m.initializer("ln.bias", {n}, floats(beta));
    m.node("Mul", f.scale_first ? std::vector<std::string>{"ln.weight", "normalized"} : std::vector<std::string>{"normalized", "ln.weight"},
           {"scaled"});
    m.node("Add", {"scaled", "ln.bias"}, {"y"});
  }
  m.output("y");
  return m;
}

// Layer normalization of x over its last axis, computed here from the formula.
TensorValue normalized(const TensorValue& x, const TensorValue* gamma, const TensorValue* beta, double eps) {
  const auto n = static_cast<std::size_t>(x.dims.back());
  TensorValue y = x;
  for (std::size_t row = 0; row < x.data.size() / n; ++row) {
    double mu = 0, var = 0;
    for (std::size_t k = 0; k < n; ++k) mu += x.data[row * n + k] / static_cast<double>(n);
    for (std::size_t k = 0; k < n; ++k) var += (x.data[row * n + k] - mu) * (x.data[row * n + k] - mu) / static_cast<double>(n);
    for (std::size_t k = 0; k < n; ++k) {
      double v = (x.data[row * n + k] - mu) / std::sqrt(var + eps);
      if (gamma) v = v * static_cast<float>(gamma->data[k]) + static_cast<float>(beta->data[k]);
      y.data[row * n + k] = v;
    }
  }
  return y;
}

TensorValue run(const ImportedModel& imported, const TensorValue& x) {
  return evaluate(imported.graph, with_constants(imported, {{"x", x}})).at(0);
}

bool notes_rule(const ImportedModel& imported, const std::string& prefix) {
  for (const std::string& note : imported.notes)
    if (note.rfind("rule " + prefix, 0) == 0) return true;
  return false;
}

TEST(OnnxLayerNormRules, EveryExportedFormIsFusedIntoOneOperatorReadingTheFilesScaleAndShift) {
  const std::vector<std::vector<std::int64_t>> shapes = {{4, 6}, {1, 6}, {2, 3, 6}, {1, 3, 6}, {2, 2, 3, 6}};
  for (const auto& dims : shapes) {
    for (const bool product : {false, true}) {
      for (const bool scale_first : {false, true}) {
        const ExportedForm form{dims, product, scale_first};
        SCOPED_TRACE(text(form));
        const TensorValue gamma = random_tensor({6}, 1), beta = random_tensor({6}, 2), x = random_tensor(dims, 3);
        const ImportedModel imported = import_with_rules(exported_layer_norm(form, gamma, beta, 1e-5f), bundled_import_rules());
        EXPECT_EQ(model_stats(imported.graph, library()).operators, 1u);
        ASSERT_EQ(count_ops(imported.graph, "layer_norm"), 1u) << "the model's epsilon is the library's";
        EXPECT_TRUE(notes_rule(imported, "onnx_layer_norm_"));
        for (const pcg::Node& n : imported.graph.nodes()) {
          if (n.op != "layer_norm") continue;
          EXPECT_EQ(imported.graph.node(n.inputs.at(1).node).name, "ln.weight");
          EXPECT_EQ(imported.graph.node(n.inputs.at(2).node).name, "ln.bias");
        }
        expect_near_all(run(imported, x), normalized(x, &gamma, &beta, static_cast<double>(1e-5f)));
      }
    }
  }
}

TEST(OnnxLayerNormRules, AnotherEpsilonIsKeptAsAnInput) {
  const ExportedForm form{{2, 3, 6}};
  const TensorValue gamma = random_tensor({6}, 4), beta = random_tensor({6}, 5), x = random_tensor(form.dims, 6);
  const ImportedModel imported = import_with_rules(exported_layer_norm(form, gamma, beta, 1e-3f), bundled_import_rules());
  EXPECT_EQ(count_ops(imported.graph, "layer_norm_eps"), 1u);
  EXPECT_EQ(count_ops(imported.graph, "layer_norm"), 0u);
  expect_near_all(run(imported, x), normalized(x, &gamma, &beta, static_cast<double>(1e-3f)));
}

// A fresh model's scale of ones and shift of zeros are weights to train, not constants folded into
// scalar operators: the fused operator reads them as the file's [n] initializers.
TEST(OnnxLayerNormRules, AScaleOfOnesAndAShiftOfZerosStayWeights) {
  const ExportedForm form{{2, 3, 6}};
  TensorValue ones({6}), zeros({6});
  for (double& v : ones.data) v = 1;
  const TensorValue x = random_tensor(form.dims, 7);
  const ImportedModel imported = import_with_rules(exported_layer_norm(form, ones, zeros, 1e-5f), bundled_import_rules());
  ASSERT_EQ(count_ops(imported.graph, "layer_norm"), 1u);
  EXPECT_EQ(imported.constants.at("ln.weight").dims, (std::vector<std::int64_t>{6}));
  EXPECT_EQ(imported.constants.at("ln.bias").dims, (std::vector<std::int64_t>{6}));
  EXPECT_EQ(imported.fixed.count("ln.weight") + imported.fixed.count("ln.bias"), 0u);
  expect_near_all(run(imported, x), normalized(x, &ones, &zeros, static_cast<double>(1e-5f)));
}

TEST(OnnxLayerNormRules, WithoutTheRulesTheNodesAreImportedOneByOneAndComputeTheSame) {
  const ExportedForm form{{2, 3, 6}};
  const TensorValue gamma = random_tensor({6}, 8), beta = random_tensor({6}, 9), x = random_tensor(form.dims, 10);
  const ImportedModel imported = import_with_rules(exported_layer_norm(form, gamma, beta, 1e-5f), {});
  EXPECT_EQ(count_ops(imported.graph, "layer_norm") + count_ops(imported.graph, "layer_norm_eps"), 0u);
  EXPECT_EQ(count_ops(imported.graph, "reduce_mean_keep"), 2u);
  expect_near_all(run(imported, x), normalized(x, &gamma, &beta, static_cast<double>(1e-5f)));
}

// No rule states the form without scale and shift: layer_norm would need a scale of ones and a
// shift of zeros, constants the model does not have and a rule never makes.
TEST(OnnxLayerNormRules, WithoutScaleAndShiftTheNodesStayAndComputeTheSame) {
  ExportedForm form{{2, 3, 6}};
  form.affine = false;
  const TensorValue x = random_tensor(form.dims, 11);
  const ImportedModel imported = import_with_rules(exported_layer_norm(form, x, x, 1e-5f), bundled_import_rules());
  EXPECT_EQ(count_ops(imported.graph, "layer_norm") + count_ops(imported.graph, "layer_norm_eps"), 0u);
  expect_near_all(run(imported, x), normalized(x, nullptr, nullptr, static_cast<double>(1e-5f)));
}

}  // namespace
}  // namespace loom::models::test
