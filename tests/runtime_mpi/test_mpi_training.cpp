// The correctness suite across processes launched by mpirun, one per device: each model trained
// through each plan follows the single-process run step by step and ends with its weights.
#include <algorithm>
#include <functional>
#include <set>

#include "../runtime/host_device.hpp"
#include "../runtime/trace_check.hpp"
#include "../runtime/training_check.hpp"
#include "loom/pcg/match.hpp"
#include "loom/pcg/rewrite.hpp"
#include "loom/runtime/initializer.hpp"
#include "loom/runtime/operator_profile.hpp"
#include "loom/search/output_loss.hpp"

#include "mpi_world.hpp"
#include "passing_transport.hpp"

namespace loom::runtime {
namespace {

using namespace sharded_test;

using mpi_test::PassingTransport;
using mpi_test::world;

// Passes every call on, listing the element counts of the sums over all processes and of this
// process's values in every all-gather.
class WholeSums final : public PassingTransport {
 public:
  using PassingTransport::PassingTransport;
  void sum_values(HostValues v, const std::vector<int>* g) override {
    if (!g) sizes.push_back(v.count);
    PassingTransport::sum_values(v, g);
  }
  void gather_values(HostValues mine, HostValues all, const std::vector<int>& g) override {
    gathered.push_back(mine.count);
    PassingTransport::gather_values(mine, all, g);
  }
  std::vector<std::size_t> sizes;
  std::vector<std::size_t> gathered;

 private:
  void pass(const char*, const std::function<void()>& run) override { run(); }
};

class MpiTraining : public ::testing::TestWithParam<PlanKind> {};

TEST_P(MpiTraining, FollowsTheSingleProcessRunInDouble) {
  ASSERT_GE(world().size(), 2) << "start it with mpirun -np 2 or more";
  for (const SuiteModel& model : suite_models()) {
    SCOPED_TRACE(model.name + ", " + plan_name(GetParam()) + ", " + std::to_string(world().size()) + " processes");
    expect_training_matches<double>(model, plan_graph(GetParam(), model.graph, world().size()), world().size(), world(), 1e-9);
  }
}

INSTANTIATE_TEST_SUITE_P(Plans, MpiTraining, all_plan_kinds, plan_test_name);

// Each process runs its stage's passes: the first stage fills the pipeline while the last
// already sends gradients back, and the losses and weights are still the single process's.
TEST(MpiTraining, PipelinedPlansFollowTheSingleProcessRun) {
  for (const SuiteModel& model : suite_models())
    for (search::PipelineOrder order : {search::PipelineOrder::OneFOneB, search::PipelineOrder::GPipe}) {
      const int stages = pipeline_stages_for(model.graph, world().size(), 2);
      SCOPED_TRACE(model.name + (order == search::PipelineOrder::GPipe ? ", GPipe, " : ", 1F1B, ") + std::to_string(world().size()) +
                   " processes");
      expect_training_matches<double>(model, pipelined_plan(model.graph, world().size(), stages), world().size(), world(), 1e-9, 10,
                                      Backend::Cpu, nullptr, search::Pipeline{stages, 2, order});
    }
}

// The lookups and LM head sharing GPT-3's embedding table are cut by vocabulary across both
// stages: every process holds some of the output's classes and shares its rows' statistics for the
// loss, and, the head spanning both stages, every process runs one order.
TEST(MpiTraining, AnInterlacedPipelineFollowsTheSingleProcessRun) {
  const SuiteModel model = tied_gpt3();
  const search::PipelineResult r = interlaced_pipeline(model.graph, world().size());
  ASSERT_TRUE(r.interlaced) << r.none_because;
  constexpr std::int64_t steps = 10;
  WholeSums counted(world());
  expect_training_matches<double>(model, r.plan, world().size(), counted, 1e-9, steps, Backend::Cpu, nullptr, r.pipeline);
  // The processes holding classes of a micro-batch's output gather rows' statistics, at most two
  // numbers for each of its rows, at least once each.
  const auto rows = static_cast<std::size_t>(search::output_rows(r.plan.shape_of(r.plan.outputs().front()).dims) / r.pipeline.microbatches);
  const auto gathers = std::count_if(counted.gathered.begin(), counted.gathered.end(), [&](std::size_t n) {
    return n > 0 && n <= rows * search::kRowStatistics && n % search::kRowStatistics == 0;
  });
  EXPECT_TRUE(gathers == 0 || gathers >= steps * r.pipeline.microbatches) << gathers;
  std::vector<double> everyones{static_cast<double>(gathers)};
  world().sum(everyones);
  EXPECT_GE(everyones[0], 2.0 * steps * r.pipeline.microbatches);
}

// A two-stage pipeline whose last stage splits the output along its classes between its two
// devices: those two gather their rows' statistics for each micro-batch's loss, in their own
// stage's order, and no other process takes part.
TEST(MpiTraining, APipelinesLastStageSplittingItsOutputsClassesFollowsTheSingleProcessRun) {
  if (world().size() != 4) GTEST_SKIP() << "a stage of two devices in two stages needs 4 processes (mpirun -np 4)";
  const SuiteModel model{"mlp", small_mlp(), LossKind::CrossEntropy};
  const std::vector<int> stage_of = search::balanced_stages(model.graph, search::CostModel(library(), machine_of(4)), 2);
  std::vector<search::Placement> placements = search::pipeline_placements(library(), model.graph, stage_of, 2, 4);
  const pcg::Node& head = model.graph.node(model.graph.outputs().front().node);
  search::Placement& last = placements.at(head.id.index());
  ASSERT_EQ(last.first_device, 2);
  for (const search::ParallelConfig& c : search::node_configs(library(), model.graph, head, {2}))
    if (c.outputs.at(0).D == std::vector<std::int64_t>{1, 2}) last.config = c;
  ASSERT_EQ(last.config.outputs.at(0).D, (std::vector<std::int64_t>{1, 2}));
  const pcg::Graph plan = search::materialize(model.graph, placements, library());
  constexpr std::int64_t steps = 10;
  WholeSums counted(world());
  expect_training_matches<double>(model, plan, 4, counted, 1e-9, steps, Backend::Cpu, nullptr, search::Pipeline{2, 2});
  // Each micro-batch's 4 rows, two numbers each, on the last stage's two devices alone.
  const auto gathers = std::count(counted.gathered.begin(), counted.gathered.end(), std::size_t{4 * search::kRowStatistics});
  EXPECT_EQ(gathers, world().rank() >= 2 ? 2 * steps : 0);
}

// GPT-3's embedding table read by the lookups in the first stage and by the LM head in the last:
// each process runs its own stage's order, and the table's gradient is summed over the two stages
// once, after the last pass.
TEST(MpiTraining, AWeightReadInTwoStagesFollowsTheSingleProcessRun) {
  const SuiteModel model = tied_gpt3();
  for (search::PipelineOrder order : {search::PipelineOrder::OneFOneB, search::PipelineOrder::GPipe}) {
    SCOPED_TRACE(order == search::PipelineOrder::GPipe ? "GPipe" : "1F1B");
    expect_training_matches<double>(model, pipelined_plan(model.graph, world().size(), 2), world().size(), world(), 1e-9, 10, Backend::Cpu,
                                    nullptr, search::Pipeline{2, 2, order});
  }
}

TEST(MpiTraining, FloatFollowsTheSingleProcessRun) {
  for (const SuiteModel& model : suite_models()) {
    SCOPED_TRACE(model.name);
    expect_training_matches<float>(model, plan_graph(PlanKind::DataParallel, model.graph, world().size()), world().size(), world(), 1e-4);
  }
}

// Values a backend keeps in device memory are staged through the host for the messages and
// collectives between processes: each process's device runs its tasks, and the run follows the
// single-process run on the CPU.
TEST(MpiTraining, ValuesOnADeviceFollowTheSingleProcessRun) {
  testing::HostDevice<double> device;
  const KernelRegistry kernels = testing::host_device_registry(device);
  for (const SuiteModel& model : suite_models())
    for (PlanKind kind : {PlanKind::DataParallel, PlanKind::Megatron}) {
      SCOPED_TRACE(model.name + ", " + plan_name(kind));
      expect_training_matches<double>(model, plan_graph(kind, model.graph, world().size()), world().size(), world(), 1e-9, 10,
                                      Backend::Cuda, &kernels);
    }
  EXPECT_GT(device.copies_to_host, 0u);
}

// Six steps of Adam on the model, as the resumed runs below train it.
TrainSettings adam_settings(const SuiteModel& model) {
  TrainSettings s;
  s.steps = 6;
  s.loss = model.loss;
  s.run_name = model.name;
  s.optimizer = optimizer_from_name("adam");
  return s;
}

// A run's losses and weights are the single-process run's, to 1e-9.
void expect_follows(const TrainReport& run, const TrainReport& whole) {
  ASSERT_EQ(run.losses.size(), whole.losses.size());
  for (std::size_t i = 0; i < whole.losses.size(); ++i)
    expect_relatively_near(run.losses[i], whole.losses[i], 1e-9, "loss of step " + std::to_string(i + 1));
  for (const auto& [name, want] : whole.weights)
    for (std::size_t k = 0; k < want.data.size(); ++k)
      expect_relatively_near(run.weights.at(name).data[k], want.data[k], 1e-9, name + "[" + std::to_string(k) + "]");
}

// `s` run through `plan` to half its steps with a checkpoint (tagged `tag`), then resumed from it to
// the end: the resumed run's report.
TrainReport resumed_run(const TrainSettings& s, const pcg::Graph& plan, const search::Pipeline& pipeline, const std::string& tag) {
  TrainSettings first = s;
  first.pipeline = pipeline;
  first.plan_devices = world().size();
  first.steps = s.steps / 2;
  first.checkpoint = ::testing::TempDir() + "loom_mpi_" + tag + "_" + std::to_string(world().size()) + ".ckpt";
  train<double>(library(), plan, first, {}, &world());
  std::vector<double> written{1};
  world().sum(written);  // rank 0 has written the checkpoint
  TrainSettings rest = first;
  rest.steps = s.steps;
  rest.checkpoint.clear();
  rest.resume = first.checkpoint;
  return train<double>(library(), plan, rest, {}, &world());
}

// Adam keeps moments per element; each process updates only the weight elements it reads, so a
// checkpoint has to gather weights and moments from the processes that hold them: a run resumed
// from one follows the single-process run.
// A pipeline's stages each hold the moments of their own weights alone; the checkpoint holds them all.
TEST(MpiTraining, AdamResumedFromACheckpointFollowsTheSingleProcessRun) {
  const SuiteModel model = suite_models().front();
  const TrainSettings s = adam_settings(model);
  const TrainReport whole = train<double>(library(), model.graph, s);
  const int stages = pipeline_stages_for(model.graph, world().size(), 2);
  for (const char* kind : {"megatron", "reduction", "pipeline"}) {
    SCOPED_TRACE(kind);
    const bool pipelined = std::string(kind) == "pipeline";
    const pcg::Graph plan = pipelined                         ? pipelined_plan(model.graph, world().size(), stages)
                            : std::string(kind) == "megatron" ? plan_graph(PlanKind::Megatron, model.graph, world().size())
                                                              : plan_graph(PlanKind::Reduction, model.graph, world().size());
    const TrainReport resumed =
        resumed_run(s, plan, pipelined ? search::Pipeline{stages, 2} : search::Pipeline{}, std::string("adam_") + kind);
    expect_follows(resumed, whole);
  }
}

// The transformer's query, key and value projections merged into one: their weights and biases
// are folded into one weight each. Each plan of the merged graph trains as the model does, and a
// checkpoint keeps the model's own weights and moments, gathered from the processes that hold them.
TEST(MpiTraining, FoldedWeightsFollowTheSingleProcessRunAndResumeFromACheckpoint) {
  const SuiteModel model = suite_models()[1];
  const auto& rules = unity_rules();
  const auto merge = std::find_if(rules.begin(), rules.end(), [](const pcg::Rule& r) { return r.id == "merge_head_projs"; });
  ASSERT_NE(merge, rules.end());
  pcg::Graph merged = model.graph;
  for (int i = 0; i < 2; ++i) {
    bool applied = false;
    for (const pcg::Match& m : pcg::find_matches(pcg::GraphIndex(merged), *merge))
      if (auto outcome = pcg::apply_match(merged, *merge, m, library()); outcome.rewrite) {
        merged = std::move(outcome.rewrite->graph);
        applied = true;
        break;
      }
    ASSERT_TRUE(applied);
  }
  ASSERT_EQ(
      std::count_if(merged.nodes().begin(), merged.nodes().end(), [](const pcg::Node& n) { return static_cast<bool>(n.folded_from); }), 2);
  const TrainSettings s = adam_settings(model);
  const TrainReport whole = train<double>(library(), model.graph, s);
  const int stages = pipeline_stages_for(merged, world().size(), 2);
  for (const char* kind : {"data parallel", "megatron", "pipeline"}) {
    SCOPED_TRACE(kind);
    const bool pipelined = std::string(kind) == "pipeline";
    const pcg::Graph plan = pipelined                         ? pipelined_plan(merged, world().size(), stages)
                            : std::string(kind) == "megatron" ? plan_graph(PlanKind::Megatron, merged, world().size())
                                                              : plan_graph(PlanKind::DataParallel, merged, world().size());
    const TrainReport resumed = resumed_run(s, plan, pipelined ? search::Pipeline{stages, 2} : search::Pipeline{}, "folded");
    ASSERT_EQ(resumed.weights.size(), whole.weights.size());
    expect_follows(resumed, whole);
  }
}

// Under a Megatron plan of a transformer layer each process reads only a share of the split
// weights: it updates only that share, and every element is updated by some process.
TEST(MpiTraining, EachProcessUpdatesTheWeightElementsItReads) {
  const SuiteModel model = suite_models().at(1);  // the transformer layer
  const pcg::Graph plan = plan_graph(PlanKind::Megatron, model.graph, world().size());
  const std::set<std::string> weights = trainable_weights(library(), plan);
  ShardedExecutor<double> executor(library(), plan, builtin_kernels(), world(), weights, world().size());
  const ElementRanges* exact = executor.exact_elements();
  ASSERT_NE(exact, nullptr);
  double updates = 0, replicated_updates = 0;
  for (const std::string& name : weights) {
    // How many processes update each element.
    std::vector<double> coverage(static_cast<std::size_t>(Tensor<double>::element_count(plan.node(*plan.find(name)).output_shapes[0].dims)),
                                 0);
    if (auto it = exact->find(name); it != exact->end())
      for (const ElementRange& r : it->second)
        for (std::size_t k = r.begin; k < r.end; ++k) coverage[k] += 1;
    world().sum(coverage);
    for (std::size_t k = 0; k < coverage.size(); ++k) {
      ASSERT_GE(coverage[k], 1) << name << "[" << k << "] is updated by no process";
      updates += coverage[k];
    }
    replicated_updates += static_cast<double>(coverage.size() * static_cast<std::size_t>(world().size()));
  }
  EXPECT_LT(updates, replicated_updates) << "every process updates every weight element";
}

// A process times its updates of the weights it updates elements of; summed over the processes,
// each weight has one update per step from each process updating it, and its profile is keyed by
// the box each of them updates.
TEST(MpiTraining, WeightUpdatesAreTimedWhereTheyRunAndSummedOverTheProcesses) {
  const SuiteModel model = suite_models().at(1);  // the transformer layer
  const pcg::Graph plan = plan_graph(PlanKind::Megatron, model.graph, world().size());
  TrainSettings s;
  s.steps = 3;
  s.warmup_steps = 1;
  s.plan_devices = world().size();
  const TrainReport report = train<double>(library(), plan, s, {}, &world());
  ShardedExecutor<double> executor(library(), plan, builtin_kernels(), world(), trainable_weights(library(), plan), world().size());
  const ElementRanges& exact = *executor.exact_elements();
  const std::vector<OperatorTime> summed = summed_over_processes(report.operator_times, world());
  const search::Machine machine = machine_of(world().size());
  std::map<int, const OperatorProfile*> profiles;
  const std::vector<OperatorProfile> all = operator_profiles(library(), plan, machine, summed, "sgd", world().size());
  for (const OperatorProfile& p : all) profiles[p.node] = &p;
  for (const std::string& name : trainable_weights(library(), plan)) {
    SCOPED_TRACE(name);
    const int id = *plan.find(name);
    const OperatorTime& mine = report.operator_times[static_cast<std::size_t>(id)];
    std::int64_t elements = 0;
    if (auto it = exact.find(name); it != exact.end())
      for (const ElementRange& r : it->second) elements += static_cast<std::int64_t>(r.end - r.begin);
    EXPECT_EQ(mine.updates, elements > 0 ? 2 : 0);
    EXPECT_EQ(mine.update_seconds > 0, elements > 0);
    std::vector<double> updating{elements > 0 ? 1.0 : 0.0};
    world().sum(updating);
    EXPECT_EQ(summed[static_cast<std::size_t>(id)].updates, 2 * static_cast<std::int64_t>(updating[0]));
    if (elements > 0 && profiles.count(id)) {
      std::int64_t box = 1;
      for (std::int64_t d : profiles[id]->key.inputs.at(0).dims) box *= d;
      EXPECT_EQ(box, elements) << profiles[id]->key.to_string();
    }
  }
  EXPECT_FALSE(profiles.empty());
}

// Each process traces its own device's tasks under the simulator's labels, and the messages and
// collectives it takes part in; every process ends with the whole trace.
TEST(MpiTraining, EachProcessTracesItsDevicesTasksAndItsMessages) {
  int charged_to_nodes = 0;  // messages and collectives of a node's work rather than the gradient sums
  for (PlanKind kind : {PlanKind::DataParallel, PlanKind::Megatron})
    for (const SuiteModel& model : suite_models()) {
      SCOPED_TRACE(model.name + ", " + plan_name(kind));
      const pcg::Graph plan = plan_graph(kind, model.graph, world().size());
      TrainSettings s;
      s.steps = 2;
      s.trace_step = 2;
      s.plan_devices = world().size();
      const auto [report, seconds] = timed_run(plan, s, &world());
      // Each process timed the step from its own start, after the meeting before it: every span
      // ends within the sum of their times.
      std::vector<double> bound{seconds.at(1)};
      world().sum(bound);
      expect_trace_runs_the_simulated_tasks(plan, report, world().size(), world().size(), bound[0]);
      std::vector<double> spans{static_cast<double>(report.trace.size())};
      world().sum(spans);
      EXPECT_EQ(spans[0], static_cast<double>(report.trace.size() * static_cast<std::size_t>(world().size())));
      // Data parallelism sums the weights' gradients: started during the pass, waited for at its end.
      if (kind == PlanKind::DataParallel) {
        for (const char* call : {"sums started", "sums finished"})
          EXPECT_TRUE(std::any_of(report.trace.begin(), report.trace.end(), [&](const search::TraceSpan& m) { return m.name == call; }))
              << "no span " << call;
      }
      for (int row = 0; row < world().size(); ++row) {
        const std::vector<search::TraceSpan> messages = spans_of(report.trace, row, search::TraceLane::Communication);
        EXPECT_FALSE(messages.empty()) << "row " << row << " exchanged nothing";
        for (const search::TraceSpan& m : messages) {
          if (!m.node.valid()) continue;
          EXPECT_EQ(m.name.substr(0, m.name.find(' ')), search::node_label(plan.node(m.node)));
          ++charged_to_nodes;
        }
      }
    }
  EXPECT_GT(charged_to_nodes, 0);
}

// A plan of relu(x w) for x [8, 4] and w [4, 8] by hand on `devices` devices: x split along `dim` 0
// or w along dim 1 (the other input replicated), the product and relu on each piece, the output
// left in those pieces or, `gathered`, combined whole on device 0.
pcg::Graph output_split_plan(int devices, std::size_t dim, bool gathered) {
  pcg::Graph g;
  const pcg::MachineView all = pcg::MachineView::contiguous(0, devices);
  const int x = g.add_input("x", pcg::ParallelShape::unpartitioned({8, 4}));
  const int w = g.add_input("w", pcg::ParallelShape::unpartitioned({4, 8}), true);
  const auto add = [&](const std::string& op, const pcg::AttrMap& attrs, std::vector<pcg::PortRef> inputs, const pcg::MachineView& view) {
    const int id = g.add_node(library(), op, attrs, std::move(inputs));
    g.set_view(id, view);
    return id;
  };
  const auto split_dim = static_cast<std::int64_t>(dim);
  const int split = add("partition", {{"dim", split_dim}, {"degree", devices}}, {{dim == 0 ? x : w, 0}}, all);
  const int copies = add("replicate", {{"degree", devices}}, {{dim == 0 ? w : x, 0}}, all);
  const int mm = dim == 0 ? add("matmul", {}, {{split, 0}, {copies, 0}}, all) : add("matmul", {}, {{copies, 0}, {split, 0}}, all);
  int out = add("relu", {}, {{mm, 0}}, all);
  if (gathered) out = add("combine", {{"dim", split_dim}, {"degree", devices}}, {{out, 0}}, pcg::MachineView::contiguous(0, 1));
  g.mark_output({out, 0});
  return g;
}

// Each process takes the loss of the output boxes it holds and one sum of a number makes it whole:
// no process assembles the output. Split along its classes, the processes first gather their rows'
// statistics for the cross-entropy (two numbers a row), once a step. A combine that gathers the
// output is not run: the loss reads the pieces it would gather. All follow the single-process run.
TEST(MpiTraining, EachProcessTakesTheLossOfTheOutputBoxesItHolds) {
  const SuiteModel model{"product_relu", product_relu_model(8, 4, 8), LossKind::CrossEntropy};
  constexpr std::int64_t steps = 5;
  constexpr std::size_t output_elements = 8 * 8;
  for (std::size_t dim : {0, 1}) {
    for (bool gathered : {false, true}) {
      SCOPED_TRACE("output split along dimension " + std::to_string(dim) + (gathered ? ", then combined" : ""));
      const pcg::Graph plan = output_split_plan(world().size(), dim, gathered);
      ASSERT_EQ(plan.shape_of(plan.node(plan.outputs().front().node).inputs.front()).D.at(dim), world().size());
      WholeSums sums(world());
      expect_training_matches<double>(model, plan, world().size(), sums, 1e-9, steps);
      const auto sums_of = [&](std::size_t elements) { return std::count(sums.sizes.begin(), sums.sizes.end(), elements); };
      EXPECT_EQ(sums_of(output_elements), 0);
      EXPECT_EQ(sums_of(1), steps);
      const std::vector<std::size_t> rows_gathered(dim == 0 ? 0 : steps, 8 * search::kRowStatistics);
      EXPECT_EQ(sums.gathered, rows_gathered);
    }
  }
}

}  // namespace
}  // namespace loom::runtime
