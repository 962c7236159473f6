// A forward pass (what `loom run` does) gives what the interpreter computes from the same weights
// and inputs; a plan's gives the model's; the model's values and a checkpoint's weights are the
// ones used; an input without a value, of another shape or unknown to the model is named.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <random>

#include "../interpreter/test_support.hpp"
#include "../pcg/error_text.hpp"
#include "loom/interpreter/graph_eval.hpp"
#include "loom/interpreter/native_program.hpp"
#include "loom/models/load.hpp"
#include "loom/pcg/diagnostic.hpp"
#include "loom/runtime/checkpoint.hpp"
#include "loom/runtime/forward_pass.hpp"
#include "loom/runtime/model_values.hpp"
#include "runtime_test_support.hpp"
#include "sharded_check.hpp"

namespace loom::runtime {
namespace {

using namespace sharded_test;
using pcg::test_support::error_of;
using testing::uniform_tensor;

// Random values of the graph's data inputs (ids within their tables, as training draws them).
NamedTensors<double> random_inputs(const pcg::Graph& graph, std::uint64_t seed) {
  NamedTensors<double> values = models::random_values(library(), graph, seed);
  std::erase_if(values, [&](const auto& entry) { return graph.node(*graph.find(entry.first)).op != pcg::kInputOp; });
  return values;
}

// The interpreter's outputs of `graph` with `weights` and `inputs`.
std::vector<Tensor<double>> interpreted(const pcg::Graph& graph, const NamedTensors<double>& weights, const NamedTensors<double>& inputs) {
  NamedTensors<double> values = weights;
  values.insert(inputs.begin(), inputs.end());
  return spec::evaluate_graph<spec::RealDomain>(library(), graph, values);
}

template <class T>
void expect_close(const std::vector<Tensor<T>>& got, const std::vector<Tensor<double>>& want, double tolerance) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t o = 0; o < want.size(); ++o) {
    ASSERT_EQ(got[o].dims, want[o].dims) << "output " << o;
    for (std::size_t k = 0; k < want[o].data.size(); ++k)
      ASSERT_NEAR(static_cast<double>(got[o].data[k]), want[o].data[k], tolerance * (1 + std::abs(want[o].data[k])))
          << "output " << o << " [" << k << "]";
  }
}

TEST(ForwardPass, AModelGivesWhatTheInterpreterComputesFromTheSeedsWeights) {
  for (const pcg::Graph& graph : {small_mlp(), small_transformer()}) {
    ForwardSettings s;
    s.seed = 7;
    s.inputs = random_inputs(graph, 3);
    const std::vector<Tensor<double>> want = interpreted(graph, starting_weights(library(), graph, 7, {}), s.inputs);
    expect_close(forward_pass<double>(library(), graph, s).outputs, want, 1e-9);
    expect_close(forward_pass<float>(library(), graph, s).outputs, want, 1e-4);
  }
}

TEST(ForwardPass, APlansOutputsAreTheModels) {
  const pcg::Graph model = small_mlp();
  ForwardSettings s;
  s.inputs = random_inputs(model, 5);
  const std::vector<Tensor<double>> whole = forward_pass<double>(library(), model, s).outputs;
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const pcg::Graph plan = search::materialize(model, random_placements(model, 4, seed), library());
    s.plan_devices = 4;
    expect_close(forward_pass<double>(library(), plan, s).outputs, whole, 1e-9);
  }
}

TEST(ForwardPass, TheModelsValuesAndACheckpointsWeightsAreTheOnesUsed) {
  const pcg::Graph graph = small_mlp();
  ForwardSettings s;
  s.inputs = random_inputs(graph, 9);
  // The model gives one weight; the others are the seed's.
  NamedTensors<double> weights = starting_weights(library(), graph, s.seed, {});
  std::mt19937_64 rng(4);
  const std::string given = weights.begin()->first;
  s.model_values[given] = uniform_tensor(weights.begin()->second.dims, rng);
  weights[given] = s.model_values[given];
  expect_close(forward_pass<double>(library(), graph, s).outputs, interpreted(graph, weights, s.inputs), 1e-9);
  // A checkpoint's weights replace both.
  for (auto& [name, w] : weights) w = uniform_tensor(w.dims, rng);
  const spec::test::TempDir dir;
  const std::string path = (dir.path() / "run.ckpt").string();
  save_checkpoint<double>(path, {"a run", 1, {0.5}, weights, {}});
  s.checkpoint = path;
  const std::vector<Tensor<double>> got = forward_pass<double>(library(), graph, s).outputs;
  expect_close(got, interpreted(graph, weights, s.inputs), 1e-9);
}

TEST(ForwardPass, InputsWithoutValuesOfAnotherShapeOrUnknownAreNamed) {
  const pcg::Graph graph = small_mlp();
  ForwardSettings s;
  EXPECT_NE(error_of([&] { forward_pass<double>(library(), graph, s); }).find("no value for the model's input 'x' [8, 16]"),
            std::string::npos);
  s.inputs["x"] = Tensor<double>({8, 15});
  EXPECT_NE(
      error_of([&] { forward_pass<double>(library(), graph, s); }).find("input 'x' is [8, 16] in the model, but its value is [8, 15]"),
      std::string::npos);
  s.inputs["x"] = Tensor<double>({8, 16});
  s.inputs["z"] = Tensor<double>({8, 16});
  EXPECT_NE(error_of([&] { forward_pass<double>(library(), graph, s); }).find("'z' is no input of the model (its inputs: x [8, 16])"),
            std::string::npos);
}

// Row-major [m, k] x [k, n], computed here without the interpreter.
std::vector<double> times(const std::vector<double>& a, const std::vector<double>& b, std::int64_t m, std::int64_t k, std::int64_t n) {
  std::vector<double> out(static_cast<std::size_t>(m * n), 0.0);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t p = 0; p < k; ++p)
      for (std::int64_t j = 0; j < n; ++j)
        out[static_cast<std::size_t>(i * n + j)] += a[static_cast<std::size_t>(i * k + p)] * b[static_cast<std::size_t>(p * n + j)];
  return out;
}

TEST(ForwardPass, AUserOperatorInAModelOfTheSpecLanguageComputesWhatItsDefinitionSays) {
  const std::string model = std::string(LOOM_SPECS_DIR) + "/../docs/examples/glu.loom:glu_mlp";
  const spec::Library lib = spec::Library::load(models::spec_paths_for(spec::Library::paths_or_bundled({}), model));
  const std::int64_t batch = 3, in = 4, hidden = 5, classes = 2;
  models::ModelRequest request;
  request.model = model;
  request.params = {{"batch", batch}, {"in_features", in}, {"hidden", hidden}, {"depth", 2}, {"classes", classes}};
  const pcg::Graph graph = models::load_model(lib, request).graph;

  ForwardSettings s;
  s.model_values = models::random_values(lib, graph, 11);
  s.inputs["x"] = s.model_values.at("x");
  s.model_values.erase("x");
  const auto& v = s.model_values;
  std::vector<double> h = s.inputs.at("x").data;
  std::int64_t width = in;
  for (const std::string layer : {"layer0.", "layer1."}) {
    const std::vector<double> a = times(h, v.at(layer + "w").data, batch, width, hidden);
    const std::vector<double> g = times(h, v.at(layer + "v").data, batch, width, hidden);
    h.assign(a.size(), 0.0);
    for (std::size_t k = 0; k < a.size(); ++k) h[k] = a[k] / (1.0 + std::exp(-g[k]));
    width = hidden;
  }
  const std::vector<double> want = times(h, v.at("classifier").data, batch, hidden, classes);

  const ForwardReport<double> got = forward_pass<double>(lib, graph, s);
  ASSERT_EQ(got.outputs.size(), 1u);
  ASSERT_EQ(got.outputs[0].dims, (std::vector<std::int64_t>{batch, classes}));
  for (std::size_t k = 0; k < want.size(); ++k) EXPECT_NEAR(got.outputs[0].data[k], want[k], 1e-12 * (1 + std::abs(want[k]))) << k;
  EXPECT_EQ(got.compiled_ops.size(), 2u) << spec::NativeToolchain::from_environment().why_none;
  EXPECT_TRUE(got.interpreted_ops.empty());
}

}  // namespace
}  // namespace loom::runtime
