// Recycling passes, as AlphaFold2 trains: a stop-gradient passes values on and no gradient back, a
// pass that only feeds the next runs no backward, and a pipeline whose data goes round its stages
// once per pass runs lap by lap (SuperScaler's 3F1B), following the single-process run.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "loom/interpreter/input_roles.hpp"
#include "loom/runtime/microbatches.hpp"
#include "loom/search/memory.hpp"
#include "loom/search/pipeline.hpp"
#include "loom/search/pipeline_order.hpp"
#include "loom/search/plan_cost.hpp"
#include "loom/search/simulator.hpp"
#include "loom/search/task_graph.hpp"
#include "training_check.hpp"

namespace loom::runtime {
namespace {

using namespace sharded_test;

// The product of a [3, 4] and a [4, 5] matrix, row-major, by hand.
std::vector<double> product_3x4_4x5(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> out(3 * 5, 0);
  for (std::size_t i = 0; i < 3; ++i)
    for (std::size_t j = 0; j < 5; ++j)
      for (std::size_t k = 0; k < 4; ++k) out[i * 5 + j] += a[i * 4 + k] * b[k * 5 + j];
  return out;
}

// y = stop_gradient(x · w1) · w2.
pcg::Graph stopped_chain() {
  pcg::Graph g;
  const int x = g.add_input("x", pcg::ParallelShape::unpartitioned({3, 4}));
  const int w1 = g.add_input("w1", pcg::ParallelShape::unpartitioned({4, 5}), true);
  const int w2 = g.add_input("w2", pcg::ParallelShape::unpartitioned({5, 2}), true);
  const int h = g.add_node(library(), "matmul", {}, {{x, 0}, {w1, 0}}, "h");
  const int s = g.add_node(library(), "stop_gradient", {}, {{h, 0}}, "s");
  g.mark_output({g.add_node(library(), "matmul", {}, {{s, 0}, {w2, 0}}, "y"), 0});
  return g;
}

TEST(StopGradient, PassesTheValueOnAndNoGradientBack) {
  const pcg::Graph g = stopped_chain();
  EXPECT_TRUE(spec::detached_input(library(), g.node(*g.find("s")), 0));
  EXPECT_FALSE(spec::detached_input(library(), g.node(*g.find("y")), 0));
  const NamedTensors<double> feeds = models::random_values(library(), g, 3);
  LocalTransport local;
  ShardedExecutor<double> e(library(), g, builtin_kernels(), local, {"w1", "w2"}, 1);
  e.forward(feeds);
  Tensor<double> out_grad = e.output(0);
  for (std::size_t k = 0; k < out_grad.data.size(); ++k) out_grad.data[k] = std::sin(static_cast<double>(k) + 1);
  const NamedTensors<double> grads = e.backward({out_grad});
  // By hand: h = x · w1, dy/dw2 = hᵀ · g, and nothing reaches w1.
  const auto& x = feeds.at("x").data;
  const auto& w1 = feeds.at("w1").data;
  const std::vector<double> h = product_3x4_4x5(x, w1);
  const Tensor<double>& dw2 = grads.at("w2");
  ASSERT_EQ(dw2.dims, (std::vector<std::int64_t>{5, 2}));
  for (int j = 0; j < 5; ++j)
    for (int c = 0; c < 2; ++c) {
      double expected = 0;
      for (int i = 0; i < 3; ++i) expected += h[static_cast<std::size_t>(i * 5 + j)] * out_grad.data[static_cast<std::size_t>(i * 2 + c)];
      EXPECT_NEAR(dw2.data[static_cast<std::size_t>(j * 2 + c)], expected, 1e-12) << j << ", " << c;
    }
  for (double v : grads.at("w1").data) EXPECT_EQ(v, 0.0);
  // Neither h nor the stop-gradient ran a backward; y did.
  EXPECT_EQ(e.operator_times()[static_cast<std::size_t>(*g.find("h"))].backward_tasks, 0);
  EXPECT_EQ(e.operator_times()[static_cast<std::size_t>(*g.find("s"))].backward_tasks, 0);
  EXPECT_EQ(e.operator_times()[static_cast<std::size_t>(*g.find("y"))].backward_tasks, 1);
  // The simulator charges no backward to the stopped pass either.
  const search::CostModel cost(library(), machine_of(1));
  const std::vector<bool> flow = cost.gradient_values(g);
  EXPECT_FALSE(flow[static_cast<std::size_t>(*g.find("h"))]);
  EXPECT_TRUE(flow[static_cast<std::size_t>(*g.find("y"))]);
  int stopped = 0;
  for (const search::SimTask& t : search::build_task_graph(g, cost).tasks)
    if (t.kind == search::TaskKind::Compute && t.node == *g.find("h")) {
      EXPECT_EQ(t.backward_seconds, 0.0) << t.label;
      ++stopped;
    }
  EXPECT_EQ(stopped, 2);  // its forward task and the backward pass's mirror of it
}

// A user's operator whose first input is detached and second is not: y = gate(a, b) + a, with
// a = x · w1, b = x · w2 and gate(a, b) = a ⊙ b. The gradient reaches a by the sum alone: w1's is
// xᵀ g, w2's xᵀ (g ⊙ a).
TEST(StopGradient, AnOperatorWithOneDetachedInputPassesTheOthersGradient) {
  const std::string ops = spec::Library::default_specs_dir() + "/ops/";
  const spec::Library lib =
      spec::Library::from_text("import \"" + ops + "core.loom\";\nimport \"" + ops + "linalg.loom\";\n" +
                                   "op gate(a: [m, n] @detached, b: [m, n]) -> [m, n] {\n  out[i, j] = a[i, j] * b[i, j];\n}\n",
                               "gate.loom");
  pcg::Graph g;
  const int x = g.add_input("x", pcg::ParallelShape::unpartitioned({3, 4}));
  const int w1 = g.add_input("w1", pcg::ParallelShape::unpartitioned({4, 5}), true);
  const int w2 = g.add_input("w2", pcg::ParallelShape::unpartitioned({4, 5}), true);
  const int a = g.add_node(lib, "matmul", {}, {{x, 0}, {w1, 0}}, "a");
  const int b = g.add_node(lib, "matmul", {}, {{x, 0}, {w2, 0}}, "b");
  const int gated = g.add_node(lib, "gate", {}, {{a, 0}, {b, 0}}, "gated");
  g.mark_output({g.add_node(lib, "ewadd", {}, {{gated, 0}, {a, 0}}, "y"), 0});
  const NamedTensors<double> feeds = models::random_values(lib, g, 4);
  LocalTransport local;
  ShardedExecutor<double> e(lib, g, builtin_kernels(), local, {"w1", "w2"}, 1);
  e.forward(feeds);
  Tensor<double> out_grad = e.output(0);
  for (std::size_t k = 0; k < out_grad.data.size(); ++k) out_grad.data[k] = std::cos(static_cast<double>(k));
  const NamedTensors<double> grads = e.backward({out_grad});
  const auto& xs = feeds.at("x").data;
  const auto& w1s = feeds.at("w1").data;
  const std::vector<double> av = product_3x4_4x5(xs, w1s);
  for (int k = 0; k < 4; ++k)
    for (int j = 0; j < 5; ++j) {
      double expected = 0;
      for (int i = 0; i < 3; ++i)
        expected += xs[static_cast<std::size_t>(i * 4 + k)] * out_grad.data[static_cast<std::size_t>(i * 5 + j)] *
                    av[static_cast<std::size_t>(i * 5 + j)];
      EXPECT_NEAR(grads.at("w2").data[static_cast<std::size_t>(k * 5 + j)], expected, 1e-12) << k << ", " << j;
      double direct = 0;
      for (int i = 0; i < 3; ++i) direct += xs[static_cast<std::size_t>(i * 4 + k)] * out_grad.data[static_cast<std::size_t>(i * 5 + j)];
      EXPECT_NEAR(grads.at("w1").data[static_cast<std::size_t>(k * 5 + j)], direct, 1e-12) << k << ", " << j;
    }
}

pcg::Graph recycled_alphafold() {
  return models::build_model(
      library(), "alphafold2",
      {{"batch", 4}, {"sequences", 3}, {"residues", 4}, {"hidden", 8}, {"heads", 2}, {"opm", 2}, {"layers", 2}, {"recycles", 2}});
}

TEST(Recycling, OnlyTheLastPassTrainsAndTheWeightsAreShared) {
  const pcg::Graph g = recycled_alphafold();
  const pcg::Graph once = models::build_model(
      library(), "alphafold2", {{"batch", 4}, {"sequences", 3}, {"residues", 4}, {"hidden", 8}, {"heads", 2}, {"opm", 2}, {"layers", 2}});
  // The recycling passes add two layer norms' weights and no other.
  EXPECT_EQ(spec::trainable_weights(library(), g).size(), spec::trainable_weights(library(), once).size() + 4);
  LocalTransport local;
  ShardedExecutor<double> e(library(), g, builtin_kernels(), local, spec::trainable_weights(library(), g), 1);
  const std::vector<bool> flow = e.values_taking_gradients();
  std::size_t first = 0, second = 0, last = 0;
  for (const pcg::Node& n : g.nodes()) {
    if (n.is_graph_input() || n.name.empty()) continue;
    const bool trains = flow[n.id.index()];
    if (n.name.starts_with("evoformer")) first += trains ? 1 : 0;
    if (n.name.starts_with("recycle1.")) second += trains ? 1 : 0;
    if (n.name.starts_with("recycle2.evoformer")) last += trains ? 1 : 0;
  }
  EXPECT_GT(std::count_if(g.nodes().begin(), g.nodes().end(), [](const pcg::Node& n) { return n.name.starts_with("recycle1.evoformer"); }),
            100);
  EXPECT_EQ(first, 0u);
  EXPECT_EQ(second, 0u);
  EXPECT_GT(last, 100u);
  // The passes before the last keep nothing for the backward pass: three passes hold about what
  // one does, measured and simulated (three kept passes would hold about three times as much).
  const auto peaks = [](const pcg::Graph& model) {
    TrainSettings s;
    s.steps = 1;
    search::MemoryOptions memory;
    memory.bytes_per_element = sizeof(double);
    memory.activations_only = true;
    const search::CostModel cost(library(), machine_of(1));
    memory.moves_data = [&](const pcg::Node& n) { return !n.is_graph_input() && !cost.is_compute(n); };
    memory.detached = cost.detached_inputs();
    return std::pair{static_cast<double>(train<double>(library(), model, s).peak_activation_bytes),
                     search::memory_per_device(model, machine_of(1), memory)[0]};
  };
  const auto [recycled, recycled_simulated] = peaks(g);
  const auto [single, single_simulated] = peaks(once);
  EXPECT_LT(recycled, 1.2 * single) << recycled << " against " << single;
  EXPECT_LT(recycled_simulated, 1.2 * single_simulated) << recycled_simulated << " against " << single_simulated;
  EXPECT_NEAR(recycled_simulated, recycled, 0.1 * recycled);
}

// As specs/schedules/seed_plans.loom assigns it: the second block of each pass on the second stage,
// from the first of its operators on; each pass's recycling and first block on the first stage.
// Each micro-batch goes round the stages three times.
pcg::Graph three_laps(const pcg::Graph& model, int devices) {
  std::vector<int> stage_of(model.size(), -1);
  std::vector<std::size_t> last_first_block(3, 0);
  for (const pcg::Node& n : model.nodes())
    for (std::size_t pass = 1; pass < 3; ++pass)
      if (n.name.starts_with("recycle" + std::to_string(pass) + ".evoformer0.")) last_first_block[pass] = n.id.index();
  int stage = 0;
  std::size_t back_to_first_until = 0;
  for (const pcg::Node& n : model.nodes()) {
    if (n.is_graph_input()) continue;
    if (n.name.starts_with("evoformer1.")) stage = 1;
    for (std::size_t pass = 1; pass < 3; ++pass)
      if (n.name == "recycle" + std::to_string(pass) + ".recycled_msa") back_to_first_until = last_first_block[pass];
    stage_of[n.id.index()] = n.id.index() <= back_to_first_until ? 0 : stage;
  }
  return search::materialize(model, search::pipeline_placements(library(), model, stage_of, 2, devices), library());
}

TEST(Recycling, ThreeLapsRunTheirForwardOnlyLapsFirstThenOneFOneB) {
  // Built by hand: two micro-batches on the first of two stages, then on the second.
  using Step = search::PipelineStep;
  const std::vector<Step> first{{0, 0, false}, {1, 0, false}, {0, 1, false}, {1, 1, false},
                                {0, 2, false}, {1, 2, false}, {0, 2, true},  {1, 2, true}};
  const std::vector<Step> second{{0, 0, false}, {1, 0, false}, {0, 1, false}, {1, 1, false},
                                 {0, 2, false}, {0, 2, true},  {1, 2, false}, {1, 2, true}};
  EXPECT_EQ(search::stage_steps(search::PipelineOrder::OneFOneB, 0, 2, 2, 3), first);
  EXPECT_EQ(search::stage_steps(search::PipelineOrder::OneFOneB, 1, 2, 2, 3), second);
  const pcg::Graph model = recycled_alphafold();
  const pcg::Graph plan = three_laps(model, 4);
  const std::vector<int> laps = search::pipeline_laps(plan, 2, 4);
  EXPECT_EQ(laps[static_cast<std::size_t>(*plan.find("evoformer1.pair_transition.norm.layer_norm"))], 0);
  EXPECT_EQ(laps[static_cast<std::size_t>(*plan.find("recycle1.evoformer0.pair_transition.norm.layer_norm"))], 1);
  EXPECT_EQ(laps[static_cast<std::size_t>(*plan.find("recycle2.evoformer1.pair_transition.norm.layer_norm"))], 2);
  // Only the last lap trains: each process keeps its stage's order.
  LocalTransport local;
  ShardedExecutor<double> e(library(), plan, builtin_kernels(), local, spec::trainable_weights(library(), plan), 4);
  const search::Pipeline pipeline{2, 2, search::PipelineOrder::OneFOneB};
  EXPECT_FALSE(search::runs_in_one_order(plan, 2, 4, e.values_taking_gradients()));
  EXPECT_EQ(process_passes(plan, pipeline, 0, 4, 4, false, e.values_taking_gradients()), first);
  EXPECT_EQ(process_passes(plan, pipeline, 3, 4, 4, false, e.values_taking_gradients()), second);
  // Were the passes before to train, a gradient would go back round the lap: one order for all.
  std::vector<bool> all(plan.size(), true);
  EXPECT_TRUE(search::runs_in_one_order(plan, 2, 4, all));
}

// The simulator orders each stage's steps as the processes run them, and the passes before the
// last cost nothing in the backward pass, their moves included.
TEST(Recycling, TheSimulatorRunsEachStagesLapsInItsOrder) {
  const pcg::Graph plan = three_laps(recycled_alphafold(), 4);
  const search::CostModel cost(library(), machine_of(4));
  const search::Pipeline pipeline{2, 2, search::PipelineOrder::OneFOneB};
  const search::TaskGraph tasks = search::build_pipeline_task_graph(plan, cost, pipeline, library());
  const search::Timeline timeline = search::simulate(tasks);
  const std::vector<int> laps = search::pipeline_laps(plan, 2, 4);
  const int last = *std::max_element(laps.begin(), laps.end());
  // Per stage, when each step's first compute task with work to do started.
  std::vector<std::map<std::tuple<int, int, bool>, double>> first_start(2);
  std::size_t forward_only_mirrors = 0;
  for (std::size_t i = 0; i < tasks.tasks.size(); ++i) {
    const search::SimTask& t = tasks.tasks[i];
    if (t.node == pcg::kNoNode) continue;  // a micro-batch's gradients added up
    const int lap = laps[t.node.index()];
    if (t.backward && lap < last && !plan.node(t.node).is_graph_input()) {
      EXPECT_EQ(t.seconds, 0.0) << t.label;
      ++forward_only_mirrors;
    }
    if (t.kind != search::TaskKind::Compute || t.seconds <= 0) continue;
    const int stage = search::stage_of_device(t.device, 4, 2);
    auto [at, fresh] =
        first_start[static_cast<std::size_t>(stage)].try_emplace({t.microbatch, t.backward ? last : lap, t.backward}, timeline.start[i]);
    if (!fresh) at->second = std::min(at->second, timeline.start[i]);
  }
  EXPECT_GT(forward_only_mirrors, 100u);
  for (int stage = 0; stage < 2; ++stage) {
    std::vector<std::pair<double, search::PipelineStep>> started;
    for (const auto& [step, start] : first_start[static_cast<std::size_t>(stage)])
      started.push_back({start, {std::get<0>(step), std::get<1>(step), std::get<2>(step)}});
    std::stable_sort(started.begin(), started.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<search::PipelineStep> order;
    for (const auto& [start, step] : started) order.push_back(step);
    EXPECT_EQ(order, search::stage_steps(pipeline.order, stage, 2, 2, last + 1)) << "stage " << stage;
  }
}

// The pipeline search's stages for a graph that runs its layers again follow the weights: each pass
// goes round the stages, and every stage holds its layers' weights once.
TEST(Recycling, ThePipelineSearchOffersStagesThatFollowTheWeights) {
  const pcg::Graph model = recycled_alphafold();
  const search::CostModel cost(library(), machine_of(4));
  const std::vector<int> stage_of = search::looping_stages(model, cost, 2);
  ASSERT_EQ(stage_of.size(), model.size());
  const pcg::Graph plan = search::materialize(model, search::pipeline_placements(library(), model, stage_of, 2, 4), library());
  const std::vector<int> laps = search::pipeline_laps(plan, 2, 4);
  EXPECT_EQ(*std::max_element(laps.begin(), laps.end()), 2);
  for (const pcg::Node& w : model.nodes()) {
    if (w.op != pcg::kWeightOp) continue;
    std::set<int> stages;
    for (pcg::NodeId reader : model.consumers(w.id)) stages.insert(stage_of[reader.index()]);
    EXPECT_EQ(stages.size(), 1u) << w.name;
  }
  // A graph that reads each weight once has no such stages.
  EXPECT_TRUE(search::looping_stages(small_mlp(), cost, 2).empty());
}

TEST(Recycling, APipelineGoingRoundItsStagesFollowsTheSingleProcessRun) {
  LocalTransport local;
  const SuiteModel model{"alphafold2, 3 passes", recycled_alphafold(), LossKind::CrossEntropy};
  for (search::PipelineOrder order : {search::PipelineOrder::OneFOneB, search::PipelineOrder::GPipe}) {
    SCOPED_TRACE(order == search::PipelineOrder::GPipe ? "GPipe" : "1F1B");
    expect_training_matches<double>(model, three_laps(model.graph, 4), 4, local, 1e-9, 3, Backend::Cpu, nullptr,
                                    search::Pipeline{2, 2, order});
  }
}

}  // namespace
}  // namespace loom::runtime
