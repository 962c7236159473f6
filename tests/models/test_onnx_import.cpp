// ONNX import on small models built here the way PyTorch's and TensorFlow's exporters write them:
// weights as initializers or as graph inputs, shape arithmetic, the decomposed LayerNorm and GELU
// patterns, and the errors for what the library cannot express.
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "loom/models/load.hpp"
#include "loom/models/model_stats.hpp"
#include "loom/models/onnx_import.hpp"
#include "loom/pcg/diagnostic.hpp"
#include "loom/pcg/graph_json.hpp"
#include "support.hpp"

namespace loom::models::test {
namespace {

using std::int64_t;

// The model imported as the commands import it: fused with the bundled, proved import rules.
ImportedModel import(const OnnxModel& m, OnnxImportOptions options = {}) {
  options.fusion_rules = bundled_import_rules();
  return import_onnx_bytes(m.bytes(), "test.onnx", library(), options);
}

// A PyTorch-style 2-layer MLP: Gemm(x, W^T) with transB = 1, Relu, Gemm.
TEST(OnnxImport, GemmWithTransposedInitializersComputesTheMlp) {
  const TensorValue w1 = random_tensor({5, 4}, 1), b1 = random_tensor({5}, 2), w2 = random_tensor({3, 5}, 3), b2 = random_tensor({3}, 4),
                    x = random_tensor({2, 4}, 5);
  OnnxModel m;
  m.input("x", {2, 4});
  m.initializer("fc1.weight", {5, 4}, floats(w1));
  m.initializer("fc1.bias", {5}, floats(b1));
  m.initializer("fc2.weight", {3, 5}, floats(w2));
  m.initializer("fc2.bias", {3}, floats(b2));
  OnnxModel::attr(m.node("Gemm", {"x", "fc1.weight", "fc1.bias"}, {"h"}), "transB", 1);
  m.node("Relu", {"h"}, {"r"});
  OnnxModel::attr(m.node("Gemm", {"r", "fc2.weight", "fc2.bias"}, {"y"}), "transB", 1);
  m.output("y");
  const ImportedModel imported = import(m);
  EXPECT_EQ(count_ops(imported.graph, "linear"), 2u);
  EXPECT_EQ(count_ops(imported.graph, "transpose"), 0u);  // transposed at import time
  EXPECT_EQ(model_stats(imported.graph, library()).parameters, 5 * 4 + 5 + 3 * 5 + 3);
  // The reference, from the float32 values the file holds.
  auto f = [](double v) { return static_cast<double>(static_cast<float>(v)); };
  TensorValue want({2, 3});
  for (int64_t b = 0; b < 2; ++b) {
    for (int64_t o = 0; o < 3; ++o) {
      double y = f(b2.at({o}));
      for (int64_t k = 0; k < 5; ++k) {
        double h = f(b1.at({k}));
        for (int64_t i = 0; i < 4; ++i) h += f(x.at({b, i})) * f(w1.at({k, i}));
        y += std::max(h, 0.0) * f(w2.at({o, k}));
      }
      want.at({b, o}) = y;
    }
  }
  TensorValue xf = x;
  for (double& v : xf.data) v = f(v);
  expect_near_all(evaluate(imported.graph, with_constants(imported, {{"x", xf}})).at(0), want);
}

// An exporter run without parameters lists the weights as graph inputs.
TEST(OnnxImport, GraphInputsInWeightPositionsAreWeights) {
  OnnxModel m;
  m.input("image", {1, 3, 8, 8});
  m.input("conv.weight", {4, 3, 3, 3});
  m.input("conv.bias", {4});
  m.input("bn.scale", {4});
  m.input("bn.bias", {4});
  m.input("bn.mean", {4});
  m.input("bn.var", {4});
  m.input("fc.weight", {4, 2});
  auto& conv = m.node("Conv", {"image", "conv.weight", "conv.bias"}, {"c"});
  OnnxModel::attr(conv, "pads", std::vector<int64_t>{1, 1, 1, 1});
  m.node("BatchNormalization", {"c", "bn.scale", "bn.bias", "bn.mean", "bn.var"}, {"n"});
  m.node("GlobalAveragePool", {"n"}, {"p"});
  m.node("Flatten", {"p"}, {"f"});
  m.node("MatMul", {"f", "fc.weight"}, {"y"});
  m.output("y");
  const pcg::Graph g = import(m).graph;
  for (const std::string w : {"conv.weight", "conv.bias", "bn.scale", "bn.bias", "bn.mean", "bn.var", "fc.weight"}) {
    ASSERT_TRUE(g.find(w)) << w;
    EXPECT_EQ(g.node(*g.find(w)).op, pcg::kWeightOp) << w;
  }
  EXPECT_EQ(g.node(*g.find("image")).op, pcg::kInputOp);
  const ModelStats s = model_stats(g, library());
  EXPECT_EQ(s.parameters, 4 * 3 * 9 + 4 + 2 * 4 + 4 * 2);
  EXPECT_EQ(s.statistics, 2 * 4);
  EXPECT_EQ(g.shape_of(g.outputs().at(0)).dims, (std::vector<int64_t>{1, 2}));
}

// PyTorch's export of x.view(x.size(0), -1): Shape -> Gather -> Unsqueeze -> Concat -> Reshape.
TEST(OnnxImport, ShapeArithmeticIsFoldedAway) {
  OnnxModel m;
  m.input("x", {2, 3, 4});
  m.int_initializer("zero", {}, {0});
  m.int_initializer("minus_one", {1}, {-1});
  m.node("Shape", {"x"}, {"shape"});
  OnnxModel::attr(m.node("Gather", {"shape", "zero"}, {"batch"}), "axis", 0);
  m.int_initializer("axes", {1}, {0});
  m.node("Unsqueeze", {"batch", "axes"}, {"batch1"});
  OnnxModel::attr(m.node("Concat", {"batch1", "minus_one"}, {"target"}), "axis", 0);
  m.node("Reshape", {"x", "target"}, {"y"});
  m.output("y");
  const ImportedModel imported = import(m);
  EXPECT_EQ(imported.graph.shape_of(imported.graph.outputs().at(0)).dims, (std::vector<int64_t>{2, 12}));
  // Only the reshape itself remains: one merge of [3, 4].
  EXPECT_EQ(model_stats(imported.graph, library()).operators, 1u);
  const TensorValue x = random_tensor({2, 3, 4}, 9);
  const TensorValue y = evaluate(imported.graph, {{"x", x}}).at(0);
  EXPECT_EQ(y.data, x.data);  // a row-major reshape keeps the element order
}

// PyTorch (opset < 17) writes layer_norm as nine nodes.
void add_decomposed_layer_norm(OnnxModel& m, const std::string& x, const std::string& out, float eps) {
  OnnxModel::attr(m.node("ReduceMean", {x}, {"mean"}), "axes", std::vector<int64_t>{-1});
  m.node("Sub", {x, "mean"}, {"centered"});
  m.scalar("two", 2);
  m.node("Pow", {"centered", "two"}, {"squared"});
  OnnxModel::attr(m.node("ReduceMean", {"squared"}, {"var"}), "axes", std::vector<int64_t>{-1});
  m.scalar("eps", eps);
  m.node("Add", {"var", "eps"}, {"shifted"});
  m.node("Sqrt", {"shifted"}, {"deviation"});
  m.node("Div", {"centered", "deviation"}, {"normalized"});
  m.node("Mul", {"normalized", "ln.weight"}, {"scaled"});
  m.node("Add", {"scaled", "ln.bias"}, {out});
}

TEST(OnnxImport, DecomposedLayerNormBecomesOneOperator) {
  for (const float eps : {1e-5f, 1e-12f}) {
    SCOPED_TRACE("epsilon " + std::to_string(eps));
    const TensorValue gamma = random_tensor({6}, 1), beta = random_tensor({6}, 2), x = random_tensor({2, 3, 6}, 3);
    OnnxModel m;
    m.input("x", {2, 3, 6});
    m.initializer("ln.weight", {6}, floats(gamma));
    m.initializer("ln.bias", {6}, floats(beta));
    add_decomposed_layer_norm(m, "x", "y", eps);
    m.output("y");
    const ImportedModel imported = import(m);
    const ModelStats s = model_stats(imported.graph, library());
    EXPECT_EQ(s.operators, 1u);
    EXPECT_EQ(s.operators_by_type.count(eps == 1e-5f ? "layer_norm" : "layer_norm_eps"), 1u);
    const TensorValue y = evaluate(imported.graph, with_constants(imported, {{"x", x}})).at(0);
    for (int64_t b = 0; b < 2; ++b) {
      for (int64_t t = 0; t < 3; ++t) {
        double mu = 0, var = 0;
        for (int64_t k = 0; k < 6; ++k) mu += x.at({b, t, k}) / 6;
        for (int64_t k = 0; k < 6; ++k) var += (x.at({b, t, k}) - mu) * (x.at({b, t, k}) - mu) / 6;
        for (int64_t k = 0; k < 6; ++k) {
          const double want = (x.at({b, t, k}) - mu) / std::sqrt(var + static_cast<double>(eps)) * static_cast<float>(gamma.at({k})) +
                              static_cast<float>(beta.at({k}));
          EXPECT_NEAR(y.at({b, t, k}), want, 1e-9);
        }
      }
    }
  }
}

struct SpecEdit {
  std::string file, from, to;
};

// The bundled specs with `edits` made, loaded from a copy that is then removed.
spec::Library edited_specs(const std::vector<SpecEdit>& edits) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("loom_edited_specs_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::copy(spec::Library::default_specs_dir(), dir, fs::copy_options::recursive);
  auto edit = [&](const std::string& file, const std::string& from, const std::string& to) {
    std::ifstream in(dir / file);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto at = text.find(from);
    if (at == std::string::npos) throw std::runtime_error(file + " no longer holds " + from);
    text.replace(at, from.size(), to);
    std::ofstream(dir / file) << text;
  };
  for (const SpecEdit& e : edits) edit(e.file, e.from, e.to);
  spec::Library library = spec::Library::load({dir.string()});
  fs::remove_all(dir);
  return library;
}

// An exporter's decomposed LayerNorm of x [2, 6] with unit scale and zero shift.
OnnxModel plain_layer_norm(float eps) {
  OnnxModel m;
  m.input("x", {2, 6});
  m.initializer("ln.weight", {6}, std::vector<float>(6, 1.0f));
  m.initializer("ln.bias", {6}, std::vector<float>(6, 0.0f));
  add_decomposed_layer_norm(m, "x", "y", eps);
  m.output("y");
  return m;
}

// A BatchNormalization of x [2, 3, 2, 2] with its parameters as graph inputs.
OnnxModel batch_norm(float eps) {
  OnnxModel m;
  for (const char* name : {"bn.scale", "bn.bias", "bn.mean", "bn.var"}) m.input(name, {3});
  m.input("x", {2, 3, 2, 2});
  OnnxModel::attr_float(m.node("BatchNormalization", {"x", "bn.scale", "bn.bias", "bn.mean", "bn.var"}, {"y"}, "bn"), "epsilon", eps);
  m.output("y");
  return m;
}

// The importer reads the library's epsilons off its specs: a model's epsilon equal to the
// library's maps to the plain operator, any other is kept exactly.
TEST(OnnxImport, NormalizationsKeepTheModelsEpsilonWhateverTheLibrarysIs) {
  // layer_norm adds 1e-12 and batchnorm 1e-3.
  const spec::Library other = edited_specs(
      {{"ops/shape.loom", "sqrt(sq[*i] + 1e-5)", "sqrt(sq[*i] + 1e-12)"}, {"ops/conv.loom", "sqrt(var[f] + 1e-5)", "sqrt(var[f] + 1e-3)"}});
  const OnnxModel ln = plain_layer_norm(1e-12f), bn = batch_norm(1e-3f);
  const TensorValue x = random_tensor({2, 6}, 7), image = random_tensor({2, 3, 2, 2}, 8), ones = random_tensor({3}, 9);
  NamedValues bn_values{{"x", image}, {"bn.scale", ones}, {"bn.bias", ones}, {"bn.mean", ones}, {"bn.var", ones}};
  for (double& v : bn_values.at("bn.var").data) v = std::abs(v) + 0.01;
  for (const spec::Library* lib : {&library(), &other}) {
    const bool bundled = lib == &library();
    SCOPED_TRACE(bundled ? "bundled library" : "library with other epsilons");
    OnnxImportOptions with_rules;
    with_rules.fusion_rules = verifier::import_rules(*lib).rules;
    const ImportedModel ln_model = import_onnx_bytes(ln.bytes(), "ln.onnx", *lib, with_rules);
    EXPECT_EQ(count_ops(ln_model.graph, "layer_norm"), bundled ? 0u : 1u);
    EXPECT_EQ(count_ops(ln_model.graph, "layer_norm_eps"), bundled ? 1u : 0u);
    const TensorValue y = spec::evaluate_graph<spec::RealDomain>(*lib, ln_model.graph, with_constants(ln_model, {{"x", x}})).at(0);
    for (int64_t b = 0; b < 2; ++b) {
      double mu = 0, var = 0;
      for (int64_t k = 0; k < 6; ++k) mu += x.at({b, k}) / 6;
      for (int64_t k = 0; k < 6; ++k) var += (x.at({b, k}) - mu) * (x.at({b, k}) - mu) / 6;
      for (int64_t k = 0; k < 6; ++k) EXPECT_NEAR(y.at({b, k}), (x.at({b, k}) - mu) / std::sqrt(var + 1e-12), 1e-9);
    }
    const ImportedModel bn_model = import_onnx_bytes(bn.bytes(), "bn.onnx", *lib);
    EXPECT_EQ(count_ops(bn_model.graph, "scalar_add"), bundled ? 1u : 0u) << "the variance shifted by the epsilons' difference";
    const TensorValue z = spec::evaluate_graph<spec::RealDomain>(*lib, bn_model.graph, with_constants(bn_model, bn_values)).at(0);
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t c = 0; c < 3; ++c)
        for (int64_t i = 0; i < 4; ++i) {
          const double v = image.at({n, c, i / 2, i % 2}), s = ones.at({c}), var = bn_values.at("bn.var").at({c});
          EXPECT_NEAR(z.at({n, c, i / 2, i % 2}), (v - s) * s / std::sqrt(var + static_cast<double>(1e-3f)) + s, 1e-9);
        }
  }
}

// A library whose batchnorm adds no epsilon cannot take a model's: the node is refused, saying why.
TEST(OnnxImport, ALibraryNormalizationWithoutAnEpsilonIsReportedAtTheNode) {
  const spec::Library no_epsilon = edited_specs({{"ops/conv.loom", "sqrt(var[f] + 1e-5)", "sqrt(var[f])"}});
  try {
    import_onnx_bytes(batch_norm(1e-3f).bytes(), "bn.onnx", no_epsilon);
    FAIL() << "a batch normalization was imported into a library that cannot add its epsilon";
  } catch (const LoomError& e) {
    EXPECT_NE(std::string(e.what()).find("'bn' (BatchNormalization)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'batchnorm' does not compute x / sqrt(variance + epsilon)"), std::string::npos) << e.what();
  }
}

TEST(OnnxImport, DecomposedLayerNormWithAnOutsideReaderIsImportedNodeByNode) {
  OnnxModel m = plain_layer_norm(1e-5f);
  m.output("mean");  // an intermediate value is also an output: the pattern must not swallow it
  const ImportedModel imported = import(m);
  EXPECT_EQ(count_ops(imported.graph, "layer_norm"), 0u);
  EXPECT_GE(count_ops(imported.graph, "reduce_mean_keep"), 2u);
  const TensorValue x = random_tensor({2, 6}, 4);
  const auto out = evaluate(imported.graph, with_constants(imported, {{"x", x}}));
  for (int64_t b = 0; b < 2; ++b) {
    double mu = 0;
    for (int64_t k = 0; k < 6; ++k) mu += x.at({b, k}) / 6;
    EXPECT_NEAR(out.at(1).at({b, 0}), mu, 1e-12);
  }
}

TEST(OnnxImport, ErfGeluPatternBecomesGelu) {
  OnnxModel m;
  m.input("x", {3, 5});
  m.scalar("sqrt2", 1.4142135f);
  m.scalar("one", 1);
  m.scalar("half", 0.5f);
  m.node("Div", {"x", "sqrt2"}, {"u"});
  m.node("Erf", {"u"}, {"e"});
  m.node("Add", {"e", "one"}, {"a"});
  m.node("Mul", {"x", "a"}, {"p"});
  m.node("Mul", {"p", "half"}, {"y"});
  m.output("y");
  const ImportedModel imported = import(m);
  EXPECT_EQ(model_stats(imported.graph, library()).operators, 1u);
  EXPECT_EQ(count_ops(imported.graph, "gelu"), 1u);
  const TensorValue x = random_tensor({3, 5}, 6);
  const TensorValue y = evaluate(imported.graph, {{"x", x}}).at(0);
  for (std::size_t i = 0; i < x.size(); ++i) {
    EXPECT_NEAR(y.data[i], 0.5 * x.data[i] * (1 + std::erf(x.data[i] / std::sqrt(2.0))), 1e-12);
  }
}

// One attention head as a transformer exporter writes it: MatMul + bias Add, Reshape to heads,
// Transpose, scaled scores, Softmax, MatMul, Transpose back, Reshape.
TEST(OnnxImport, ExportedSelfAttentionMatchesAReference) {
  const int64_t b = 2, s = 3, h = 4, heads = 2, d = 2;
  const TensorValue wq = random_tensor({h, h}, 1), bq = random_tensor({h}, 2), x = random_tensor({b, s, h}, 3);
  OnnxModel m;
  m.input("x", {b, s, h});
  m.initializer("q.weight", {h, h}, floats(wq));
  m.initializer("q.bias", {h}, floats(bq));
  m.int_initializer("split_heads", {4}, {b, s, heads, d});
  m.int_initializer("merge_heads", {3}, {b, s, h});
  m.scalar("scale", static_cast<float>(std::sqrt(static_cast<double>(d))));
  m.node("MatMul", {"x", "q.weight"}, {"xw"});
  m.node("Add", {"xw", "q.bias"}, {"q"});
  m.node("Reshape", {"q", "split_heads"}, {"q4"});
  OnnxModel::attr(m.node("Transpose", {"q4"}, {"qt"}), "perm", std::vector<int64_t>{0, 2, 1, 3});
  OnnxModel::attr(m.node("Transpose", {"q4"}, {"kt"}), "perm", std::vector<int64_t>{0, 2, 3, 1});
  m.node("MatMul", {"qt", "kt"}, {"scores"});
  m.node("Div", {"scores", "scale"}, {"scaled"});
  OnnxModel::attr(m.node("Softmax", {"scaled"}, {"probs"}), "axis", -1);
  m.node("MatMul", {"probs", "qt"}, {"context"});
  OnnxModel::attr(m.node("Transpose", {"context"}, {"ct"}), "perm", std::vector<int64_t>{0, 2, 1, 3});
  m.node("Reshape", {"ct", "merge_heads"}, {"y"});
  m.output("y");
  const ImportedModel imported = import(m);
  EXPECT_EQ(count_ops(imported.graph, "bias_add"), 1u);
  EXPECT_EQ(count_ops(imported.graph, "batch_matmul"), 2u);
  const TensorValue y = evaluate(imported.graph, with_constants(imported, {{"x", x}})).at(0);
  // Reference: q = x W + b (queries, keys and values alike), per head softmax(q q^T / sqrt d) q.
  auto f = [](double v) { return static_cast<double>(static_cast<float>(v)); };
  TensorValue q({b, s, h});
  for (int64_t i = 0; i < b; ++i)
    for (int64_t t = 0; t < s; ++t)
      for (int64_t o = 0; o < h; ++o) {
        double acc = f(bq.at({o}));
        for (int64_t k = 0; k < h; ++k) acc += x.at({i, t, k}) * f(wq.at({k, o}));
        q.at({i, t, o}) = acc;
      }
  for (int64_t i = 0; i < b; ++i)
    for (int64_t a = 0; a < heads; ++a)
      for (int64_t t = 0; t < s; ++t) {
        std::vector<double> p(static_cast<std::size_t>(s));
        double total = 0;
        for (int64_t u = 0; u < s; ++u) {
          double dot = 0;
          for (int64_t c = 0; c < d; ++c) dot += q.at({i, t, a * d + c}) * q.at({i, u, a * d + c});
          p[static_cast<std::size_t>(u)] = std::exp(dot / f(std::sqrt(2.0)));
          total += p[static_cast<std::size_t>(u)];
        }
        for (int64_t c = 0; c < d; ++c) {
          double want = 0;
          for (int64_t u = 0; u < s; ++u) want += p[static_cast<std::size_t>(u)] / total * q.at({i, u, a * d + c});
          EXPECT_NEAR(y.at({i, t, a * d + c}), want, 1e-6);
        }
      }
}

TEST(OnnxImport, EveryUnsupportedNodeIsListedAndNothingIsReturned) {
  OnnxModel m;
  m.input("x", {2, 4, 3});
  m.node("LSTM", {"x"}, {"y1"}, "encoder_lstm");
  m.node("Relu", {"x"}, {"r"});
  m.node("NonMaxSuppression", {"r"}, {"y2"}, "nms");
  m.output("y1");
  m.output("y2");
  try {
    import(m);
    FAIL() << "a model with unsupported operators was imported";
  } catch (const LoomError& e) {
    ASSERT_EQ(e.diagnostics().size(), 2u) << e.what();
    EXPECT_EQ(e.diagnostics()[0].where.file, "test.onnx");
    EXPECT_NE(e.diagnostics()[0].message.find("'encoder_lstm' (LSTM)"), std::string::npos) << e.what();
    EXPECT_NE(e.diagnostics()[1].message.find("'nms' (NonMaxSuppression)"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).rfind("test.onnx: node", 0), 0u) << e.what();
  }
}

TEST(OnnxImport, UnsupportedFormsOfSupportedOperatorsAreAllReported) {
  OnnxModel m;
  m.input("x", {1, 2, 6, 6});
  OnnxModel::attr_string(m.node("Pad", {"x", "pads"}, {"p"}, "reflect_pad"), "mode", "reflect");
  m.int_initializer("pads", {8}, {0, 0, 1, 1, 0, 0, 1, 1});
  auto& pool = m.node("MaxPool", {"x"}, {"q"}, "dilated_pool");
  OnnxModel::attr(pool, "kernel_shape", std::vector<int64_t>{2, 2});
  OnnxModel::attr(pool, "dilations", std::vector<int64_t>{2, 2});
  m.node("Relu", {"q"}, {"r"});  // depends on a failed node: not reported again
  m.output("p");
  m.output("r");
  try {
    import(m);
    FAIL() << "unsupported attributes were accepted";
  } catch (const LoomError& e) {
    ASSERT_EQ(e.diagnostics().size(), 2u) << e.what();
    EXPECT_NE(e.diagnostics()[0].message.find("'reflect_pad' (Pad): only constant padding"), std::string::npos) << e.what();
    EXPECT_NE(e.diagnostics()[1].message.find("'dilated_pool' (MaxPool): dilations"), std::string::npos) << e.what();
  }
}

TEST(OnnxImport, NotAnOnnxFileIsAClearError) {
  try {
    import_onnx_bytes("definitely not protobuf \x01\x02", "junk.onnx", library());
    FAIL();
  } catch (const LoomError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("junk.onnx: not an ONNX model", 0), 0u) << e.what();
  }
  EXPECT_THROW(import_onnx_file("/nonexistent/model.onnx", library()), LoomError);
}

TEST(OnnxImport, SymbolicDimensionsTakeGivenOrDefaultValues) {
  OnnxModel m;
  m.input("tokens", {-1, 5}, false, "batch");
  m.node("Relu", {"tokens"}, {"y"});
  m.output("y");
  ImportedModel defaulted = import(m);
  EXPECT_EQ(defaulted.graph.shape_of(defaulted.graph.outputs().at(0)).dims, (std::vector<int64_t>{1, 5}));
  ASSERT_EQ(defaulted.notes.size(), 1u);
  EXPECT_NE(defaulted.notes[0].find("'batch'"), std::string::npos);
  OnnxImportOptions options;
  options.dims["batch"] = 8;
  ImportedModel given = import(m, options);
  EXPECT_EQ(given.graph.shape_of(given.graph.outputs().at(0)).dims, (std::vector<int64_t>{8, 5}));
  EXPECT_TRUE(given.notes.empty());
}

TEST(OnnxImport, GatherOfIdsFromAnInitializerIsAnEmbeddingLookup) {
  // Gather of integer ids from an initializer table: an embedding lookup.
  OnnxModel m;
  m.input("ids", {2, 3}, true);
  const TensorValue table = random_tensor({7, 4}, 8);
  m.initializer("emb.weight", {7, 4}, floats(table));
  m.node("Gather", {"emb.weight", "ids"}, {"y"});
  m.output("y");
  const ImportedModel imported = import(m);
  EXPECT_EQ(count_ops(imported.graph, "gather_rows"), 1u);
  TensorValue ids({2, 3});
  ids.data = {0, 6, 3, 2, 2, 5};
  const TensorValue y = evaluate(imported.graph, with_constants(imported, {{"ids", ids}})).at(0);
  for (int64_t i = 0; i < 6; ++i) {
    for (int64_t k = 0; k < 4; ++k) {
      EXPECT_DOUBLE_EQ(y.data[static_cast<std::size_t>(i * 4 + k)],
                       static_cast<float>(table.at({static_cast<int64_t>(ids.data[static_cast<std::size_t>(i)]), k})));
    }
  }
}

// What `loom import --out` writes reads back as the same graph.
// Malformed nodes are refused with what is wrong before anything reads them by position.
TEST(OnnxImport, NodesMissingInputsOrOutputsAreRefusedByName) {
  OnnxModel m;
  m.input("x", {2, 4});
  m.node("Add", {}, {"y"});
  m.node("Relu", {"x"}, {});
  m.output("y");
  try {
    import(m);
    FAIL() << "imported";
  } catch (const LoomError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("test.onnx: node #0 (Add) producing 'y': Add takes 2 inputs, the node has 0"), std::string::npos) << what;
    EXPECT_NE(what.find("test.onnx: node #1 (Relu): the node gives no output"), std::string::npos) << what;
  }
}

// External data must lie beside the model: an absolute path or one climbing out is refused
// before any file is opened.
TEST(OnnxImport, ExternalDataOutsideTheModelsFolderIsRefused) {
  for (const std::string location : {"/etc/passwd", "../secret.bin", "weights/../../x.bin"}) {
    OnnxModel m;
    m.input("x", {2, 4});
    m.external_initializer("w", {4, 3}, location);
    m.node("MatMul", {"x", "w"}, {"y"});
    m.output("y");
    try {
      import(m);
      FAIL() << location << " imported";
    } catch (const LoomError& e) {
      EXPECT_NE(std::string(e.what()).find("external data location '" + location + "' is not a path inside the model's folder"),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(OnnxImport, ImportedGraphsRoundTripThroughJson) {
  OnnxModel m;
  m.input("x", {2, 3, 4});
  m.initializer("w", {4, 5}, std::vector<float>(20, 0.5f));
  m.node("MatMul", {"x", "w"}, {"h"});
  OnnxModel::attr(m.node("Transpose", {"h"}, {"t"}), "perm", std::vector<int64_t>{2, 0, 1});
  OnnxModel::attr(m.node("Softmax", {"t"}, {"y"}), "axis", 1);
  m.output("y");
  const pcg::Graph g = import(m).graph;
  EXPECT_EQ(pcg::graph_from_json(pcg::graph_to_json(g), library()), g);
}

TEST(OnnxImport, LoadModelTakesZooNamesAndOnnxPaths) {
  ModelRequest zoo;
  zoo.model = "mlp_fig1";
  zoo.params["batch"] = 4;
  const LoadedModel built = load_model(library(), zoo);
  EXPECT_FALSE(built.from_onnx);
  EXPECT_EQ(built.graph.shape_of(built.graph.outputs().at(0)).dims, (std::vector<int64_t>{4, 10}));
  ModelRequest onnx_with_params;
  onnx_with_params.model = "model.onnx";
  onnx_with_params.params["batch"] = 4;
  EXPECT_THROW(load_model(library(), onnx_with_params), LoomError);
  std::map<std::string, int64_t> values;
  parse_assignment("layers=3", values);
  EXPECT_EQ(values.at("layers"), 3);
  EXPECT_THROW(parse_assignment("layers", values), LoomError);
  EXPECT_THROW(parse_assignment("layers=three", values), LoomError);
}

}  // namespace
}  // namespace loom::models::test
