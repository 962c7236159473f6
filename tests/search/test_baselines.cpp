// The baselines of the joint search, in its cost model: each gives a plan that materializes and
// computes the same values as its input, with the structure its strategy promises.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <map>
#include <set>
#include <string>

#include "loom/interpreter/graph_eval.hpp"
#include "loom/interpreter/rule_files.hpp"
#include "loom/models/registry.hpp"
#include "loom/models/values.hpp"
#include "loom/search/baselines.hpp"
#include "loom/search/plan_cost.hpp"

namespace loom::search {
namespace {

const spec::Library& library() {
  static const spec::Library lib = spec::Library::load({spec::Library::default_specs_dir()});
  return lib;
}

// One Summit node with `devices` GPUs. A CostModel keeps a reference to its machine, so the
// machines live as long as the test program.
const Machine& machine(int devices) {
  static std::map<int, Machine> machines;
  auto it = machines.find(devices);
  if (it == machines.end()) it = machines.emplace(devices, load_machine("summit").with_nodes(1).with_devices_per_node(devices)).first;
  return it->second;
}

const std::map<std::string, models::ParamValues>& small_sizes() {
  static const std::map<std::string, models::ParamValues> sizes = {
      {"mlp", {{"batch", 8}, {"in", 4}, {"hidden", 8}, {"layers", 2}}},
      {"bert_large", {{"batch", 4}, {"seq", 4}, {"layers", 1}, {"hidden", 8}, {"heads", 2}, {"vocab", 11}, {"max_positions", 6}}},
      {"dlrm", {{"batch", 4}, {"dim", 4}, {"tables", 3}, {"rows", 5}}},
      {"mlp_fig1", {{"batch", 8}, {"in", 6}, {"hidden", 8}, {"out", 3}}},
  };
  return sizes;
}

pcg::Graph model(const std::string& name) { return models::build_model(library(), name, small_sizes().at(name)); }

// `pcg` (a materialized plan, or a rewrite of `graph`) computes what `graph` computes.
void expect_same_values(const pcg::Graph& graph, const pcg::Graph& pcg) {
  const models::NamedValues inputs = models::random_values(library(), graph, 7);
  const auto want = spec::evaluate_graph<spec::RealDomain>(library(), graph, inputs);
  const auto got = spec::evaluate_graph<spec::RealDomain>(library(), pcg, inputs);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t o = 0; o < want.size(); ++o) {
    ASSERT_EQ(got[o].dims, want[o].dims) << "output " << o;
    for (std::size_t i = 0; i < want[o].data.size(); ++i)
      ASSERT_NEAR(got[o].data[i], want[o].data[i], 1e-9 * (1 + std::abs(want[o].data[i]))) << "output " << o << " element " << i;
  }
}

// The placements materialize into a valid PCG that computes the graph's values and runs.
void expect_sound_plan(const pcg::Graph& graph, const std::vector<Placement>& placements, const CostModel& cost) {
  const pcg::Graph plan = materialize(graph, placements, library());
  ASSERT_NO_THROW(plan.validate(library()));
  expect_same_values(graph, plan);
  EXPECT_TRUE(std::isfinite(placement_seconds(library(), graph, placements, cost)));
}

McmcOptions mcmc_options(std::size_t iterations, std::uint64_t seed, std::vector<Placement> initial = {}) {
  McmcOptions options;
  options.iterations = iterations;
  options.seed = seed;
  options.initial = std::move(initial);
  return options;
}

int count_split(const std::vector<Placement>& placements) {
  int n = 0;
  for (const Placement& p : placements) n += p.config.tasks() > 1;
  return n;
}

class EveryBaseline : public ::testing::TestWithParam<std::string> {};

INSTANTIATE_TEST_SUITE_P(Zoo, EveryBaseline, ::testing::Values("mlp", "bert_large", "dlrm"));

TEST_P(EveryBaseline, MaterializesAndKeepsValues) {
  const pcg::Graph graph = model(GetParam());
  const Machine m = machine(4);
  const CostModel cost(library(), m);
  const auto dp = data_parallel(library(), graph, m);
  const auto expert = expert_strategy(library(), graph, m);
  EXPECT_GT(count_split(dp), 0);
  EXPECT_GT(count_split(expert), 0);
  expect_sound_plan(graph, dp, cost);
  expect_sound_plan(graph, expert, cost);
  const McmcResult mcmc = mcmc_search(library(), graph, cost, mcmc_options(30, 3));
  expect_sound_plan(graph, mcmc.placements, cost);
}

TEST_P(EveryBaseline, SequentialOptimizationKeepsValues) {
  const pcg::Graph graph = model(GetParam());
  const std::string specs = spec::Library::default_specs_dir();
  const auto rules = spec::load_rule_file(library(), {specs}, specs + "/rules/unity.loom");
  const CostModel cost(library(), machine(4));
  SequentialOptions options;
  options.substitution.budget = 20;
  options.mcmc.iterations = 20;
  const SequentialResult result = sequential_optimization(library(), graph, rules, cost, options);
  expect_same_values(graph, result.graph);
  expect_sound_plan(result.graph, result.placements, cost);
  EXPECT_DOUBLE_EQ(result.seconds, placement_seconds(library(), result.graph, result.placements, cost));
}

TEST(DataParallel, SplitsEveryMatmulAlongTheBatchOnAllDevices) {
  const pcg::Graph graph = model("mlp");
  const auto placements = data_parallel(library(), graph, machine(4));
  int matmuls = 0;
  for (const pcg::Node& n : graph.nodes()) {
    if (n.op != "matmul") continue;
    ++matmuls;
    const Placement& p = placements[n.id.index()];
    EXPECT_EQ(p.config.inputs[0].D[0], 4) << n.describe();
    EXPECT_EQ(p.config.inputs[1].R, 4) << n.describe() << ": the weight is replicated";
    EXPECT_EQ(p.config.outputs[0].D[0], 4) << n.describe();
    EXPECT_EQ(p.first_device, 0);
  }
  EXPECT_EQ(matmuls, 4);
}

TEST(DataParallel, TakesTheLargestDegreeTheBatchAllows) {
  models::ParamValues sizes = small_sizes().at("mlp");
  sizes["batch"] = 6;  // 4 devices: 4 does not divide the batch, 3 does
  const pcg::Graph graph = models::build_model(library(), "mlp", sizes);
  const auto placements = data_parallel(library(), graph, machine(4));
  int matmuls = 0;
  for (const pcg::Node& n : graph.nodes()) {
    if (n.op != "matmul") continue;
    ++matmuls;
    EXPECT_EQ(placements[n.id.index()].config.tasks(), 3) << n.describe();
  }
  EXPECT_EQ(matmuls, 4);
  expect_sound_plan(graph, placements, CostModel(library(), machine(4)));
}

// Swin's window partitions number their windows across images, so the batch does not split them:
// they are split along another dimension of as many pieces (their features) instead of gathered
// whole on one device, and the plan keeps the model's values.
TEST(DataParallel, AnOperatorItsBatchDoesNotSplitTakesAnotherSplitOfAsManyPieces) {
  const pcg::Graph graph = models::build_model(
      library(), "swin", {{"batch", 4}, {"resolution", 32}, {"window", 4}, {"hidden", 32}, {"heads", 4}, {"layers", 2}});
  const auto placements = data_parallel(library(), graph, machine(4));
  int windows = 0;
  for (const pcg::Node& n : graph.nodes()) {
    if (n.op != "window_partition" && n.op != "window_reverse") continue;
    ++windows;
    EXPECT_FALSE(split_config(library(), graph, n, BatchDimension::input, BatchDimension::dim, {4, 3, 2})) << n.describe();
    EXPECT_EQ(placements[n.id.index()].config.tasks(), 4) << n.describe();
  }
  EXPECT_EQ(windows, 4);
  expect_sound_plan(graph, placements, CostModel(library(), machine(4)));
}

// The operators a transformer block is written with.
struct BlockOps {
  std::string projection = "head_proj_nobias", merge = "head_merge", dense = "linear_nobias";
};

// One bias-free transformer block: attention (heads 2) and a feed-forward pair 8 -> 32 -> 8.
pcg::Graph transformer_block(const spec::Library& lib = library(), const BlockOps& ops = {}) {
  pcg::Graph g;
  auto in = [&](const std::string& name, std::vector<std::int64_t> dims, bool weight = true) {
    return pcg::PortRef{g.add_input(name, pcg::ParallelShape::unpartitioned(std::move(dims)), weight), 0};
  };
  auto op = [&](const std::string& name, std::vector<pcg::PortRef> inputs, const std::string& label = "") {
    return pcg::PortRef{g.add_node(lib, name, {}, std::move(inputs), label), 0};
  };
  const pcg::PortRef x = in("x", {4, 2, 8}, false);
  const pcg::PortRef q = op(ops.projection, {x, in("wq", {2, 8, 4})}, "q");
  const pcg::PortRef k = op(ops.projection, {x, in("wk", {2, 8, 4})}, "k");
  const pcg::PortRef v = op(ops.projection, {x, in("wv", {2, 8, 4})}, "v");
  const pcg::PortRef probs = op("softmax", {op("attention_scores", {q, k}, "scores")});
  const pcg::PortRef context = op("batch_matmul", {probs, v}, "context");
  const pcg::PortRef attended = op("ewadd", {x, op(ops.merge, {context, in("wo", {2, 4, 8}), in("bo", {8})}, "merge")});
  const pcg::PortRef hidden = op("gelu", {op(ops.dense, {attended, in("w1", {8, 32})}, "fc1")}, "act");
  g.mark_output(op("ewadd", {attended, op(ops.dense, {hidden, in("w2", {32, 8})}, "fc2")}));
  return g;
}

const Placement& placement_of(const pcg::Graph& g, const std::vector<Placement>& placements, const std::string& name) {
  return placements[static_cast<std::size_t>(*g.find(name))];
}

TEST(ExpertStrategy, SplitsTheFirstLinearByColumnsAndTheSecondByRows) {
  const pcg::Graph g = transformer_block();
  const auto placements = expert_strategy(library(), g, machine(4));
  const ParallelConfig& fc1 = placement_of(g, placements, "fc1").config;
  EXPECT_EQ(fc1.inputs[0].R, 4) << "fc1 reads its input whole";
  EXPECT_EQ(fc1.inputs[1].D, (std::vector<std::int64_t>{1, 4})) << "fc1's weight split by output features";
  EXPECT_EQ(fc1.outputs[0].D, (std::vector<std::int64_t>{1, 1, 4}));
  EXPECT_EQ(placement_of(g, placements, "act").config.outputs[0].D, (std::vector<std::int64_t>{1, 1, 4}));
  const ParallelConfig& fc2 = placement_of(g, placements, "fc2").config;
  EXPECT_EQ(fc2.inputs[0].D, (std::vector<std::int64_t>{1, 1, 4})) << "fc2 reads fc1's column shards as they are";
  EXPECT_EQ(fc2.inputs[1].D, (std::vector<std::int64_t>{4, 1})) << "fc2's weight split by input features";
  EXPECT_EQ(fc2.outputs[0].V, 4) << "fc2 gives partial sums";
  for (const char* name : {"q", "k", "v"}) {
    const ParallelConfig& c = placement_of(g, placements, name).config;
    EXPECT_EQ(c.inputs[1].D[0], 2) << name << " split by heads";
    EXPECT_EQ(c.outputs[0].D, (std::vector<std::int64_t>{1, 2, 1, 1})) << name;
  }
  EXPECT_EQ(placement_of(g, placements, "scores").config.outputs[0].D, (std::vector<std::int64_t>{1, 2, 1, 1}));
  EXPECT_EQ(placement_of(g, placements, "context").config.outputs[0].D, (std::vector<std::int64_t>{1, 2, 1, 1}));
  expect_sound_plan(g, placements, CostModel(library(), machine(4)));
}

// Megatron's structure is read from what the operators compute: the same block written with
// operators of other names is split the same way.
TEST(ExpertStrategy, FindsHeadsAndDenseLayersByTheirComprehensionsNotTheirNames) {
  const std::string ops = spec::Library::default_specs_dir() + "/ops/";
  std::string imports;
  for (const char* file : {"core.loom", "linalg.loom", "shape.loom", "parallel.loom", "models.loom"})
    imports += "import \"" + ops + file + "\";\n";
  const spec::Library lib = spec::Library::from_text(imports + R"(
op to_heads(x: [*b, s, k], w: [h, k, d]) -> [*b, h, s, d] {
  out[*i, a, t, c] = sum(p) (x[*i, t, p] * w[a, p, c]);
}
op from_heads(x: [*b, h, s, d], w: [h, d, n], bias: [n]) -> [*b, s, n] {
  out[*i, t, j] = (sum(a, p) (x[*i, a, t, p] * w[a, p, j])) + bias[j];
}
op project(x: [*b, k], w: [k, n]) -> [*b, n] {
  out[*i, j] = sum(p) (x[*i, p] * w[p, j]);
}
)");
  const pcg::Graph bundled = transformer_block();
  const pcg::Graph renamed = transformer_block(lib, {"to_heads", "from_heads", "project"});
  const auto expected = expert_strategy(library(), bundled, machine(4));
  const auto found = expert_strategy(lib, renamed, machine(4));
  ASSERT_EQ(found.size(), expected.size());
  int split = 0;
  for (std::size_t i = 0; i < found.size(); ++i) {
    EXPECT_EQ(found[i].config.inputs, expected[i].config.inputs) << renamed.node(static_cast<int>(i)).describe();
    EXPECT_EQ(found[i].config.outputs, expected[i].config.outputs) << renamed.node(static_cast<int>(i)).describe();
    split += found[i].config.tasks() > 1;
  }
  EXPECT_GT(split, 5);
  EXPECT_EQ(placement_of(renamed, found, "q").config.inputs[1].D[0], 2) << "to_heads is split by heads";
}

// Convolutions (a window read at shifted positions) and lookups (rows read by id) sum over their
// weights too, but are no dense layers: Megatron leaves them data parallel, and a lookup's table,
// whatever its rank, goes whole to a device.
TEST(ExpertStrategy, ConvolutionsAndLookupsAreNotDenseLayers) {
  pcg::Graph g;
  auto in = [&](const std::string& name, std::vector<std::int64_t> dims, bool weight = true) {
    return pcg::PortRef{g.add_input(name, pcg::ParallelShape::unpartitioned(std::move(dims)), weight), 0};
  };
  const pcg::AttrMap conv{{"stride_h", 1}, {"stride_w", 1}, {"pad_h", 1}, {"pad_w", 1}, {"act", 0}};
  const pcg::PortRef image = in("image", {4, 3, 8, 8}, false);
  const pcg::PortRef c1 = {g.add_node(library(), "conv2d", conv, {image, in("k1", {4, 3, 3, 3})}, "c1"), 0};
  const pcg::PortRef r = {g.add_node(library(), "relu", {}, {c1}, "r"), 0};
  g.mark_output({g.add_node(library(), "conv2d", conv, {r, in("k2", {4, 4, 3, 3})}, "c2"), 0});
  const pcg::PortRef x = in("x", {4, 2, 8}, false);
  g.mark_output({g.add_node(library(), "head_proj_nobias", {}, {x, in("wq", {2, 8, 4})}, "q"), 0});
  const auto expert = expert_strategy(library(), g, machine(4));
  const auto dp = data_parallel(library(), g, machine(4));
  EXPECT_EQ(placement_of(g, expert, "q").config.inputs[1].D[0], 2) << "the heads make it a transformer";
  for (const char* name : {"c1", "r", "c2"}) EXPECT_EQ(placement_of(g, expert, name).config, placement_of(g, dp, name).config) << name;

  pcg::Graph lookup;
  const pcg::PortRef ids{lookup.add_input("ids", pcg::ParallelShape::unpartitioned({4}), false), 0};
  const pcg::PortRef table{lookup.add_input("table", pcg::ParallelShape::unpartitioned({6, 2, 3}), true), 0};
  lookup.mark_output({lookup.add_node(library(), "gather_rows", {}, {ids, table}, "rows"), 0});
  EXPECT_EQ(placement_of(lookup, expert_strategy(library(), lookup, machine(4)), "rows").config.tasks(), 1)
      << "a three-dimensional table is a table, not a stack of heads";
}

TEST(ExpertStrategy, NeverSplitsAnOperatorWithABiasIntoPartialSums) {
  // head_merge adds a bias: summed per partial it would be counted once per shard.
  const pcg::Graph g = transformer_block();
  const auto placements = expert_strategy(library(), g, machine(4));
  const ParallelConfig& merge = placement_of(g, placements, "merge").config;
  EXPECT_EQ(merge.outputs[0].V, 1);
  EXPECT_EQ(merge.inputs[0].D[0], 4) << "head_merge falls back to data parallelism";
}

TEST(ExpertStrategy, SplitsBertAttentionAndFeedForwardByColumns) {
  const pcg::Graph graph = model("bert_large");
  const auto placements = expert_strategy(library(), graph, machine(4));
  int projections = 0, first_dense = 0;
  for (const pcg::Node& n : graph.nodes()) {
    const Placement& p = placements[n.id.index()];
    if (n.op == "head_proj") {
      ++projections;
      EXPECT_EQ(p.config.inputs[1].D[0], 2) << n.describe();
      EXPECT_EQ(p.config.inputs[0].R, 2) << n.describe();
    }
    const auto consumers = graph.consumers(n.id);
    if (n.op == "linear" && consumers.size() == 1 && graph.node(consumers[0]).op == "gelu") {
      ++first_dense;
      EXPECT_EQ(p.config.inputs[1].D[1], 4) << n.describe();
      EXPECT_EQ(p.config.inputs[2].D[0], 4) << n.describe() << ": the bias split with the columns";
    }
  }
  EXPECT_EQ(projections, 3);
  EXPECT_EQ(first_dense, 1);
}

TEST(ExpertStrategy, PlacesEachEmbeddingTableWholeOnItsOwnDevice) {
  const pcg::Graph graph = model("dlrm");
  const auto placements = expert_strategy(library(), graph, machine(4));
  std::set<int> devices;
  int tables = 0, dense = 0;
  for (const pcg::Node& n : graph.nodes()) {
    const Placement& p = placements[n.id.index()];
    if (n.op == "embedding_bag") {
      ++tables;
      EXPECT_EQ(p.config.tasks(), 1) << n.describe();
      devices.insert(p.first_device);
    }
    if (n.op == "linear") {
      ++dense;
      EXPECT_EQ(p.config.inputs[0].D[0], 4) << n.describe() << ": the dense part is data parallel";
    }
  }
  EXPECT_EQ(tables, 3);
  EXPECT_EQ(devices.size(), 3u);
  EXPECT_GT(dense, 0);
}

TEST(ExpertStrategy, IsDataParallelForAModelWithoutThatStructure) {
  const pcg::Graph graph = model("mlp");
  const auto expert = expert_strategy(library(), graph, machine(4));
  const auto dp = data_parallel(library(), graph, machine(4));
  ASSERT_EQ(expert.size(), dp.size());
  for (std::size_t i = 0; i < dp.size(); ++i) {
    EXPECT_EQ(expert[i].config, dp[i].config) << graph.node(static_cast<int>(i)).describe();
    EXPECT_EQ(expert[i].first_device, dp[i].first_device);
  }
}

void expect_same_walk(const McmcResult& a, const McmcResult& b) {
  EXPECT_EQ(a.seconds, b.seconds);
  EXPECT_EQ(a.steps, b.steps);
  EXPECT_EQ(a.accepted, b.accepted);
  ASSERT_EQ(a.placements.size(), b.placements.size());
  for (std::size_t i = 0; i < a.placements.size(); ++i) {
    EXPECT_EQ(a.placements[i].config, b.placements[i].config);
    EXPECT_EQ(a.placements[i].first_device, b.placements[i].first_device);
  }
}

TEST(Mcmc, NeverSlowerThanItsStartAndDeterministicForASeed) {
  const pcg::Graph graph = model("mlp");
  const CostModel cost(library(), machine(4));
  for (const auto& start : {unsplit_placements(graph), data_parallel(library(), graph, machine(4))}) {
    const McmcOptions options = mcmc_options(60, 11, start);
    const McmcResult a = mcmc_search(library(), graph, cost, options);
    const McmcResult b = mcmc_search(library(), graph, cost, options);
    EXPECT_DOUBLE_EQ(a.initial_seconds, placement_seconds(library(), graph, start, cost));
    EXPECT_LE(a.seconds, a.initial_seconds);
    EXPECT_DOUBLE_EQ(a.seconds, placement_seconds(library(), graph, a.placements, cost));
    EXPECT_GT(a.accepted, 0u);
    expect_same_walk(a, b);
  }
}

// A walk stopped by its time bound and then resumed without one is the walk it would have been:
// the same steps, acceptances and plan, wherever it stopped.
TEST(Mcmc, AWalkStoppedByItsTimeBoundGoesOnAsTheSameWalk) {
  const pcg::Graph graph = model("mlp");
  const CostModel cost(library(), machine(4));
  McmcOptions options = mcmc_options(80, 7, data_parallel(library(), graph, machine(4)));
  const auto began = std::chrono::steady_clock::now();
  const McmcResult whole = mcmc_search(library(), graph, cost, options);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  ASSERT_FALSE(whole.stopped_by_time());
  ASSERT_GT(whole.accepted, 0u);
  for (const double bound : {1e-12, took / 4, took / 2}) {
    McmcOptions bounded = options;
    bounded.max_seconds = bound;
    const McmcResult stopped = mcmc_search(library(), graph, cost, bounded);
    if (bound == 1e-12) {
      ASSERT_TRUE(stopped.stopped_by_time());
      EXPECT_EQ(stopped.steps, 0u);
    }
    McmcOptions going_on = options;
    going_on.resume = &stopped;
    const McmcResult resumed = mcmc_search(library(), graph, cost, going_on);
    EXPECT_FALSE(resumed.stopped_by_time()) << bound;
    expect_same_walk(resumed, whole);
  }
}

TEST(Mcmc, ImprovesOnEverythingOnOneDevice) {
  const pcg::Graph graph = model("mlp");
  const CostModel cost(library(), machine(4));
  const McmcResult r = mcmc_search(library(), graph, cost, mcmc_options(200, 5, unsplit_placements(graph)));
  EXPECT_LT(r.seconds, r.initial_seconds);
  // Something left device 0's single task: a split, or an operator moved to another device.
  const auto start = unsplit_placements(graph);
  bool changed = count_split(r.placements) > 0;
  for (std::size_t i = 0; i < start.size(); ++i) changed |= r.placements[i].first_device != start[i].first_device;
  EXPECT_TRUE(changed);
}

// The second stage reuses a walk already made over the graph the first stage rewrote to, and
// only over that graph: a walk of one step from one device stands out by its result.
TEST(SequentialOptimization, ReusesAWalkOverTheGraphItMadeAndNoOther) {
  const pcg::Graph graph = models::build_model(library(), "mlp_fig1", {{"batch", 1024}});
  const std::string specs = spec::Library::default_specs_dir();
  const auto rules = spec::load_rule_file(library(), {specs}, specs + "/rules/unity.loom");
  const CostModel cost(library(), machine(2));
  SequentialOptions options;
  options.mcmc.iterations = 30;
  const SequentialResult own = sequential_optimization(library(), graph, rules, cost, options);
  ASSERT_NE(own.graph, graph) << "the first stage should rewrite this model";
  const McmcResult marker = mcmc_search(library(), own.graph, cost, mcmc_options(1, 99, unsplit_placements(own.graph)));
  ASSERT_NE(marker.seconds, own.seconds) << "the two walks should end in different plans";
  options.walked = {{graph, marker}};
  EXPECT_EQ(sequential_optimization(library(), graph, rules, cost, options).seconds, own.seconds);
  options.walked.emplace_back(own.graph, marker);
  const SequentialResult reused = sequential_optimization(library(), graph, rules, cost, options);
  EXPECT_EQ(reused.seconds, marker.seconds);
  EXPECT_EQ(reused.placements, marker.placements);
}

TEST(SequentialOptimization, FusesMatmulReluWhereItPaysOnOneDevice) {
  const pcg::Graph graph = model("mlp_fig1");
  const std::string specs = spec::Library::default_specs_dir();
  const auto rules = spec::load_rule_file(library(), {specs}, specs + "/rules/unity.loom");
  const CostModel cost(library(), machine(2));
  SequentialOptions options;
  options.mcmc.iterations = 50;
  const SequentialResult result = sequential_optimization(library(), graph, rules, cost, options);
  std::set<std::string> applied;
  for (const auto& s : result.substitutions) {
    EXPECT_EQ(s.category, "algebraic") << s.rule;
    applied.insert(s.rule);
  }
  EXPECT_TRUE(applied.count("fuse_matmul_relu"));
  std::map<std::string, int> ops;
  for (const pcg::Node& n : result.graph.nodes()) ++ops[n.op];
  EXPECT_EQ(ops["matmul_relu"], 1);
  EXPECT_EQ(ops["relu"], 0);
  const Machine one = machine(2).with_devices_per_node(1);
  const CostModel single(library(), one);
  const double before = plan_cost(materialize(graph, unsplit_placements(graph), library()), single).seconds;
  EXPECT_LT(result.single_device_seconds, before);
  expect_same_values(graph, result.graph);
  expect_sound_plan(result.graph, result.placements, cost);
}

}  // namespace
}  // namespace loom::search
