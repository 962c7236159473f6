#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <tuple>

#include "loom/interpreter/graph_eval.hpp"
#include "loom/interpreter/library.hpp"
#include "loom/models/registry.hpp"
#include "loom/models/values.hpp"
#include "loom/pcg/diagnostic.hpp"
#include "loom/pcg/task_layout.hpp"
#include "loom/search/baselines.hpp"
#include "loom/search/memory.hpp"
#include "loom/search/pipeline.hpp"
#include "loom/search/pipeline_order.hpp"
#include "loom/search/plan_simulation.hpp"
#include "loom/search/simulator.hpp"
#include "search_support.hpp"

namespace loom::search {
namespace {

using namespace test_support;

// x -> relu -> relu: two operators of equal time.
// With a `trained` input (a weight, which micro-batches do not divide), the relus run a backward:
// a graph of data alone trains nothing and runs none.
pcg::Graph two_relus(std::int64_t batch, bool trained = false) {
  pcg::Graph g;
  const int x = g.add_input("x", shape({batch, 256}), trained);
  const int a = g.add_node(library(), "relu", {}, {{x, 0}}, "a");
  g.mark_output({g.add_node(library(), "relu", {}, {{a, 0}}, "b"), 0});
  return g;
}

// A chain of matmul -> relu layers.
pcg::Graph mlp(int layers, std::int64_t batch, std::int64_t width) {
  pcg::Graph g;
  int at = g.add_input("x", shape({batch, width}));
  for (int layer = 0; layer < layers; ++layer) {
    const int w = g.add_input("w" + std::to_string(layer), shape({width, width}), true);
    at = g.add_node(library(), "relu", {}, {{g.add_node(library(), "matmul", {}, {{at, 0}, {w, 0}}), 0}});
  }
  g.mark_output({at, 0});
  return g;
}

// A pipeline search's plan as a plan file holds it, costed as `loom simulate` costs it.
PlanCost simulated_cost(const PipelineResult& r, const CostModel& model) {
  Plan plan;
  plan.graph = r.plan;
  plan.pipeline = r.pipeline;
  return simulated_plan_cost(plan, model, library());
}

// Devices joined by links that take no time, so that a timeline is compute alone.
Machine instant_links(int devices) {
  Machine m = load_machine("summit").with_devices_per_node(devices);
  m.intra_socket = m.inter_socket = m.inter_node = Link{1e30, 0};
  return m;
}

// `graph` in two stages of about equal time over `devices`, each stage on its half of them.
pcg::Graph two_stage_plan(const pcg::Graph& graph, const CostModel& model, int devices) {
  return materialize(graph, pipeline_placements(library(), graph, balanced_stages(graph, model, 2), 2, devices), library());
}

TEST(Pipeline, MicroBatchGraphDividesTheBatch) {
  const pcg::Graph g = mlp(2, 8, 4);
  const pcg::Graph micro = micro_batch_graph(g, library(), 4);
  ASSERT_EQ(micro.size(), g.size());
  EXPECT_EQ(micro.shape_of({0, 0}).dims, (std::vector<std::int64_t>{2, 4}));
  EXPECT_EQ(micro.shape_of(micro.outputs()[0]).dims, (std::vector<std::int64_t>{2, 4}));
  EXPECT_EQ(micro.shape_of({1, 0}).dims, (std::vector<std::int64_t>{4, 4}));  // weights keep their shape
  try {
    micro_batch_graph(g, library(), 3);
    FAIL() << "a batch of 8 split into 3 micro-batches";
  } catch (const LoomError& e) {
    EXPECT_NE(std::string(e.what()).find("does not divide into 3 micro-batches"), std::string::npos) << e.what();
  }
}

TEST(Pipeline, OneFOneBTimelineOfTwoStagesMatchesTheHandWorkedSchedule) {
  // Stage 0 runs F0 F1 B0 B1, stage 1 runs F0 B0 F1 B1; forward takes t, backward 2t, and stage 1
  // takes each micro-batch's loss after its forward and the loss's gradient before its backward,
  // d in all:
  //   stage 0: F0 [0,t]  F1 [t,2t]     B0 [4t+d,6t+d]  B1 [7t+2d,9t+2d]
  //   stage 1: F0 [t,2t] B0 [2t,4t+d]  F1 [4t+d,5t+d]  B1 [5t+d,7t+2d]
  // then stage 0 adds micro-batch 1's gradient of the trained input x into micro-batch 0's (a),
  // the stages sum their losses once both are done (no time over these links), and stage 0
  // updates x (u).
  const pcg::Graph g = two_relus(64, true);
  const Machine target = instant_links(2);
  const CostModel model(library(), target);
  const std::vector<int> stages = balanced_stages(g, model, 2);
  EXPECT_EQ(stages[1], 0);
  EXPECT_EQ(stages[2], 1);
  const pcg::Graph plan = materialize(g, pipeline_placements(library(), g, stages, 2, 2), library());
  const Pipeline pipeline{2, 2};
  const pcg::Graph micro = micro_batch_graph(plan, library(), 2);
  const double t = model.compute(micro, micro.node(*micro.find("a"))).seconds;
  const TaskGraph tasks = build_pipeline_task_graph(plan, model, pipeline, library());
  const Timeline timeline = simulate(tasks);
  std::set<std::string> named;  // each task's label names its micro-batch
  for (std::size_t i = 0; i < tasks.tasks.size(); ++i) named.insert(tasks.label_of(i).substr(0, 4));
  EXPECT_EQ(named, (std::set<std::string>{"mb0 ", "mb1 "}));
  const double u = model.weight_update({64, 256}, {64, 256}).seconds + target.device.kernel_overhead;
  const double a = model.gradient_accumulation({64, 256}).seconds;
  std::vector<int> losses, sums;
  for (std::size_t i = 0; i < tasks.tasks.size(); ++i) {
    if (tasks.tasks[i].label.rfind("loss on", 0) == 0 && !tasks.tasks[i].backward) losses.push_back(static_cast<int>(i));
    if (tasks.tasks[i].label.rfind("losses summed", 0) == 0 && tasks.tasks[i].kind != TaskKind::Join) sums.push_back(static_cast<int>(i));
  }
  ASSERT_EQ(losses.size(), 2u);  // one a micro-batch, where the output lies, meeting no one
  for (std::size_t m = 0; m < losses.size(); ++m) {
    const SimTask& loss = tasks.tasks[static_cast<std::size_t>(losses[m])];
    EXPECT_EQ(loss.device, 1);
    EXPECT_EQ(loss.microbatch, static_cast<int>(m));
    EXPECT_TRUE(loss.meets.empty());
  }
  const SimTask& loss = tasks.tasks[static_cast<std::size_t>(losses[0])];
  const double d = loss.seconds + loss.backward_seconds;
  EXPECT_GT(d, 0);
  ASSERT_EQ(sums.size(), 2u);  // both stages meet once, at the end
  for (int i : sums) {
    const SimTask& sum = tasks.tasks[static_cast<std::size_t>(i)];
    EXPECT_EQ(sum.kind, TaskKind::Communication);  // a ring step to the other stage
    EXPECT_EQ(sum.peer, 1 - sum.device);
    EXPECT_EQ(sum.meets, std::vector<int>{1 - sum.device});
    EXPECT_NEAR(timeline.start[static_cast<std::size_t>(i)], 9 * t + 2 * d + a, 1e-9 * t);
  }
  EXPECT_NEAR(timeline.makespan, 9 * t + 2 * d + a + u, 1e-9 * t);
  ASSERT_EQ(tasks.update_on.size(), 1u);  // stage 0 updates x, last
  EXPECT_EQ(tasks.update_on.at(0),
            static_cast<int>(std::max_element(timeline.finish.begin(), timeline.finish.end()) - timeline.finish.begin()));
  // Without the pipeline the whole batch runs through the stages one after the other: T + T + 2T + 2T.
  const double whole = model.compute(plan, plan.node(*plan.find("a"))).seconds;
  const TaskGraph unpipelined = build_task_graph(plan, model, RunWork::LeftOut);
  EXPECT_NEAR(simulate(unpipelined).makespan, 6 * whole + u, 1e-9 * whole);
  EXPECT_EQ(unpipelined.label_of(0), unpipelined.tasks[0].label);
}

TEST(Pipeline, EachStageRunsItsStepsInOneFOneBOrder) {
  // Two stages, four micro-batches. Stage 0 runs F0 F1 B0 F2 B1 F3 B2 B3, stage 1 F0 B0 F1 B1 F2
  // B2 F3 B3; left to their data alone, the first stage would run all its forwards first.
  const pcg::Graph g = two_relus(64, true);
  const Machine target = instant_links(2);
  const CostModel model(library(), target);
  const pcg::Graph plan = two_stage_plan(g, model, 2);
  const TaskGraph tasks = build_pipeline_task_graph(plan, model, Pipeline{2, 4}, library());
  const Timeline timeline = simulate(tasks);
  const std::map<pcg::NodeId, int> stage_of{{*plan.find("a"), 0}, {*plan.find("b"), 1}};
  std::vector<std::vector<std::tuple<double, int, bool>>> steps(2);  // per stage: (start, micro-batch, backward)
  for (std::size_t i = 0; i < tasks.tasks.size(); ++i) {
    const SimTask& t = tasks.tasks[i];
    const auto stage = stage_of.find(t.node);
    if (t.kind == TaskKind::Compute && stage != stage_of.end() && t.label.rfind("loss", 0) != 0)
      steps[static_cast<std::size_t>(stage->second)].emplace_back(timeline.start[i], t.microbatch, t.backward);
  }
  const auto order = [](std::vector<std::tuple<double, int, bool>> s) {
    std::sort(s.begin(), s.end());
    std::string out;
    for (const auto& [start, m, backward] : s) out += (backward ? "B" : "F") + std::to_string(m) + " ";
    return out;
  };
  EXPECT_EQ(order(steps[0]), "F0 F1 B0 F2 B1 F3 B2 B3 ");
  EXPECT_EQ(order(steps[1]), "F0 B0 F1 B1 F2 B2 F3 B3 ");
}

TEST(Pipeline, WeightsMoveOncePerIteration) {
  // One stage, data parallel on two devices: only weights move (each device loads its piece of
  // the batch), and they move as often with four micro-batches as without any.
  const pcg::Graph g = mlp(2, 64, 32);
  const Machine target = load_machine("summit").with_devices_per_node(2);
  const CostModel model(library(), target);
  const std::vector<int> stages = balanced_stages(g, model, 1);
  const pcg::Graph plan = materialize(g, pipeline_placements(library(), g, stages, 1, 2), library());
  const double whole = communication_bytes(build_task_graph(plan, model));
  ASSERT_GT(whole, 0);
  // Besides them the pipeline's devices sum their losses at the end, a ring step of a double each
  // way (a step of one batch charges that sum within each device's loss).
  EXPECT_DOUBLE_EQ(communication_bytes(build_pipeline_task_graph(plan, model, {1, 4}, library())), whole + 2 * 8);
}

// A pipeline's step sums the weights' gradients once every micro-batch's backward has run, and its
// devices wait in every sum: each is charged as a sum devices wait in. A step of one batch starts
// the second layer's sum beside the first layer's backward, at the rate of a started sum.
TEST(Pipeline, GradientsAreSummedAfterThePassesAndWaitedIn) {
  const pcg::Graph g = mlp(2, 64, 32);
  const Machine target = with_node_sums(load_machine("summit").with_devices_per_node(2), {2e9, 3e-6}, {8e9, 0});
  const CostModel model(library(), target);
  const pcg::Graph plan = materialize(g, pipeline_placements(library(), g, balanced_stages(g, model, 1), 1, 2), library());
  const Link& link = target.link_between(0, 1);
  const double bytes = 32 * 32 * 4;  // a weight's gradient, summed by a ring of two
  const auto sum_seconds = [](const TaskGraph& tg) {
    std::multiset<double> out;
    for (const SimTask& t : tg.tasks)
      if (t.kind == TaskKind::Communication && t.label.find("gradient allreduce") != std::string::npos) out.insert(t.seconds);
    return out;
  };
  const std::multiset<double> pipelined = sum_seconds(build_pipeline_task_graph(plan, model, {1, 4}, library()));
  ASSERT_EQ(pipelined.size(), 4u);  // two weights, a ring step from each device
  for (double s : pipelined) EXPECT_DOUBLE_EQ(s, link.ring_allreduce_seconds(bytes, 2));
  const std::multiset<double> one_batch = sum_seconds(build_task_graph(plan, model));
  EXPECT_EQ(one_batch.count(link.ring_allreduce_seconds(bytes, 2)), 2u);
  EXPECT_EQ(one_batch.count(link.started_ring_allreduce_seconds(bytes, 2)), 2u);
}

// With two devices a stage, each stage's weights are copied to both and their gradients summed
// between them: an add waits for the micro-batch's backward tasks of activations on its device,
// not for the weights' copies' gradients, which are summed once, after the last micro-batch.
TEST(Pipeline, AnAddWaitsForItsDevicesBackwardTasksOfActivationsAlone) {
  const pcg::Graph g = mlp(2, 64, 32);
  const Machine target = instant_links(4);
  const CostModel model(library(), target);
  const pcg::Graph plan = two_stage_plan(g, model, 4);
  const TaskGraph tg = build_pipeline_task_graph(plan, model, {2, 4}, library());
  // Weights and what parallelization operators make of them alone.
  std::vector<bool> weight(plan.size(), false);
  for (const pcg::Node& n : plan.nodes())
    weight[n.id.index()] = n.op == pcg::kWeightOp || (!n.is_graph_input() && !is_compute_node(library(), n) && n.inputs.size() == 1 &&
                                                      weight[n.inputs[0].node.index()]);
  int adds = 0, weight_tasks = 0;
  for (const SimTask& add : tg.tasks) {
    if (add.label.find("added up") == std::string::npos) continue;
    ++adds;
    std::set<int> expected;
    for (std::size_t i = 0; i < tg.tasks.size(); ++i) {
      const SimTask& t = tg.tasks[i];
      if (t.kind != TaskKind::Compute || !t.backward || t.device != add.device || t.microbatch != add.microbatch ||
          t.node == pcg::kNoNode || t.label.find("weight update") != std::string::npos)
        continue;
      if (weight[t.node.index()]) {
        ++weight_tasks;
        continue;
      }
      expected.insert(static_cast<int>(i));
    }
    EXPECT_EQ(std::set<int>(add.deps.begin(), add.deps.end()), expected) << add.label << " of micro-batch " << add.microbatch;
    EXPECT_EQ(add.deps.size(), expected.size());
  }
  EXPECT_EQ(adds, 4 * 3);  // every device, micro-batches 1 to 3
  EXPECT_GT(weight_tasks, 0);
}

// Each micro-batch's gradients after the first are added into those before it on every device
// that reads the weight, after its backward pass there and before the device's next step, and
// the weight's sum and update wait for the last of them.
TEST(Pipeline, EachMicroBatchsGradientsAfterTheFirstAreAddedUpWhereTheWeightIsRead) {
  const pcg::Graph g = mlp(2, 64, 32);
  const Machine target = instant_links(2);
  const CostModel model(library(), target);
  const pcg::Graph plan = two_stage_plan(g, model, 2);
  const TaskGraph tg = build_pipeline_task_graph(plan, model, {2, 4}, library());
  const double one_add = 3.0 * 32 * 32 * kBytesPerElement / target.device.memory_bandwidth;  // a weight per stage
  std::map<int, std::vector<int>> adds;                                                      // per device
  for (std::size_t i = 0; i < tg.tasks.size(); ++i)
    if (tg.tasks[i].label.find("added up") != std::string::npos) adds[tg.tasks[i].device].push_back(static_cast<int>(i));
  ASSERT_EQ(adds.size(), 2u);
  for (const auto& [device, list] : adds) {
    ASSERT_EQ(list.size(), 3u) << device;  // micro-batches 1 to 3
    for (std::size_t k = 0; k < list.size(); ++k) {
      const SimTask& add = tg.tasks[static_cast<std::size_t>(list[k])];
      EXPECT_EQ(add.kind, TaskKind::Compute);
      EXPECT_EQ(add.microbatch, static_cast<int>(k) + 1);
      EXPECT_DOUBLE_EQ(add.seconds, one_add);
      ASSERT_FALSE(add.deps.empty());
      for (int d : add.deps) {
        const SimTask& before = tg.tasks[static_cast<std::size_t>(d)];
        EXPECT_TRUE(before.backward && before.device == device && before.microbatch == add.microbatch) << before.label;
      }
      // Every backward task of the micro-batch there, once (the weight's update follows the adds).
      std::set<int> backward_there;
      for (std::size_t i = 0; i < tg.tasks.size(); ++i) {
        const SimTask& t = tg.tasks[i];
        if (t.kind == TaskKind::Compute && t.backward && t.device == device && t.microbatch == add.microbatch && t.node != pcg::kNoNode &&
            t.label.find("weight update") == std::string::npos)
          backward_there.insert(static_cast<int>(i));
      }
      EXPECT_EQ(std::set<int>(add.deps.begin(), add.deps.end()), backward_there);
      EXPECT_EQ(add.deps.size(), backward_there.size());
    }
    // The weight's update waits for the losses summed, whose ring starts once the last add is done.
    bool update_waits = false;
    for (const SimTask& t : tg.tasks)
      if (t.label.find("weight update") != std::string::npos && t.device == device) {
        ASSERT_EQ(t.deps.size(), 1u);
        const SimTask& summed = tg.tasks[static_cast<std::size_t>(t.deps[0])];
        EXPECT_EQ(summed.label, "losses summed");
        ASSERT_EQ(summed.deps.size(), 2u);  // a step on each stage
        const SimTask& step = tg.tasks[static_cast<std::size_t>(summed.deps[0])];
        ASSERT_EQ(step.deps.size(), 1u);
        const SimTask& ready = tg.tasks[static_cast<std::size_t>(step.deps[0])];
        update_waits = std::find(ready.deps.begin(), ready.deps.end(), list.back()) != ready.deps.end();
      }
    EXPECT_TRUE(update_waits) << device;
  }
  // One micro-batch adds nothing up. GPipe runs the backward passes from the last micro-batch: the
  // last micro-batch's gradients are kept as they are, and the others added to them.
  for (const SimTask& t : build_pipeline_task_graph(plan, model, {2, 1}, library()).tasks)
    EXPECT_EQ(t.label.find("added up"), std::string::npos);
  std::multiset<int> gpipe;
  for (const SimTask& t : build_pipeline_task_graph(plan, model, {2, 4, PipelineOrder::GPipe}, library()).tasks)
    if (t.label.find("added up") != std::string::npos) gpipe.insert(t.microbatch);
  EXPECT_EQ(gpipe, (std::multiset<int>{0, 0, 1, 1, 2, 2}));
}

// Layers of equal work cut into two stages of equal compute: under 1F1B the first stage holds two
// micro-batches, the second one. On devices with a tenth less memory than the first stage needs,
// the equal stages do not fit; moving the boundary earlier gives the first stage fewer layers and fits.
TEST(Pipeline, MovesTheBoundaryBetweenStagesUntilThePipelineFits) {
  const pcg::Graph g = mlp(8, 1024, 128);
  Machine target = instant_links(2);
  PipelineOptions equal;
  equal.stage_counts = {2};
  equal.microbatches_per_stage = {2};
  equal.boundary_moves = 0;
  const PipelineResult balanced = pipeline_search(library(), g, CostModel(library(), target), equal);
  ASSERT_TRUE(std::isfinite(balanced.seconds));
  EXPECT_EQ(balanced.stage_sizes, (std::vector<int>{8, 8}));
  const std::vector<double> bytes = pipeline_memory(balanced.plan, CostModel(library(), target), balanced.pipeline, library());
  ASSERT_GT(bytes[0], 1.3 * bytes[1]);
  target.device.memory_bytes = 0.9 * bytes[0];
  const CostModel tight(library(), target);
  EXPECT_FALSE(std::isfinite(pipeline_search(library(), g, tight, equal).seconds));
  PipelineOptions moving = equal;
  moving.boundary_moves = 16;
  const PipelineResult unequal = pipeline_search(library(), g, tight, moving);
  ASSERT_TRUE(std::isfinite(unequal.seconds)) << unequal.none_because;
  ASSERT_EQ(unequal.stage_sizes.size(), 2u);
  EXPECT_LT(unequal.stage_sizes[0], unequal.stage_sizes[1]);
  EXPECT_EQ(unequal.stage_sizes[0] + unequal.stage_sizes[1], 16);
  EXPECT_TRUE(simulated_cost(unequal, tight).fits());
  // Where the equal stages fit, moving a boundary is kept only when it is faster.
  const PipelineResult roomy = pipeline_search(library(), g, CostModel(library(), instant_links(2)), moving);
  EXPECT_LE(roomy.seconds, balanced.seconds);
}

// Each move of a boundary is priced at every count of micro-batches, so the pipeline returned is
// the fastest of its stages at any count that fits. Equal stages fit at no count here (as in the
// test above), so boundaries move.
TEST(Pipeline, TheStagesFoundRunAtTheirBestCountOfMicroBatches) {
  const pcg::Graph g = mlp(8, 1024, 128);
  Machine target = instant_links(2);
  PipelineOptions options;
  options.stage_counts = {2};
  options.microbatches_per_stage = {1, 2, 4, 8};
  options.boundary_moves = 0;
  const PipelineResult balanced = pipeline_search(library(), g, CostModel(library(), target), options);
  ASSERT_TRUE(std::isfinite(balanced.seconds));
  // A little less than the first of the equal stages needs at the most micro-batches tried.
  const std::vector<double> bytes = pipeline_memory(balanced.plan, CostModel(library(), target), Pipeline{2, 16}, library());
  target.device.memory_bytes = 0.99 * bytes[0];
  const CostModel model(library(), target);
  options.boundary_moves = 16;
  const PipelineResult r = pipeline_search(library(), g, model, options);
  ASSERT_TRUE(std::isfinite(r.seconds)) << r.none_because;
  ASSERT_EQ(r.stage_sizes.size(), 2u);
  ASSERT_NE(r.stage_sizes, (std::vector<int>{8, 8}));
  std::vector<int> stage_of(g.size(), -1);
  int position = 0;
  for (const pcg::Node& n : g.nodes())
    if (!n.is_graph_input()) stage_of[n.id.index()] = position++ < r.stage_sizes[0] ? 0 : 1;
  const pcg::Graph plan = materialize(g, pipeline_placements(library(), g, stage_of, 2, 2), library(), model.moves());
  int fitting = 0;
  for (int per_stage : options.microbatches_per_stage) {
    const Pipeline p{2, 2 * per_stage};
    if (first_overfull_device(pipeline_memory(plan, model, p, library()), target) >= 0) continue;
    ++fitting;
    EXPECT_LE(r.seconds, simulate(build_pipeline_task_graph(plan, model, p, library())).makespan) << p.microbatches << " micro-batches";
  }
  EXPECT_GE(fitting, 1);
}

TEST(Pipeline, EachStageHoldsTheMicroBatchesItHasInFlight) {
  const pcg::Graph g = two_relus(64);
  const Machine target = instant_links(2);
  const CostModel model(library(), target);
  const pcg::Graph plan = two_stage_plan(g, model, 2);
  const pcg::Graph micro = micro_batch_graph(plan, library(), 4);
  const std::vector<double> one = plan_memory(micro, model);
  const std::vector<double> held = pipeline_memory(plan, model, {2, 4}, library());
  // No weights: stage 0 keeps two micro-batches' activations under 1F1B, stage 1 one; the
  // backward pass's gradients are those of one micro-batch at a time.
  double micro_batch_activations = 0;  // its input and what it computes, on device 0
  for (const pcg::Node& n : micro.nodes()) {
    const pcg::MachineView view = n.view ? *n.view : pcg::MachineView::contiguous(0, 1);
    for (std::size_t t = 0; t < view.devices.size(); ++t)
      if (view.devices[t] == 0) micro_batch_activations += static_cast<double>(pcg::piece_elements(n.output_shapes[0])) * 4;
  }
  ASSERT_GT(micro_batch_activations, 0);
  EXPECT_DOUBLE_EQ(held[0] - one[0], micro_batch_activations);
  EXPECT_DOUBLE_EQ(held[1], one[1]);
}

TEST(Pipeline, SearchFindsAPlanThatKeepsValuesAndPlacesStagesApart) {
  const pcg::Graph g = mlp(8, 64, 32);
  const Machine target = load_machine("summit").with_devices_per_node(4);
  const CostModel model(library(), target);
  PipelineOptions options;
  options.stage_counts = {2, 4};
  const PipelineResult r = pipeline_search(library(), g, model, options);
  ASSERT_TRUE(std::isfinite(r.seconds));
  EXPECT_GE(r.pipeline.stages, 2);
  EXPECT_EQ(r.pipeline.microbatches % r.pipeline.stages, 0);
  EXPECT_DOUBLE_EQ(simulated_cost(r, model).seconds, r.seconds);
  // Each compute operator runs inside one stage's block, later operators in later stages.
  const int per_stage = 4 / r.pipeline.stages;
  int last_stage = 0;
  for (const pcg::Node& n : r.plan.nodes()) {
    if (!model.is_compute(n)) continue;
    const auto [lo, hi] = std::minmax_element(n.view->devices.begin(), n.view->devices.end());
    EXPECT_EQ(*lo / per_stage, *hi / per_stage) << n.describe();
    EXPECT_GE(*lo / per_stage, last_stage) << n.describe();
    last_stage = *lo / per_stage;
  }
  const models::NamedValues values = models::random_values(library(), g, 5);
  const auto a = spec::evaluate_graph<spec::RealDomain>(library(), g, values);
  const auto b = spec::evaluate_graph<spec::RealDomain>(library(), r.plan, values);
  ASSERT_EQ(a[0].data.size(), b[0].data.size());
  for (std::size_t i = 0; i < a[0].data.size(); ++i) EXPECT_NEAR(a[0].data[i], b[0].data[i], 1e-9);
}

// GPT-3 with its LM head tied to a large embedding table: cut into two stages, the lookups hold
// the table whole in the first and the head in the last; interlaced, the operators reading it are
// cut by vocabulary over every device, which then holds a quarter of it. Where the stages' devices
// cannot hold the table twice, the search interlaces them.
TEST(Pipeline, InterlacesTheOperatorsSharingAWeightWhereTheStagesDoNotFit) {
  const pcg::Graph g = models::build_model(
      library(), "gpt3", {{"batch", 8}, {"seq", 8}, {"hidden", 32}, {"heads", 4}, {"layers", 2}, {"embeddings", 1}, {"vocab", 4096}});
  Machine machine = load_machine("summit").with_devices_per_node(4);
  PipelineOptions options;
  options.stage_counts = {2};
  options.microbatches_per_stage = {1};
  options.boundary_moves = 0;
  const CostModel roomy(library(), machine);
  const Pipeline pipeline{2, 2};
  const pcg::Graph in_stages =
      materialize(g, pipeline_placements(library(), g, balanced_stages(g, roomy, 2), 2, 4), library(), roomy.moves());
  const std::vector<double> stage_bytes = pipeline_memory(in_stages, roomy, pipeline, library());
  const double fullest = *std::max_element(stage_bytes.begin(), stage_bytes.end());

  machine.device.memory_bytes = fullest - 1;
  const CostModel tight(library(), machine);
  const PipelineResult r = pipeline_search(library(), g, tight, options);
  ASSERT_TRUE(std::isfinite(r.seconds)) << r.none_because;
  EXPECT_TRUE(r.interlaced);
  for (const char* name : {"lm_head"}) {
    std::set<int> stages;
    for (int d : r.plan.node(*r.plan.find(name)).view_or_default().devices) stages.insert(stage_of_device(d, 4, 2));
    EXPECT_EQ(stages.size(), 2u) << name << " is not in every stage";
  }
  const std::vector<double> bytes = pipeline_memory(r.plan, tight, r.pipeline, library());
  EXPECT_LT(*std::max_element(bytes.begin(), bytes.end()), fullest);
  // A process runs a micro-batch's pass whole, so the interlaced pipeline runs in one order.
  EXPECT_TRUE(runs_in_one_order(r.plan, 2, 4));
  EXPECT_FALSE(runs_in_one_order(in_stages, 2, 4));
  // With room for the table twice, the faster of the two is kept, and it is priced like any plan.
  const PipelineResult either = pipeline_search(library(), g, roomy, options);
  ASSERT_TRUE(std::isfinite(either.seconds));
  EXPECT_NEAR(simulated_cost(either, roomy).seconds, either.seconds, 1e-9 * either.seconds);
}

// When no pipeline is found, the search says what stopped it rather than that none fits.
TEST(Pipeline, NoPipelineSaysWhatStoppedIt) {
  const Machine target = load_machine("summit").with_devices_per_node(4);
  const CostModel model(library(), target);
  PipelineOptions options;
  options.stage_counts = {2, 4};
  const PipelineResult batch_of_one = pipeline_search(library(), mlp(8, 1, 32), model, options);
  EXPECT_FALSE(std::isfinite(batch_of_one.seconds));
  EXPECT_NE(batch_of_one.none_because.find("the batch cannot be cut into micro-batches"), std::string::npos) << batch_of_one.none_because;
  EXPECT_NE(batch_of_one.none_because.find("its batch of 1 does not divide into 2"), std::string::npos) << batch_of_one.none_because;
  const PipelineResult found = pipeline_search(library(), mlp(8, 64, 32), model, options);
  EXPECT_TRUE(found.none_because.empty());
  const CostModel one_device(library(), load_machine("summit").with_devices_per_node(1));
  EXPECT_NE(pipeline_search(library(), mlp(8, 64, 32), one_device).none_because.find("divides the machine's 1 devices"), std::string::npos);
}

TEST(Pipeline, PlanFileKeepsThePipeline) {
  Plan plan;
  plan.machine = load_machine("summit");
  plan.graph = two_relus(8);
  plan.pipeline = {2, 4};
  const Plan back = plan_from_json(plan_to_json(plan), library());
  EXPECT_EQ(back.pipeline, plan.pipeline);
  nlohmann::json bad = plan_to_json(plan);
  bad["pipeline"]["stages"] = 0;
  EXPECT_THROW(plan_from_json(bad, library()), LoomError);
}

}  // namespace
}  // namespace loom::search
