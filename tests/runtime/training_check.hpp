#pragma once
// The distributed-training correctness suite: a model trained through a plan (task by task, over
// the processes of a transport) follows the loss trajectory and ends with the weights of the same
// model trained whole in one process.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "loom/interpreter/rule_files.hpp"
#include "loom/runtime/trainer.hpp"
#include "loom/search/optimizer.hpp"
#include "loom/search/pipeline.hpp"
#include "sharded_check.hpp"

namespace loom::runtime::sharded_test {

inline pcg::Graph small_cnn() {
  return models::build_model(library(), "alexnet", {{"batch", 4}, {"image", 63}, {"classes", 8}, {"width_div", 16}});
}

inline pcg::Graph small_dlrm() {
  return models::build_model(library(), "dlrm", {{"batch", 8}, {"dim", 4}, {"dense_features", 5}, {"tables", 3}, {"rows", 12}});
}

// The four models of the suite, each with the loss it trains with.
struct SuiteModel {
  std::string name;
  pcg::Graph graph;
  LossKind loss = LossKind::CrossEntropy;
};

inline std::vector<SuiteModel> suite_models() {
  return {{"mlp", small_mlp(), LossKind::CrossEntropy},
          {"transformer", small_transformer(), LossKind::CrossEntropy},
          {"cnn", small_cnn(), LossKind::CrossEntropy},
          {"dlrm", small_dlrm(), LossKind::MeanSquaredError}};
}

enum class PlanKind { DataParallel, Megatron, Reduction, Optimized };

inline std::string plan_name(PlanKind kind) {
  switch (kind) {
    case PlanKind::DataParallel: return "data parallel";
    case PlanKind::Megatron: return "Megatron";
    case PlanKind::Reduction: return "reduction";
    case PlanKind::Optimized: return "optimized";
  }
  return "";
}

// A parameterized test's name for its plan kind, e.g. "dataparallel".
inline std::string plan_test_name(const ::testing::TestParamInfo<PlanKind>& info) {
  std::string name = plan_name(info.param);
  std::erase(name, ' ');
  return name;
}

inline const auto all_plan_kinds = ::testing::Values(PlanKind::DataParallel, PlanKind::Megatron, PlanKind::Reduction, PlanKind::Optimized);

inline search::Machine machine_of(int devices) { return search::load_machine("summit").with_devices_per_node(devices); }

// Every operator that can be split along a summed dimension takes the largest such split up to
// `devices` (its output then holds partial sums); the others stay whole.
inline std::vector<search::Placement> reduction_placements(const pcg::Graph& g, int devices) {
  std::vector<search::Placement> out = search::unsplit_placements(g);
  for (const pcg::Node& n : g.nodes()) {
    if (!search::is_compute_node(library(), n)) continue;
    const search::ParallelConfig* best = nullptr;
    const std::vector<search::ParallelConfig> configs = search::node_configs(library(), g, n, search::divisor_degrees(devices));
    for (const search::ParallelConfig& c : configs)
      if (c.tasks() <= devices && !c.outputs.empty() && c.outputs[0].V > 1 && (!best || c.outputs[0].V > best->outputs[0].V)) best = &c;
    if (best) out[n.id.index()] = {*best, 0};
  }
  return out;
}

inline const std::vector<pcg::Rule>& unity_rules() {
  static const std::vector<pcg::Rule> rules =
      spec::load_rule_file(library(), {spec::Library::default_specs_dir()}, spec::Library::default_specs_dir() + "/rules/unity.loom");
  return rules;
}

// The plan's graph (materialized, with machine views) for `devices` devices.
inline pcg::Graph plan_graph(PlanKind kind, const pcg::Graph& model, int devices) {
  const search::Machine machine = machine_of(devices);
  switch (kind) {
    case PlanKind::DataParallel: return search::materialize(model, search::data_parallel(library(), model, machine), library());
    case PlanKind::Megatron: return search::materialize(model, search::expert_strategy(library(), model, machine), library());
    case PlanKind::Reduction: return search::materialize(model, reduction_placements(model, devices), library());
    case PlanKind::Optimized: {
      const search::CostModel cost(library(), machine);
      search::OptimizeSettings settings;
      settings.mcmc_iterations = 50;
      return search::optimize(library(), model, unity_rules(), cost, settings).plan;
    }
  }
  return model;
}

// A pipeline of `stages` stages of about equal compute over `devices` devices, each operator split
// along its batch over its stage's block, as the optimizer's pipeline search lays one out.
inline pcg::Graph pipelined_plan(const pcg::Graph& model, int devices, int stages) {
  const search::CostModel cost(library(), machine_of(devices));
  const std::vector<int> stage_of = search::balanced_stages(model, cost, stages);
  return search::materialize(model, search::pipeline_placements(library(), model, stage_of, stages, devices), library());
}

// GPT-3 with its LM head tied to the embedding table, cut into a two-stage pipeline whose
// devices cannot hold the table in both stages, so the pipeline search interlaces the lookups and
// the head: each device holds a piece of the table, the output is cut along its classes.
inline SuiteModel tied_gpt3() {
  return {"gpt3 (tied)",
          models::build_model(library(), "gpt3",
                              {{"batch", 8}, {"seq", 4}, {"hidden", 64}, {"heads", 4}, {"layers", 2}, {"embeddings", 1}, {"vocab", 512}}),
          LossKind::CrossEntropy};
}

inline search::PipelineResult interlaced_pipeline(const pcg::Graph& model, int devices) {
  search::Machine machine = machine_of(devices);
  search::PipelineOptions options;
  options.stage_counts = {2};
  options.microbatches_per_stage = {1};
  options.boundary_moves = 0;
  const search::CostModel roomy(library(), machine);
  const pcg::Graph in_stages = search::materialize(
      model, search::pipeline_placements(library(), model, search::balanced_stages(model, roomy, 2), 2, devices), library(), roomy.moves());
  const std::vector<double> bytes = search::pipeline_memory(in_stages, roomy, {2, 2}, library());
  machine.device.memory_bytes = *std::max_element(bytes.begin(), bytes.end()) - 1;
  return search::pipeline_search(library(), model, search::CostModel(library(), machine), options);
}

// The fewest stages (at least two, dividing `devices`) whose blocks of devices can split a
// micro-batch of `model` along its batch (the first dimension of its first output).
inline int pipeline_stages_for(const pcg::Graph& model, int devices, int microbatches) {
  const std::int64_t micro_batch = model.shape_of(model.outputs().front()).dims.front() / microbatches;
  for (int stages = 2; stages < devices; ++stages)
    if (devices % stages == 0 && micro_batch % (devices / stages) == 0) return stages;
  return devices;
}

inline void expect_relatively_near(double got, double want, double tolerance, const std::string& what) {
  EXPECT_LE(std::abs(got - want), tolerance * std::max(1.0, std::abs(want))) << what << ": got " << got << ", want " << want;
}

// The losses and final weights of `planned` agree with those of `whole` to `tolerance` (relative),
// and the run trained.
inline void expect_same_run(const TrainReport& planned, const TrainReport& whole, double tolerance) {
  ASSERT_EQ(planned.losses.size(), whole.losses.size());
  for (std::size_t i = 0; i < whole.losses.size(); ++i)
    expect_relatively_near(planned.losses[i], whole.losses[i], tolerance, "loss of step " + std::to_string(i + 1));
  ASSERT_EQ(planned.weights.size(), whole.weights.size());
  for (const auto& [name, want] : whole.weights) {
    auto it = planned.weights.find(name);
    ASSERT_NE(it, planned.weights.end()) << "the plan has no weight " << name;
    ASSERT_EQ(it->second.dims, want.dims) << name;
    double worst = 0;
    std::size_t at = 0;
    for (std::size_t k = 0; k < want.data.size(); ++k) {
      const double error = std::abs(it->second.data[k] - want.data[k]) / std::max(1.0, std::abs(want.data[k]));
      if (error > worst) worst = error, at = k;
    }
    EXPECT_LE(worst, tolerance) << "weight " << name << "[" << at << "]";
  }
  EXPECT_NE(whole.losses.front(), whole.losses.back()) << "the model did not train";
}

// Trains `model` whole in one process on the CPU and `plan` over `transport` with the kernels of
// `backend` for `steps` steps from the same seed; the losses and final weights agree to
// `tolerance` (relative).
template <class T>
void expect_training_matches(const SuiteModel& model, const pcg::Graph& plan, int devices, Transport& transport, double tolerance,
                             std::int64_t steps = 20, Backend backend = Backend::Cpu, const KernelRegistry* kernels = nullptr,
                             const search::Pipeline& pipeline = {}) {
  TrainSettings s;
  s.steps = steps;
  s.loss = model.loss;
  s.run_name = model.name;
  const TrainReport whole = train<T>(library(), model.graph, s);
  s.plan_devices = devices;
  s.backend = backend;
  s.pipeline = pipeline;
  expect_same_run(train<T>(library(), plan, s, {}, &transport, kernels), whole, tolerance);
}

// Trains `model` whole with `settings` on the CPU and again with the kernels of `backend`: the
// same losses and final weights to `tolerance`.
template <class T>
void expect_backend_matches_cpu(const SuiteModel& model, TrainSettings settings, Backend backend, const KernelRegistry& kernels,
                                double tolerance) {
  settings.loss = model.loss;
  settings.run_name = model.name;
  const TrainReport cpu = train<T>(library(), model.graph, settings);
  settings.backend = backend;
  expect_same_run(train<T>(library(), model.graph, settings, {}, nullptr, &kernels), cpu, tolerance);
}

}  // namespace loom::runtime::sharded_test
