// An imported model is fused with proved rules: GELU's erf form, in every order exporters multiply
// it, becomes gelu by the bundled rules of specs/rules/onnx.loom, a number in a rule matching the
// model's constant; a different constant, or no rules, leaves the nodes as they are, computing the
// same values.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "../pcg/error_text.hpp"
#include "loom/models/onnx_import.hpp"
#include "loom/pcg/diagnostic.hpp"
#include "loom/pcg/match.hpp"
#include "support.hpp"

namespace loom::models::test {
namespace {

// x [3, 5] through GELU's erf form, `order` choosing how the three products are written:
// 0: (x * 0.5) * (1 + erf), 1: (1 + erf) * (x * 0.5), 2: (x * (1 + erf)) * 0.5, 3: ((1 + erf) * x) * 0.5,
// 4: ((1 + erf) * 0.5) * x, 5: x * ((1 + erf) * 0.5). `half` is the constant written for 0.5.
OnnxModel exported_gelu(int order, float half = 0.5f) {
  OnnxModel m;
  m.input("x", {3, 5});
  m.scalar("sqrt2", 1.4142135f);
  m.scalar("one", 1);
  m.scalar("half", half);
  m.node("Div", {"x", "sqrt2"}, {"u"});
  m.node("Erf", {"u"}, {"e"});
  m.node("Add", {"e", "one"}, {"a"});
  switch (order) {
    case 0:
    case 1:
      m.node("Mul", {"x", "half"}, {"h"});
      m.node("Mul", order == 0 ? std::vector<std::string>{"h", "a"} : std::vector<std::string>{"a", "h"}, {"y"});
      break;
    case 2:
    case 3:
      m.node("Mul", order == 2 ? std::vector<std::string>{"x", "a"} : std::vector<std::string>{"a", "x"}, {"p"});
      m.node("Mul", {"p", "half"}, {"y"});
      break;
    default:
      m.node("Mul", {"a", "half"}, {"h"});
      m.node("Mul", order == 4 ? std::vector<std::string>{"h", "x"} : std::vector<std::string>{"x", "h"}, {"y"});
  }
  m.output("y");
  return m;
}

// The largest difference between the imported model's output and x * half * (1 + erf(x / sqrt 2)).
double worst_error(const ImportedModel& imported, double half) {
  const TensorValue x = random_tensor({3, 5}, 6);
  const TensorValue y = evaluate(imported.graph, with_constants(imported, {{"x", x}})).at(0);
  double worst = 0;
  for (std::size_t i = 0; i < x.size(); ++i)
    worst = std::max(worst, std::abs(y.data[i] - half * x.data[i] * (1 + std::erf(x.data[i] / static_cast<double>(1.4142135f)))));
  return worst;
}

TEST(OnnxRuleFusion, EveryOrderExportersWriteGeluInIsFusedByAProvedRule) {
  ASSERT_GE(bundled_import_rules().size(), 6u);
  for (int order = 0; order < 6; ++order) {
    SCOPED_TRACE("order " + std::to_string(order));
    const ImportedModel imported = import_with_rules(exported_gelu(order), bundled_import_rules());
    EXPECT_EQ(count_ops(imported.graph, "gelu"), 1u);
    EXPECT_EQ(count_ops(imported.graph, "erf"), 0u);
    EXPECT_TRUE(imported.constants.empty()) << "the fused pattern's constants are dropped";
    EXPECT_EQ(imported.graph.size(), 2u) << "x and gelu";
    bool noted = false;
    for (const std::string& note : imported.notes) noted |= note.rfind("rule onnx_gelu", 0) == 0;
    EXPECT_TRUE(noted) << "the import notes name the rule that fused the pattern";
    // The float32 constants of the file differ from the rule's decimals in their last bits.
    EXPECT_LT(worst_error(imported, 0.5), 1e-6);
  }
}

TEST(OnnxRuleFusion, WithoutRulesGeluIsImportedAsItsNodesAndComputesTheSame) {
  const ImportedModel imported = import_with_rules(exported_gelu(2), {});
  EXPECT_EQ(count_ops(imported.graph, "gelu"), 0u);
  EXPECT_EQ(count_ops(imported.graph, "erf"), 1u);
  EXPECT_LT(worst_error(imported, 0.5), 1e-12);
}

TEST(OnnxRuleFusion, AConstantOtherThanTheRulesNumberIsNotFused) {
  const ImportedModel imported = import_with_rules(exported_gelu(0, 0.6f), bundled_import_rules());
  EXPECT_EQ(count_ops(imported.graph, "gelu"), 0u);
  EXPECT_LT(worst_error(imported, static_cast<double>(0.6f)), 1e-12);
  // Within a relative 1e-6 a constant is the rule's number; a relative 1e-4 is not.
  EXPECT_TRUE(pcg::matches_literal(static_cast<double>(0.70710677f), 0.7071067811865476));
  EXPECT_FALSE(pcg::matches_literal(0.70710678 * (1 + 1e-4), 0.7071067811865476));
}

// The scalar constants arithmetic reads are the model's constants, which training keeps; the
// initializers are its parameters.
TEST(OnnxRuleFusion, ScalarConstantsLeftAfterFusionAreTheModelsFixedWeights) {
  OnnxModel m = exported_gelu(0, 0.6f);
  const ImportedModel imported = import_with_rules(m, bundled_import_rules());
  ASSERT_FALSE(imported.fixed.empty());
  for (const std::string& name : imported.fixed) {
    ASSERT_TRUE(imported.constants.count(name)) << name;
    EXPECT_TRUE(imported.constants.at(name).dims.empty()) << name;
  }
  EXPECT_EQ(imported.fixed.size(), imported.constants.size()) << "every constant of this model is a scalar";
}

// --batch sets an ONNX file's symbolic dimensions; where every input's shape is static, nothing
// takes it, and the import is refused naming the shapes that pin the batch.
// What --batch B asks of the import.
OnnxImportOptions batch_of(std::int64_t batch) {
  OnnxImportOptions asked;
  asked.default_dim = batch;
  asked.default_dim_required = true;
  return asked;
}

TEST(OnnxImportBatch, ABatchAskedOfStaticShapesIsRefusedNamingThem) {
  const OnnxImportOptions asked = batch_of(8);
  OnnxModel fixed;
  fixed.input("x", {3, 5});
  fixed.node("Relu", {"x"}, {"y"});
  fixed.output("y");
  try {
    import_onnx_bytes(fixed.bytes(), "static.onnx", library(), asked);
    FAIL() << "a batch nothing takes was accepted";
  } catch (const LoomError& e) {
    EXPECT_NE(std::string(e.what()).find("static.onnx: a batch of 8 was asked for, but the file's inputs have static shapes, which pin "
                                         "the batch (x [3, 5])"),
              std::string::npos)
        << e.what();
  }
  OnnxModel symbolic;
  symbolic.input("x", {-1, 5}, false, "batch");
  symbolic.node("Relu", {"x"}, {"y"});
  symbolic.output("y");
  const ImportedModel imported = import_onnx_bytes(symbolic.bytes(), "symbolic.onnx", library(), asked);
  EXPECT_EQ(imported.graph.shape_of(imported.graph.outputs().at(0)).dims, (std::vector<std::int64_t>{8, 5}));
}

// A static export at batch 1 is re-batched where the batch traces through the graph: each row of
// the re-batched model's output is the exported model's output for that row.
TEST(OnnxImportBatch, AStaticExportAtBatchOneIsRebatched) {
  const OnnxImportOptions asked = batch_of(4);
  OnnxModel m;
  m.input("x", {1, 3, 2});
  const TensorValue w = random_tensor({6, 5}, 3);
  m.initializer("w", {6, 5}, std::vector<float>(w.data.begin(), w.data.end()));
  OnnxModel::attr(m.node("Flatten", {"x"}, {"f"}), "axis", std::int64_t{1});
  m.node("MatMul", {"f", "w"}, {"h"});
  m.node("Relu", {"h"}, {"y"});
  m.output("y");
  const ImportedModel at_one = import_onnx_bytes(m.bytes(), "static.onnx", library());
  const ImportedModel at_four = import_onnx_bytes(m.bytes(), "static.onnx", library(), asked);
  EXPECT_EQ(at_four.graph.shape_of(at_four.graph.outputs().at(0)).dims, (std::vector<std::int64_t>{4, 5}));
  EXPECT_NE(std::find(at_four.notes.begin(), at_four.notes.end(), "the static export re-batched from 1 to 4 (--batch)"),
            at_four.notes.end());
  const TensorValue x = random_tensor({4, 3, 2}, 5);
  NamedValues feeds = at_four.constants;
  feeds.emplace("x", x);
  const TensorValue batched = evaluate(at_four.graph, feeds).at(0);
  for (std::int64_t row = 0; row < 4; ++row) {
    TensorValue one({1, 3, 2});
    std::copy(x.data.begin() + row * 6, x.data.begin() + (row + 1) * 6, one.data.begin());
    NamedValues one_feeds = at_one.constants;
    one_feeds.emplace("x", one);
    const TensorValue want = evaluate(at_one.graph, one_feeds).at(0);
    for (std::int64_t k = 0; k < 5; ++k) EXPECT_NEAR(batched.at({row, k}), want.at({0, k}), 1e-12) << "row " << row;
  }
}

// A node that fixes the batch (a Reshape to a shape with a 1, or one that folds the batch into
// another dimension) is named, with its output's shapes at both batches.
TEST(OnnxImportBatch, ANodeThatPinsTheBatchIsNamed) {
  const OnnxImportOptions asked = batch_of(8);
  for (const bool fixed_one : {true, false}) {
    OnnxModel m;
    m.input("x", {1, 16});
    m.int_initializer("shape", fixed_one ? std::vector<std::int64_t>{2} : std::vector<std::int64_t>{1},
                      fixed_one ? std::vector<std::int64_t>{1, 16} : std::vector<std::int64_t>{-1});
    m.node("Reshape", {"x", "shape"}, {"r"}, "pin");
    m.node("Relu", {"r"}, {"y"});
    m.output("y");
    const std::string message = pcg::test_support::error_of([&] { import_onnx_bytes(m.bytes(), "pinned.onnx", library(), asked); });
    EXPECT_NE(message.find("pinned.onnx: --batch 8 re-batches the static export, but "), std::string::npos) << message;
    EXPECT_NE(message.find("'pin' (Reshape)"), std::string::npos) << message;
    if (!fixed_one) {
      EXPECT_NE(message.find("pins the batch: its output 'r' is [16] at the exported batch of 1 and [128] at 8"), std::string::npos)
          << message;
    }
  }
}

// A graph whose shapes trace but whose output mixes the samples (r^T r sums over the batch) is
// refused, naming the output: no dimension of it is the batch.
TEST(OnnxImportBatch, AnOutputThatMixesTheSamplesIsRefused) {
  OnnxModel m;
  m.input("x", {1, 3});
  m.node("Relu", {"x"}, {"r"});
  m.node("Transpose", {"r"}, {"rt"});
  m.node("MatMul", {"rt", "r"}, {"y"});
  m.output("y");
  const std::string message = pcg::test_support::error_of([&] { import_onnx_bytes(m.bytes(), "gram.onnx", library(), batch_of(4)); });
  EXPECT_NE(message.find("output 'y' is [3, 3] at 4: none of its dimensions is the batch"), std::string::npos) << message;
  // At the batch the file has, nothing is re-batched and nothing is refused.
  const ImportedModel at_one = import_onnx_bytes(m.bytes(), "gram.onnx", library(), batch_of(1));
  EXPECT_EQ(at_one.graph.shape_of(at_one.graph.outputs().at(0)).dims, (std::vector<std::int64_t>{3, 3}));
}

}  // namespace
}  // namespace loom::models::test
