// Training runs: the figure-1 MLP learns; a resumed run equals an uninterrupted one; a planted NaN
// is reported with its step and operator; a data-parallel plan trains exactly like the model; an
// operator written in the spec language trains compiled from its spec, and interpreted, alike.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>

#include "loom/interpreter/native_program.hpp"
#include "loom/models/registry.hpp"
#include "loom/models/values.hpp"
#include "loom/runtime/data.hpp"
#include "loom/runtime/initializer.hpp"
#include "loom/runtime/trainer.hpp"
#include "loom/search/baselines.hpp"
#include "loom/search/machine.hpp"
#include "loom/search/materialize.hpp"
#include "loom/search/output_loss.hpp"
#include "runtime_test_support.hpp"

namespace loom::runtime {
namespace {

using testing::bundled_library;

pcg::Graph small_mlp() {
  return models::build_model(bundled_library(), "mlp_fig1", {{"batch", 8}, {"in", 16}, {"hidden", 32}, {"out", 4}});
}

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("loom_runtime_test_" + std::to_string(::getpid()) + "_" + name)).string();
}

double mean(const std::vector<double>& v, std::size_t first, std::size_t count) {
  return std::accumulate(v.begin() + static_cast<std::ptrdiff_t>(first), v.begin() + static_cast<std::ptrdiff_t>(first + count), 0.0) /
         static_cast<double>(count);
}

TEST(Training, TheFigureOneMlpLearns) {
  TrainSettings s;
  s.steps = 40;
  s.optimizer.learning_rate = 0.1;
  const TrainReport r = train<double>(bundled_library(), small_mlp(), s);
  ASSERT_EQ(r.losses.size(), 40u);
  EXPECT_LT(mean(r.losses, 36, 4), 0.9 * mean(r.losses, 0, 4));
  for (std::size_t batch = 0; batch < 4; ++batch) EXPECT_LT(r.losses[36 + batch], r.losses[batch]) << "batch " << batch;
  EXPECT_TRUE(r.interpreted_ops.empty());
}

TEST(Training, AdamInFloatLearnsWithMse) {
  TrainSettings s;
  s.steps = 30;
  s.loss = LossKind::MeanSquaredError;
  s.optimizer = optimizer_from_name("adam");
  const TrainReport r = train<float>(bundled_library(), small_mlp(), s);
  EXPECT_LT(mean(r.losses, 26, 4), 0.9 * mean(r.losses, 0, 4));
}

TEST(Training, FloatFollowsDouble) {
  TrainSettings s;
  s.steps = 5;
  const TrainReport f = train<float>(bundled_library(), small_mlp(), s);
  const TrainReport d = train<double>(bundled_library(), small_mlp(), s);
  for (std::size_t i = 0; i < d.losses.size(); ++i) EXPECT_NEAR(f.losses[i], d.losses[i], 1e-4 * std::abs(d.losses[i]));
}

TEST(Training, WarmUpStepsAreLeftOutOfTheTimes) {
  const pcg::Graph g = small_mlp();
  const auto forward_tasks = [&g](const TrainReport& r) {
    std::int64_t tasks = 0;
    for (const pcg::Node& n : g.nodes())
      if (n.op == "linear" || n.op == "matmul") tasks += r.operator_times[n.id.index()].forward_tasks;
    return tasks;
  };
  TrainSettings s;
  s.steps = 5;
  const TrainReport all = train<double>(bundled_library(), g, s);
  EXPECT_EQ(all.timed_steps, 5);
  ASSERT_GT(forward_tasks(all), 0);
  s.warmup_steps = 2;
  const TrainReport warm = train<double>(bundled_library(), g, s);
  EXPECT_EQ(warm.timed_steps, 3);
  EXPECT_EQ(warm.losses, all.losses);  // the warm-up steps train as any other
  EXPECT_EQ(5 * forward_tasks(warm), 3 * forward_tasks(all));
  EXPECT_GT(warm.seconds_per_step, 0);
  // A run with no step left to time times them all.
  s.warmup_steps = 5;
  const TrainReport short_run = train<double>(bundled_library(), g, s);
  EXPECT_EQ(short_run.timed_steps, 5);
  EXPECT_EQ(forward_tasks(short_run), forward_tasks(all));
}

// The optimizer's step over each weight is timed after the warm-up, on the weight's node.
TEST(Training, WeightUpdatesAreTimedOnTheWeightsNodes) {
  const pcg::Graph g = small_mlp();
  TrainSettings s;
  s.steps = 4;
  s.warmup_steps = 1;
  const TrainReport r = train<double>(bundled_library(), g, s);
  std::size_t weights = 0;
  for (const pcg::Node& n : g.nodes()) {
    const OperatorTime& t = r.operator_times[n.id.index()];
    SCOPED_TRACE(n.describe());
    if (n.op == pcg::kWeightOp) {
      ++weights;
      EXPECT_EQ(t.updates, 3);
      EXPECT_GT(t.update_seconds, 0);
    } else {
      EXPECT_EQ(t.updates, 0);
      EXPECT_EQ(t.update_seconds, 0);
    }
  }
  EXPECT_GT(weights, 0u);
}

TEST(Training, AResumedRunEqualsAnUninterruptedOne) {
  TrainSettings s;
  s.steps = 8;
  s.optimizer = optimizer_from_name("adam");
  s.run_name = "mlp_fig1";
  const TrainReport whole = train<double>(bundled_library(), small_mlp(), s);

  const std::string path = temp_path("resume.ckpt");
  TrainSettings first = s;
  first.steps = 4;
  first.checkpoint = path;
  train<double>(bundled_library(), small_mlp(), first);
  TrainSettings second = s;
  second.resume = path;
  const TrainReport resumed = train<double>(bundled_library(), small_mlp(), second);
  std::filesystem::remove(path);

  EXPECT_EQ(resumed.first_step, 4);
  EXPECT_EQ(resumed.losses, whole.losses);
  ASSERT_EQ(resumed.weights.size(), whole.weights.size());
  for (const auto& [name, w] : whole.weights) EXPECT_EQ(resumed.weights.at(name).data, w.data) << name;
  EXPECT_NE(whole.weights.at("fc1.weight").data, initial_weights(bundled_library(), small_mlp(), s.seed).at("fc1.weight").data);
}

// A model that gives its weights values (an imported ONNX file) starts from them, and its
// constants stay as they are while its parameters learn.
TEST(Training, TheModelsValuesAreItsStartingWeightsAndItsConstantsStay) {
  TrainSettings s;
  s.steps = 3;
  s.optimizer.learning_rate = 0.1;
  const TrainReport drawn = train<double>(bundled_library(), small_mlp(), s);

  TrainSettings given = s;
  given.model_values = initial_weights(bundled_library(), small_mlp(), s.seed);
  EXPECT_EQ(train<double>(bundled_library(), small_mlp(), given).losses, drawn.losses) << "the seed's own values give the seed's run";

  for (double& v : given.model_values.at("fc1.weight").data) v *= 2;
  given.fixed_weights = {"fc2.weight"};
  const TrainReport run = train<double>(bundled_library(), small_mlp(), given);
  EXPECT_NE(run.losses.front(), drawn.losses.front()) << "the model's fc1.weight was not used";
  EXPECT_EQ(run.weights.at("fc2.weight").data, given.model_values.at("fc2.weight").data) << "a constant of the model was trained";
  EXPECT_NE(run.weights.at("fc1.weight").data, given.model_values.at("fc1.weight").data);

  TrainSettings misshapen = s;
  misshapen.model_values = {{"fc1.weight", Tensor<double>({3, 3}, 1.0)}};
  try {
    train<double>(bundled_library(), small_mlp(), misshapen);
    FAIL() << "a weight of another shape was taken";
  } catch (const LoomError& e) {
    EXPECT_NE(std::string(e.what()).find("weight 'fc1.weight' has shape [16, 32] in the graph, but the model gives it [3, 3]"),
              std::string::npos)
        << e.what();
  }
}

TEST(Training, AResumeOfAnotherRunIsRefused) {
  TrainSettings s;
  s.steps = 1;
  s.run_name = "mlp_fig1";
  s.checkpoint = temp_path("other.ckpt");
  train<double>(bundled_library(), small_mlp(), s);
  TrainSettings other = s;
  other.checkpoint.clear();
  other.resume = s.checkpoint;
  other.optimizer = optimizer_from_name("adam");
  EXPECT_THROW(train<double>(bundled_library(), small_mlp(), other), LoomError);
  TrainSettings in_float = s;
  in_float.checkpoint.clear();
  in_float.resume = s.checkpoint;
  EXPECT_THROW(train<float>(bundled_library(), small_mlp(), in_float), LoomError);
  std::filesystem::remove(s.checkpoint);
}

TEST(Training, APlantedNanNamesTheStepAndTheOperator) {
  const spec::Library& lib = bundled_library();
  pcg::Graph g;
  const int x = g.add_input("x", pcg::ParallelShape::unpartitioned({4, 3}));
  const int w = g.add_input("w", pcg::ParallelShape::unpartitioned({3, 5}), true);
  const int mm = g.add_node(lib, "matmul", {}, {{x, 0}, {w, 0}}, "project");
  const int root = g.add_node(lib, "sqrt", {}, {{mm, 0}}, "root");
  g.mark_output({root, 0});
  TrainSettings s;
  s.loss = LossKind::MeanSquaredError;
  try {
    train<double>(lib, g, s);
    FAIL() << "a NaN loss must stop training";
  } catch (const LoomError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("step 1"), std::string::npos) << message;
    EXPECT_NE(message.find("\"root\" (op sqrt)"), std::string::npos) << message;
  }
}

TEST(Training, ADataParallelPlanTrainsLikeTheModel) {
  const spec::Library& lib = bundled_library();
  const pcg::Graph model = small_mlp();
  const search::Machine machine = search::load_machine("p100");
  const pcg::Graph plan = search::materialize(model, search::data_parallel(lib, model, machine), lib);
  ASSERT_TRUE(std::any_of(plan.nodes().begin(), plan.nodes().end(), [](const pcg::Node& n) { return n.op == "partition"; }));
  TrainSettings s;
  s.steps = 5;
  const TrainReport a = train<double>(lib, model, s);
  const TrainReport b = train<double>(lib, plan, s);
  ASSERT_EQ(a.losses.size(), b.losses.size());
  for (std::size_t i = 0; i < a.losses.size(); ++i) EXPECT_NEAR(b.losses[i], a.losses[i], 1e-9 * std::abs(a.losses[i]));
  for (const auto& [name, w] : a.weights) EXPECT_LT(testing::relative_error(b.weights.at(name), w), 1e-9) << name;
}

TEST(Training, AnOperatorWrittenInTheSpecLanguageTrains) {
  const std::string dir = temp_path("specs");
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/softsign.loom") << "op softsign(x: [*s]) -> [*s] { out[*i] = x[*i] / (1 + abs(x[*i])); }\n";
  const spec::Library lib = spec::Library::load({spec::Library::default_specs_dir(), dir});
  pcg::Graph g;
  const int x = g.add_input("x", pcg::ParallelShape::unpartitioned({8, 6}));
  const int w = g.add_input("w", pcg::ParallelShape::unpartitioned({6, 3}), true);
  const int mm = g.add_node(lib, "matmul", {}, {{x, 0}, {w, 0}});
  const int act = g.add_node(lib, "softsign", {}, {{mm, 0}}, "squash");
  g.mark_output({act, 0});
  TrainSettings s;
  s.steps = 30;
  s.loss = LossKind::MeanSquaredError;
  s.optimizer.learning_rate = 0.5;
  s.synthetic_batches = 1;
  const TrainReport r = train<double>(lib, g, s);
  s.compile_from_specs = false;
  const TrainReport interpreted = train<double>(lib, g, s);
  std::filesystem::remove_all(dir);
  ASSERT_EQ(r.compiled_ops.size(), 1u) << spec::NativeToolchain::from_environment().why_none;
  EXPECT_NE(r.compiled_ops[0].find("softsign"), std::string::npos);
  EXPECT_TRUE(r.interpreted_ops.empty());
  ASSERT_EQ(interpreted.interpreted_ops.size(), 1u);
  EXPECT_TRUE(interpreted.compiled_ops.empty());
  EXPECT_LT(r.losses.back(), 0.9 * r.losses.front());
  ASSERT_EQ(interpreted.losses.size(), r.losses.size());
  for (std::size_t i = 0; i < r.losses.size(); ++i) EXPECT_NEAR(r.losses[i], interpreted.losses[i], 1e-9 * std::abs(interpreted.losses[i]));
}

TEST(Training, RealDataFromAFileIsUsedInTurn) {
  const pcg::Graph g = small_mlp();
  std::mt19937_64 rng(5);
  NamedTensors<double> file{{"x", testing::uniform_tensor({16, 16}, rng)}, {"target", Tensor<double>({16}, 2.0)}};
  const std::string path = temp_path("data.bin");
  save_data_file(path, file);
  const auto data = load_data_file(path, g, LossKind::CrossEntropy);
  const Batch second = data->batch(1), third = data->batch(2);
  EXPECT_EQ(second.inputs.at("x").dims, (std::vector<std::int64_t>{8, 16}));
  EXPECT_EQ(second.inputs.at("x").data[0], file.at("x").data[8 * 16]);
  EXPECT_EQ(third.inputs.at("x").data, data->batch(0).inputs.at("x").data);
  TrainSettings s;
  s.steps = 3;
  s.data_file = path;
  EXPECT_EQ(train<double>(bundled_library(), g, s).losses.size(), 3u);

  std::ofstream(path, std::ios::binary) << "LOOMDATX";
  try {
    load_data_file(path, g, LossKind::CrossEntropy);
    FAIL() << "a file without the magic must be refused";
  } catch (const LoomError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos);
  }
  std::filesystem::remove(path);
}

TEST(Training, CrossEntropyReadsProbabilitiesWhereTheSpecNotesThem) {
  EXPECT_FALSE(search::output_is_probabilities(bundled_library(), small_mlp()));  // ends in a matmul: logits
  pcg::Graph classifier;
  const int logits = classifier.add_input("x", pcg::ParallelShape::unpartitioned({8, 3}));
  classifier.mark_output({classifier.add_node(bundled_library(), "softmax", {}, {{logits, 0}}), 0});
  EXPECT_TRUE(search::output_is_probabilities(bundled_library(), classifier));
  const search::Machine machine = search::load_machine("summit").with_devices_per_node(2);
  const pcg::Graph plan = search::materialize(classifier, search::data_parallel(bundled_library(), classifier, machine), bundled_library());
  ASSERT_NE(plan.node(plan.outputs().front().node).op, "softmax");
  EXPECT_TRUE(search::output_is_probabilities(bundled_library(), plan));  // behind the combine
  const spec::Library lib = spec::Library::from_text(
      "op spread(x: [b, n]) -> [b, n] @probabilities {\n  out[i, j] = x[i, j] / (sum(k) x[i, k]);\n}\n"
      "op plain(x: [b, n]) -> [b, n] {\n  out[i, j] = x[i, j];\n}\n",
      "user.loom");
  for (const auto& [op, expected] : {std::pair{"spread", true}, {"plain", false}}) {
    pcg::Graph g;
    const int x = g.add_input("x", pcg::ParallelShape::unpartitioned({2, 3}));
    g.mark_output({g.add_node(lib, op, {}, {{x, 0}}), 0});
    EXPECT_EQ(search::output_is_probabilities(lib, g), expected) << op;
  }
}

TEST(Initialization, DependsOnTheSeedAndTheNameOnly) {
  const pcg::Graph g = small_mlp();
  const auto a = initial_weights(bundled_library(), g, 1), b = initial_weights(bundled_library(), g, 1),
             c = initial_weights(bundled_library(), g, 2);
  EXPECT_EQ(a.at("fc2.weight").data, b.at("fc2.weight").data);
  EXPECT_NE(a.at("fc2.weight").data, c.at("fc2.weight").data);
  EXPECT_NE(named_seed(1, "fc1.weight"), named_seed(1, "fc2.weight"));
  EXPECT_EQ(trainable_weights(bundled_library(), g), (std::set<std::string>{"fc1.weight", "fc2.weight"}));
}

// A user's operators, named as nothing Loom knows: what their weights start at, whether they train
// and what their ids may be come from the notes on their inputs, and a weight's fan-in from the
// dimensions the comprehension sums over.
TEST(Initialization, RolesComeFromTheNotesOfTheReadersSpec) {
  const spec::Library lib = spec::Library::from_text(
      "op gain(x: [b, n], g: [n] @init(3), m: [n] @statistic @init(2)) -> [b, n] {\n  out[i, j] = (x[i, j] - m[j]) * g[j];\n}\n"
      "op pick(ids: [b] @index(rows), rows: [v, n]) -> [b, n] {\n  out[i, j] = sum(r) select(ids[i] == r, rows[r, j], 0);\n}\n"
      "op project_t(x: [b, k], w: [n, k]) -> [b, n] {\n  out[i, j] = sum(p) (x[i, p] * w[j, p]);\n}\n",
      "user.loom");
  pcg::Graph g;
  const int ids = g.add_input("ids", pcg::ParallelShape::unpartitioned({64}), true);
  const int rows = g.add_input("rows", pcg::ParallelShape::unpartitioned({7, 4}), true);
  const int w = g.add_input("w", pcg::ParallelShape::unpartitioned({400, 4}), true);
  const int gain = g.add_input("g", pcg::ParallelShape::unpartitioned({400}), true);
  const int mean = g.add_input("m", pcg::ParallelShape::unpartitioned({400}), true);
  const int picked = g.add_node(lib, "pick", {}, {{ids, 0}, {rows, 0}});
  const int projected = g.add_node(lib, "project_t", {}, {{picked, 0}, {w, 0}});
  g.mark_output({g.add_node(lib, "gain", {}, {{projected, 0}, {gain, 0}, {mean, 0}}), 0});

  EXPECT_EQ(input_role(lib, g, ids), InputRole::LookupIds);
  EXPECT_EQ(lookup_rows(lib, g, ids), 7);
  EXPECT_EQ(input_role(lib, g, gain), InputRole::Constant);
  EXPECT_EQ(input_role(lib, g, mean), InputRole::Statistic);
  EXPECT_EQ(input_role(lib, g, w), InputRole::Matrix);
  EXPECT_EQ(fan_in(lib, g, w), 4);  // the summed dimension is the last; the next-to-last holds 400
  EXPECT_EQ(fan_in(lib, g, rows), 7);
  EXPECT_EQ(trainable_weights(lib, g), (std::set<std::string>{"g", "rows", "w"}));

  const auto weights = initial_weights(lib, g, 5);
  for (double v : weights.at("g").data) EXPECT_EQ(v, 3.0);
  for (double v : weights.at("m").data) EXPECT_EQ(v, 2.0);
  std::set<double> seen_ids(weights.at("ids").data.begin(), weights.at("ids").data.end());
  EXPECT_GT(seen_ids.size(), 1u);
  for (double v : seen_ids) EXPECT_TRUE(v >= 0 && v < 7 && v == std::floor(v)) << v;
  double largest = 0;
  for (double v : weights.at("w").data) largest = std::max(largest, std::abs(v));
  EXPECT_LE(largest, 0.5);   // 1/sqrt(4)
  EXPECT_GT(largest, 0.05);  // far above 1/sqrt(400), which a fan-in read off the shape would give
}

TEST(Initialization, TheBundledNormalizationsAndConvolutionsKeepTheirRoles) {
  const spec::Library& lib = bundled_library();
  pcg::Graph g;
  const auto weight = [&](const std::string& name, std::vector<std::int64_t> dims) {
    return g.add_input(name, pcg::ParallelShape::unpartitioned(std::move(dims)), true);
  };
  const int x = g.add_input("x", pcg::ParallelShape::unpartitioned({2, 3, 8, 8}));
  const int kernel = weight("kernel", {5, 3, 3, 3});
  const int conv =
      g.add_node(lib, "conv2d", {{"stride_h", 1}, {"stride_w", 1}, {"pad_h", 1}, {"pad_w", 1}, {"act", 0}}, {{x, 0}, {kernel, 0}});
  const int scale = weight("scale", {5}), bias = weight("bias", {5}), mean = weight("mean", {5}), var = weight("var", {5});
  const int bn = g.add_node(lib, "batchnorm", {}, {{conv, 0}, {scale, 0}, {bias, 0}, {mean, 0}, {var, 0}});
  const int gamma = weight("gamma", {8}), beta = weight("beta", {8});
  g.mark_output({g.add_node(lib, "layer_norm", {}, {{bn, 0}, {gamma, 0}, {beta, 0}}), 0});

  EXPECT_EQ(fan_in(lib, g, kernel), 3 * 3 * 3);
  EXPECT_EQ(trainable_weights(lib, g), (std::set<std::string>{"beta", "bias", "gamma", "kernel", "scale"}));
  const auto weights = initial_weights(lib, g, 1);
  for (const auto& [name, value] :
       std::map<std::string, double>{{"scale", 1}, {"bias", 0}, {"mean", 0}, {"var", 1}, {"gamma", 1}, {"beta", 0}})
    for (double v : weights.at(name).data) EXPECT_EQ(v, value) << name;
  const models::NamedValues values = models::random_values(lib, g, 3);
  for (double v : values.at("var").data) EXPECT_GT(v, 0) << "a variance noted @positive";
}

}  // namespace
}  // namespace loom::runtime
