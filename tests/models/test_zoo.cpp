// The model zoo: every model builds at its published sizes, type-checks, and has the operator and
// parameter counts of its architecture (computed here from the architecture's definition, and
// compared with the published totals); small instances evaluate in the interpreter.
#include <cmath>
#include <numeric>

#include "loom/models/model_stats.hpp"
#include "loom/models/registry.hpp"
#include "loom/pcg/diagnostic.hpp"
#include "support.hpp"

namespace loom::models::test {
namespace {

using std::int64_t;

ModelStats stats_of(const std::string& name, const ParamValues& values = {}) {
  return model_stats(build_model(library(), name, values), library());
}

std::size_t ops_of(const ModelStats& s, const std::string& op) {
  auto it = s.operators_by_type.find(op);
  return it == s.operators_by_type.end() ? 0 : it->second;
}

class EveryZooModel : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryZooModel, BuildsAtItsDefaultSizesAndTypeChecks) {
  const pcg::Graph g = build_model(library(), GetParam());
  EXPECT_NO_THROW(g.validate(library()));
  EXPECT_FALSE(g.outputs().empty());
  const ModelStats s = model_stats(g, library());
  EXPECT_GT(s.operators, 0u);
  EXPECT_GT(s.parameters, 0);
  EXPECT_GT(s.forward_flops, 0);
  // Every weight is read by some operator, and every operator output leads somewhere.
  std::vector<bool> read(g.size(), false);
  for (const auto& n : g.nodes())
    for (const auto& in : n.inputs) read[in.node.index()] = true;
  for (const auto& out : g.outputs()) read[out.node.index()] = true;
  for (const auto& n : g.nodes()) EXPECT_TRUE(read[n.id.index()]) << n.describe() << " is unused";
}

std::vector<std::string> zoo_names() {
  std::vector<std::string> names;
  for (const auto& m : model_zoo()) names.push_back(m.name);
  return names;
}

INSTANTIATE_TEST_SUITE_P(Zoo, EveryZooModel, ::testing::ValuesIn(zoo_names()));

TEST(Zoo, ListsTheModelsOfTheIssueInOrder) {
  EXPECT_EQ(zoo_names(),
            (std::vector<std::string>{"resnext50", "inception_v3", "bert_large", "dlrm", "xdl", "candle_uno", "mlp", "mlp_fig1", "alexnet",
                                      "resnet101", "rnntc", "rnnlm", "nmt", "swin", "gpt3", "mbart", "alphafold2"}));
}

// ---- parameter counts from the architectures ------------------------------------------------

struct ResNetCounts {
  int64_t parameters = 0, statistics = 0, convs = 0;
};

// torchvision's ResNet / ResNeXt: a 7x7 stem, bottlenecks (1x1, grouped 3x3, 1x1 with 4x expansion),
// a projection shortcut in each stage's first block, batch norm (weight and bias trainable, mean
// and variance statistics) after every convolution, a 1000-way classifier.
ResNetCounts resnet_counts(const std::vector<int>& blocks, int64_t groups, int64_t width_per_group) {
  ResNetCounts c;
  auto conv_bn = [&](int64_t in, int64_t out, int64_t k, int64_t g) {
    c.parameters += out * (in / g) * k * k + 2 * out;
    c.statistics += 2 * out;
    ++c.convs;
  };
  conv_bn(3, 64, 7, 1);
  int64_t in = 64;
  for (std::size_t s = 0; s < blocks.size(); ++s) {
    const int64_t planes = int64_t{64} << s, width = planes * width_per_group / 64 * groups, out = planes * 4;
    for (int b = 0; b < blocks[s]; ++b) {
      conv_bn(in, width, 1, 1);
      conv_bn(width, width, 3, groups);
      conv_bn(width, out, 1, 1);
      if (b == 0) conv_bn(in, out, 1, 1);
      in = out;
    }
  }
  c.parameters += 2048 * 1000 + 1000;
  return c;
}

TEST(ZooCounts, ResNet101MatchesTorchvision) {
  const ResNetCounts want = resnet_counts({3, 4, 23, 3}, 1, 64);
  EXPECT_EQ(want.parameters, 44549160);  // torchvision's resnet101
  const ModelStats s = stats_of("resnet101");
  EXPECT_EQ(s.parameters, want.parameters);
  EXPECT_EQ(s.statistics, want.statistics);
  EXPECT_EQ(static_cast<int64_t>(ops_of(s, "conv2d")), want.convs);
  EXPECT_EQ(ops_of(s, "batchnorm"), ops_of(s, "conv2d"));
  EXPECT_EQ(ops_of(s, "ewadd"), 33u);  // one residual add per bottleneck
}

TEST(ZooCounts, ResNeXt50MatchesTorchvision) {
  const ResNetCounts want = resnet_counts({3, 4, 6, 3}, 32, 4);
  EXPECT_EQ(want.parameters, 25028904);  // torchvision's resnext50_32x4d
  const ModelStats s = stats_of("resnext50");
  EXPECT_EQ(s.parameters, want.parameters);
  EXPECT_EQ(s.statistics, want.statistics);
  EXPECT_EQ(static_cast<int64_t>(ops_of(s, "conv2d") + ops_of(s, "conv2d_grouped")), want.convs);
  EXPECT_EQ(ops_of(s, "conv2d_grouped"), 16u);
}

TEST(ZooCounts, InceptionV3MatchesTorchvisionWithoutTheAuxiliaryHead) {
  // torchvision's inception_v3 has 27,161,264 parameters with the auxiliary classifier; that head is
  // conv 768->128 (1x1) + bn, conv 128->768 (5x5) + bn, and fc 768->1000.
  const int64_t aux = 768 * 128 + 2 * 128 + 128 * 768 * 25 + 2 * 768 + 768 * 1000 + 1000;
  const ModelStats s = stats_of("inception_v3");
  EXPECT_EQ(s.parameters, 27161264 - aux);
  EXPECT_EQ(ops_of(s, "conv2d"), 94u);  // 5 stem + 3 x 7 (A) + 4 (B) + 4 x 10 (C) + 6 (D) + 2 x 9 (E)
  EXPECT_EQ(ops_of(s, "batchnorm"), 94u);
  EXPECT_EQ(ops_of(s, "relu"), 94u);
  // n-way concatenations as chains of binary ones: A 3 x 3, B 2, C 4 x 3, D 2, E 2 x (3 + 1 + 1).
  EXPECT_EQ(ops_of(s, "concat"), 35u);
  EXPECT_EQ(ops_of(s, "pool2d_max") + ops_of(s, "pool2d_avg") + ops_of(s, "global_avg_pool"), 14u);
  // Unity's 323 operators count each module's concatenation once (11), and the auxiliary head.
  EXPECT_EQ(s.operators - ops_of(s, "concat") + 11, 311u);
}

TEST(ZooCounts, BertLargeHas335MParametersWithEmbeddingsAndPooler) {
  const int64_t h = 1024, layers = 24, vocab = 30522, positions = 512;
  const int64_t per_layer = 4 * (h * h + h) + 2 * h + (h * 4 * h + 4 * h) + (4 * h * h + h) + 2 * h;
  const int64_t want = vocab * h + positions * h + 2 * h + 2 * h + layers * per_layer + h * h + h;
  EXPECT_EQ(want, 335141888);
  const ModelStats s = stats_of("bert_large");
  EXPECT_EQ(s.parameters, want);
  EXPECT_EQ(ops_of(s, "head_proj"), 3u * 24);
  EXPECT_EQ(ops_of(s, "softmax"), 24u);
  EXPECT_EQ(ops_of(s, "layer_norm"), 2u * 24 + 1);
  EXPECT_EQ(ops_of(s, "gather_rows"), 3u);
}

TEST(ZooCounts, AlexNetHas61MParameters) {
  const int64_t want = (3 * 64 * 121 + 64) + (64 * 192 * 25 + 192) + (192 * 384 * 9 + 384) + (384 * 256 * 9 + 256) + (256 * 256 * 9 + 256) +
                       (9216 * 4096 + 4096) + (4096 * 4096 + 4096) + (4096 * 1000 + 1000);
  EXPECT_EQ(want, 61100840);
  const ModelStats s = stats_of("alexnet");
  EXPECT_EQ(s.parameters, want);
  EXPECT_EQ(ops_of(s, "conv2d"), 5u);
  EXPECT_EQ(ops_of(s, "linear"), 3u);
}

TEST(ZooCounts, MlpsMatchUnity) {
  EXPECT_EQ(stats_of("mlp_fig1").parameters, 784 * 512 + 512 * 10);
  // Unity's figure 2a: the all-reduce of data parallelism moves 2 (ci h + h co) values per device.
  EXPECT_EQ(2 * stats_of("mlp_fig1").parameters, 813056);
  const ModelStats s = stats_of("mlp");
  EXPECT_EQ(ops_of(s, "matmul"), 16u);
  EXPECT_EQ(s.parameters, 2 * (1024 * 8192 + 7 * int64_t{8192} * 8192));
}

TEST(ZooCounts, DlrmUsesTheCriteoKaggleTables) {
  const std::vector<int64_t> rows = {1460, 583,   10131227, 2202608, 305,  24,   12517, 633,     3,  93145, 5683,   8351593, 3194,
                                     27,   14992, 5461306,  10,      5652, 2173, 4,     7046547, 18, 15,    286181, 105,     142572};
  const int64_t embeddings = std::accumulate(rows.begin(), rows.end(), int64_t{0}) * 16;
  const int64_t bottom = (13 * 512 + 512) + (512 * 256 + 256) + (256 * 64 + 64) + (64 * 16 + 16);
  const int64_t top = (27 * 16 * 512 + 512) + (512 * 256 + 256) + (256 + 1);
  const ModelStats s = stats_of("dlrm");
  EXPECT_EQ(s.parameters, embeddings + bottom + top);
  EXPECT_EQ(ops_of(s, "embedding_bag"), 26u);
  EXPECT_EQ(ops_of(s, "concat"), 26u);
}

TEST(ZooCounts, XdlAndCandleUnoFollowFlexFlow) {
  EXPECT_EQ(stats_of("xdl").parameters, 4 * 1000000 * 64 + 256 * 256 + 256 * 256 + 256 * 2);
  const int64_t n = 4192;
  const int64_t encoders = (942 * n + 7 * n * n) + 2 * (5270 * n + 7 * n * n) + 2 * (2048 * n + 7 * n * n);
  const int64_t head = (5 * n + 2) * n + 3 * n * n + n;
  const ModelStats s = stats_of("candle_uno");
  EXPECT_EQ(s.parameters, encoders + head);
  EXPECT_EQ(ops_of(s, "matmul"), 5u * 8 + 4 + 1);
}

TEST(ZooCounts, RecurrentModelsAreUnrolled40Steps) {
  auto lstm = [](int64_t in, int64_t n) { return in * 4 * n + n * 4 * n + 4 * n; };
  const ModelStats tc = stats_of("rnntc");
  EXPECT_EQ(ops_of(tc, "lstm_cell"), 4u * 40);
  EXPECT_EQ(tc.parameters, 20480 * 1024 + 4 * lstm(1024, 1024) + 1024 * 2 + 2);
  const ModelStats lm = stats_of("rnnlm");
  EXPECT_EQ(ops_of(lm, "lstm_cell"), 2u * 40);
  EXPECT_EQ(ops_of(lm, "softmax"), 40u);
  EXPECT_EQ(lm.parameters, 10000 * 2048 + 2 * lstm(2048, 2048) + 2048 * 10000 + 10000);
  const ModelStats nmt = stats_of("nmt");
  EXPECT_EQ(ops_of(nmt, "lstm_cell"), 2u * 2 * 40);
  EXPECT_EQ(ops_of(nmt, "dot_attention"), 40u);
  EXPECT_EQ(nmt.parameters, 2 * 20480 * 1024 + 4 * lstm(1024, 1024) + (2048 * 1024 + 1024) + 1024 * 20480 + 20480);
}

TEST(ZooCounts, SuperScalerModelsTakeTable2Sizes) {
  const std::vector<int64_t> gpt3_hidden = {2048, 2560, 4096, 5120};
  for (int64_t size = 0; size < 4; ++size) {
    const int64_t h = gpt3_hidden[static_cast<std::size_t>(size)];
    EXPECT_EQ(stats_of("gpt3", {{"size", size}, {"seq", 2048}}).parameters, 12 * h * h + 13 * h) << "size " << size;
  }
  // Table 2's 1.3B GPT-3: 24 blocks, the token embeddings (tied with the LM head) and 2048 positions.
  const int64_t h = 2048;
  const ModelStats full = stats_of("gpt3", {{"layers", 24}, {"embeddings", 1}, {"seq", 2048}});
  EXPECT_EQ(full.parameters, 24 * (12 * h * h + 13 * h) + 50257 * h + 2048 * h + 2 * h);
  EXPECT_NEAR(static_cast<double>(full.parameters) / 1e9, 1.3, 0.05);

  const int64_t m = 3072, vocab = 500000, positions = 1026;
  const int64_t encoder = 12 * m * m + 13 * m, decoder = 16 * m * m + 19 * m;
  EXPECT_EQ(stats_of("mbart").parameters, vocab * m + 2 * (positions * m + 2 * m) + encoder + decoder + 2 * 2 * m);

  const int64_t c = 512, ws = 24, heads = 16;
  EXPECT_EQ(stats_of("swin").parameters, 2 * (12 * c * c + 13 * c + (2 * ws - 1) * (2 * ws - 1) * heads));
}

TEST(ZooCounts, AlphaFold2EvoformerBlockFollowsTheSupplement) {
  const int64_t cm = 256, cz = 128, h = 8, hp = 4, d = 32, opm = 32;
  const int64_t gated = [&](int64_t cin, int64_t heads) {
    return 2 * cin + 3 * cin * heads * d + (cin * heads * d + heads * d) + (heads * d * cin + cin);
  }(cm, h);
  const int64_t row = gated + 2 * cz + cz * h;
  const int64_t column = gated;
  auto transition = [](int64_t c) { return 2 * c + (c * 4 * c + 4 * c) + (4 * c * c + c); };
  const int64_t outer = 2 * cm + 2 * (cm * opm + opm) + (opm * opm * cz + cz);
  const int64_t triangle_mult = 2 * cz + 4 * (cz * cz + cz) + 2 * cz + (cz * cz + cz) + (cz * cz + cz);
  const int64_t triangle_attention = 2 * cz + 3 * cz * hp * d + (cz * hp * d + hp * d) + (hp * d * cz + cz) + cz * hp;
  const int64_t want = row + column + transition(cm) + outer + 2 * triangle_mult + 2 * triangle_attention + transition(cz);
  const ModelStats s = stats_of("alphafold2");
  EXPECT_EQ(s.parameters, want);
  // SuperScaler's table 2 gives 87M for 48 such blocks.
  EXPECT_NEAR(48.0 * static_cast<double>(want) / 1e6, 87, 2);
  EXPECT_EQ(ops_of(s, "add_pair_bias"), 3u);
  EXPECT_EQ(ops_of(s, "triangle_mult_out") + ops_of(s, "triangle_mult_in"), 2u);
}

// ---- parameters and errors -----------------------------------------------------------------------

TEST(ZooParameters, SizesFollowTheGivenValues) {
  const pcg::Graph g = build_model(library(), "mlp_fig1", {{"batch", 8}, {"hidden", 32}});
  EXPECT_EQ(g.shape_of(g.outputs().at(0)).dims, (std::vector<int64_t>{8, 10}));
  EXPECT_EQ(model_stats(g, library()).parameters, 784 * 32 + 32 * 10);
}

TEST(ZooParameters, UnknownModelsAndParametersAreNamed) {
  try {
    build_model(library(), "resnet9000");
    FAIL() << "an unknown model was built";
  } catch (const LoomError& e) {
    EXPECT_NE(std::string(e.what()).find("resnet9000"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("resnet101"), std::string::npos);  // the zoo is listed
  }
  try {
    build_model(library(), "bert_large", {{"depth", 3}});
    FAIL() << "an unknown parameter was accepted";
  } catch (const LoomError& e) {
    EXPECT_NE(std::string(e.what()).find("depth"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("layers"), std::string::npos);
  }
  EXPECT_THROW(build_model(library(), "bert_large", {{"heads", 5}}), LoomError);  // 1024 % 5 != 0
  EXPECT_THROW(build_model(library(), "gpt3", {{"size", 7}}), LoomError);
  EXPECT_THROW(build_model(library(), "resnet101", {{"batch", 0}}), LoomError);
}

// ---- small instances in the interpreter ------------------------------------------------------------

TEST(ZooEvaluation, EveryModelHasASmallInstance) {
  for (const auto& name : zoo_names()) EXPECT_TRUE(tiny_sizes().count(name)) << name;
}

TEST_P(EveryZooModel, SmallInstanceEvaluatesToFiniteValues) {
  const pcg::Graph g = build_model(library(), GetParam(), tiny_sizes().at(GetParam()));
  const auto outputs = evaluate(g, random_values(library(), g, 7));
  ASSERT_EQ(outputs.size(), g.outputs().size());
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    EXPECT_EQ(outputs[i].dims, g.shape_of(g.outputs()[i]).dims);
    for (double v : outputs[i].data) ASSERT_TRUE(std::isfinite(v)) << "output " << i;
  }
  // A softmax output is a distribution over its last dimension.
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    if (g.node(g.outputs()[i].node).op != "softmax") continue;
    const std::size_t n = static_cast<std::size_t>(outputs[i].dims.back());
    for (std::size_t row = 0; row < outputs[i].size() / n; ++row) {
      double sum = 0;
      for (std::size_t k = 0; k < n; ++k) sum += outputs[i].data[row * n + k];
      EXPECT_NEAR(sum, 1.0, 1e-9);
    }
  }
}

TEST(ZooEvaluation, Fig1MlpComputesReluOfProductsTimesWeights) {
  const pcg::Graph g = build_model(library(), "mlp_fig1", tiny_sizes().at("mlp_fig1"));
  const NamedValues values = random_values(library(), g, 3);
  const TensorValue& x = values.at("x");
  const TensorValue& w1 = values.at("fc1.weight");
  const TensorValue& w2 = values.at("fc2.weight");
  TensorValue want({2, 3});
  for (int64_t b = 0; b < 2; ++b) {
    for (int64_t o = 0; o < 3; ++o) {
      double acc = 0;
      for (int64_t h = 0; h < 5; ++h) {
        double z = 0;
        for (int64_t i = 0; i < 6; ++i) z += x.at({b, i}) * w1.at({i, h});
        acc += std::max(z, 0.0) * w2.at({h, o});
      }
      want.at({b, o}) = acc;
    }
  }
  expect_near_all(evaluate(g, values).at(0), want);
}

TEST(ZooEvaluation, OneLstmStepMatchesTheGateEquations) {
  const pcg::Graph g = build_model(library(), "rnnlm", {{"batch", 2}, {"steps", 1}, {"layers", 1}, {"hidden", 3}, {"vocab", 5}});
  const NamedValues v = random_values(library(), g, 11);
  const TensorValue &ids = v.at("input.tokens0"), &table = v.at("embedding"), &w = v.at("lstm.layer0.weight_ih"),
                    &u = v.at("lstm.layer0.weight_hh"), &bias = v.at("lstm.layer0.bias"), &h0 = v.at("lstm.layer0.h0"),
                    &c0 = v.at("lstm.layer0.c0"), &wo = v.at("decoder.weight"), &bo = v.at("decoder.bias");
  auto sigmoid = [](double z) { return 1 / (1 + std::exp(-z)); };
  TensorValue want({2, 5});
  for (int64_t b = 0; b < 2; ++b) {
    const auto row = static_cast<int64_t>(ids.at({b}));
    std::vector<double> z(12), h(3);
    for (int64_t j = 0; j < 12; ++j) {
      z[static_cast<std::size_t>(j)] = bias.at({j});
      for (int64_t p = 0; p < 3; ++p) z[static_cast<std::size_t>(j)] += table.at({row, p}) * w.at({p, j}) + h0.at({b, p}) * u.at({p, j});
    }
    for (std::size_t j = 0; j < 3; ++j) {
      const double c = sigmoid(z[3 + j]) * c0.at({b, static_cast<int64_t>(j)}) + sigmoid(z[j]) * std::tanh(z[6 + j]);
      h[j] = sigmoid(z[9 + j]) * std::tanh(c);
    }
    std::vector<double> logits(5);
    double total = 0;
    for (int64_t o = 0; o < 5; ++o) {
      double s = bo.at({o});
      for (int64_t j = 0; j < 3; ++j) s += h[static_cast<std::size_t>(j)] * wo.at({j, o});
      logits[static_cast<std::size_t>(o)] = std::exp(s);
      total += logits[static_cast<std::size_t>(o)];
    }
    for (int64_t o = 0; o < 5; ++o) want.at({b, o}) = logits[static_cast<std::size_t>(o)] / total;
  }
  expect_near_all(evaluate(g, v).at(0), want);
}

TEST(ZooEvaluation, Gpt3AttentionIsCausal) {
  const pcg::Graph g = build_model(library(), "gpt3", tiny_sizes().at("gpt3"));
  NamedValues v = random_values(library(), g, 5);
  const TensorValue before = evaluate(g, v).at(0);
  // Change the last position's input: earlier positions' outputs must not move, the last must.
  TensorValue& x = v.at("hidden_states");
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t k = 0; k < 8; ++k) x.at({b, 3, k}) += 0.5;
  const TensorValue after = evaluate(g, v).at(0);
  for (int64_t b = 0; b < 2; ++b) {
    for (int64_t k = 0; k < 8; ++k) {
      for (int64_t t = 0; t < 3; ++t) EXPECT_DOUBLE_EQ(after.at({b, t, k}), before.at({b, t, k}));
    }
    double moved = 0;
    for (int64_t k = 0; k < 8; ++k) moved += std::abs(after.at({b, 3, k}) - before.at({b, 3, k}));
    EXPECT_GT(moved, 1e-3);
  }
}

TEST(ZooEvaluation, BertSeesEveryPosition) {
  const pcg::Graph g = build_model(library(), "bert_large", tiny_sizes().at("bert_large"));
  NamedValues v = random_values(library(), g, 5);
  const TensorValue before = evaluate(g, v).at(0);
  TensorValue& ids = v.at("embeddings.input_ids");
  ids.at({0, 3}) = std::fmod(ids.at({0, 3}) + 1, 11);
  const TensorValue after = evaluate(g, v).at(0);
  double moved = 0;
  for (int64_t k = 0; k < 8; ++k) moved += std::abs(after.at({0, 0, k}) - before.at({0, 0, k}));
  EXPECT_GT(moved, 1e-6);  // bidirectional: position 0 depends on token 3
  for (int64_t t = 0; t < 4; ++t)
    for (int64_t k = 0; k < 8; ++k) EXPECT_DOUBLE_EQ(after.at({1, t, k}), before.at({1, t, k}));  // other sequence
}

}  // namespace
}  // namespace loom::models::test
