#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "loom/models/registry.hpp"
#include "loom/search/baselines.hpp"
#include "loom/search/coshard.hpp"
#include "loom/search/optimizer.hpp"
#include "loom/search/plan_simulation.hpp"
#include "search_support.hpp"

namespace loom::search {
namespace {

using namespace test_support;

// A mapping barred from splitting anything leaves the model on one device: the refinement's second
// walk, which starts from data parallelism, must find the faster plan that a short first walk
// misses.
TEST(Optimizer, TheRefinementAlsoStartsFromDataParallelismOverTheJointGraph) {
  const pcg::Graph g = models::build_model(library(), "mlp_fig1", {{"batch", 4096}});
  const Machine machine = load_machine("summit").with_devices_per_node(4);
  const CostModel model(library(), machine);
  OptimizeSettings settings;
  settings.baselines = false;
  settings.pipeline = false;
  settings.mcmc_iterations = 3;
  settings.mcmc_seconds = 0;
  settings.joint.mapping.admit = [](const pcg::Node&, const ParallelConfig&) { return false; };
  const OptimizeReport report = optimize(library(), g, {}, model, settings);
  const double data = placement_seconds(library(), report.graph, data_parallel(library(), report.graph, machine), model);
  ASSERT_LT(data, report.joint_seconds) << "the barred mapping should lose to data parallelism here";
  EXPECT_EQ(report.refinement_start, "data_parallel");
  EXPECT_LE(report.refined_seconds, data);
  EXPECT_EQ(report.best_seconds, report.refined_seconds);
  EXPECT_NEAR(placement_seconds(library(), report.graph, report.placements, model), report.best_seconds, 1e-12);
}

// With no rules the joint graph is the graph as given, and FlexFlow's walk from data parallelism
// is the refining walk from there: the baseline reports what a walk of its own finds, step for
// step.
TEST(Optimizer, FlexFlowsBaselineIsTheWalkItsSettingsMake) {
  const pcg::Graph g = models::build_model(library(), "mlp_fig1", {{"batch", 1024}});
  const Machine machine = load_machine("summit").with_devices_per_node(4);
  const CostModel model(library(), machine);
  OptimizeSettings settings;
  settings.pipeline = false;
  settings.mcmc_iterations = 40;
  settings.mcmc_seconds = 0;
  settings.seed = 7;
  const OptimizeReport report = optimize(library(), g, {}, model, settings);
  ASSERT_EQ(report.graph, g);
  McmcOptions own;
  own.iterations = settings.mcmc_iterations;
  own.seed = settings.seed;
  const McmcResult walked = mcmc_search(library(), g, model, own);
  ASSERT_EQ(walked.steps, own.iterations);
  EXPECT_FALSE(walked.stopped_by_time());
  EXPECT_EQ(report.baselines.at("flexflow_mcmc"), walked.seconds);
}

// The refining walks, the pipeline search and, over a rewritten graph, FlexFlow's walk run on
// several threads when asked, each costing with a model of its own: the plan and every figure of
// the report are those of one thread.
// The sequential baseline's rewriting runs beside the joint search, and its walk beside the
// refining walks where no other walk walks its graph: on CANDLE-Uno the generated rules make the
// sequential baseline's graph differ from both the model's and the joint search's.
TEST(Optimizer, TheWalksAndThePipelineSearchOnSeveralThreadsMakeTheSamePlan) {
  const std::string rules_dir = spec::Library::default_specs_dir() + "/rules/";
  std::vector<pcg::Rule> unity_and_generated = unity_rules();
  for (pcg::Rule& r : spec::load_rule_file(library(), {spec::Library::default_specs_dir()}, rules_dir + "generated.verified.json"))
    if (r.id == "g0365") unity_and_generated.push_back(std::move(r));
  struct Case {
    std::string model;
    std::map<std::string, std::int64_t> params;
    std::vector<pcg::Rule> rules;
  };
  const std::vector<Case> cases{{"mlp_fig1", {{"batch", 1024}}, {}},
                                {"mlp_fig1", {{"batch", 1024}}, unity_rules()},
                                {"candle_uno", {{"batch", 256}, {"feature_layers", 2}, {"dense_layers", 2}}, unity_and_generated}};
  const CostModel model(library(), load_machine("summit").with_devices_per_node(4));
  bool sequential_walk_beside_seen = false;
  for (const Case& c : cases) {
    const pcg::Graph g = models::build_model(library(), c.model, c.params);
    OptimizeSettings settings;
    settings.mcmc_iterations = 30;
    settings.mcmc_seconds = 0;
    settings.seed = 3;
    settings.jobs = 1;
    settings.joint.min_segment = 5;
    const OptimizeReport one = optimize(library(), g, c.rules, model, settings);
    const bool rewrite = !c.rules.empty();
    ASSERT_EQ(one.joint.graph != g, rewrite) << c.model << ": the rules should rewrite the graph, and only they";
    for (const StageTime& t : one.stages) EXPECT_FALSE(t.alongside) << t.stage;
    if (c.model == "candle_uno") {
      EXPECT_GT(one.joint.segments, 1u) << "the joint search's segments should be searched at once";
    }
    const pcg::Graph sequential_graph = sequential_rewrite(library(), g, c.rules, model, settings.joint.substitution).best;
    const bool sequential_walk_beside = sequential_graph != g && sequential_graph != one.joint.graph;
    sequential_walk_beside_seen = sequential_walk_beside_seen || sequential_walk_beside;
    for (int jobs : {2, 3}) {
      settings.jobs = jobs;
      const OptimizeReport many = optimize(library(), g, c.rules, model, settings);
      const std::string context = c.model + ", " + std::to_string(jobs) + " jobs" + (rewrite ? ", rewritten" : "");
      EXPECT_EQ(many.chosen, one.chosen) << context;
      EXPECT_EQ(many.best_seconds, one.best_seconds) << context;
      EXPECT_EQ(many.joint_seconds, one.joint_seconds) << context;
      EXPECT_EQ(many.refined_seconds, one.refined_seconds) << context;
      EXPECT_EQ(many.refinement_start, one.refinement_start) << context;
      EXPECT_EQ(many.pipeline_seconds, one.pipeline_seconds) << context;
      EXPECT_EQ(many.baselines, one.baselines) << context;
      EXPECT_EQ(many.placements, one.placements) << context;
      EXPECT_EQ(many.plan, one.plan) << context;
      std::vector<std::string> stages;
      for (const StageTime& t : many.stages) {
        stages.push_back(t.stage);
        const bool beside = t.stage == "pipeline parallelism" || t.stage == "baseline: sequential, rewriting" ||
                            (rewrite && t.stage == "baseline: flexflow_mcmc") ||
                            (sequential_walk_beside && t.stage == "baseline: sequential");
        EXPECT_EQ(t.alongside, beside) << t.stage << ", " << context;
      }
      for (const char* stage : {"refining the joint plan", "pipeline parallelism", "baseline: flexflow_mcmc", "baseline: sequential",
                                "baseline: sequential, rewriting"})
        EXPECT_EQ(std::count(stages.begin(), stages.end(), stage), 1) << stage << ", " << context;
    }
  }
  EXPECT_TRUE(sequential_walk_beside_seen) << "no case ran the sequential baseline's walk beside the others";
}

TEST(Optimizer, AWalkOutOfTimeSaysSo) {
  const pcg::Graph g = models::build_model(library(), "mlp_fig1", {{"batch", 1024}});
  const CostModel model(library(), load_machine("summit").with_devices_per_node(4));
  McmcOptions bounded;
  bounded.iterations = 1000000;
  bounded.max_seconds = 1e-9;
  const McmcResult r = mcmc_search(library(), g, model, bounded);
  EXPECT_TRUE(r.stopped_by_time());
  EXPECT_LT(r.steps, bounded.iterations);
}

// Refining walks of three steps and no time: the plans these tests compare come from the searches.
OptimizeSettings short_walks() {
  OptimizeSettings settings;
  settings.mcmc_iterations = 3;
  settings.mcmc_seconds = 0;
  return settings;
}

// On one device whose memory holds the model's weights and three quarters of what its activations
// need, no plan fits unless operators recompute their outputs: the optimizer then returns a plan
// with activation checkpoints, slower by the forwards done again, and refuses when told not to
// recompute.
TEST(Optimizer, WhenNothingFitsThePlanRecomputesItsActivations) {
  const pcg::Graph g = models::build_model(library(), "mlp", {{"batch", 4096}, {"in", 64}, {"hidden", 512}, {"layers", 8}});
  Machine machine = load_machine("summit").with_devices_per_node(1);
  OptimizeSettings settings = short_walks();
  const OptimizeReport roomy = optimize(library(), g, {}, CostModel(library(), machine), settings);
  ASSERT_TRUE(roomy.recompute.empty());
  Plan plan;
  plan.graph = roomy.plan;
  const CostModel roomy_model(library(), machine);
  const double keeping = plan_device_memory(plan, roomy_model, library())[0];
  const double activations = plan_device_memory(plan, roomy_model, library(), true)[0];
  ASSERT_GT(activations, keeping / 2);
  machine.device.memory_bytes = keeping - activations / 4;
  const CostModel tight(library(), machine);
  const OptimizeReport report = optimize(library(), g, {}, tight, settings);
  EXPECT_NE(report.chosen.find("+recompute"), std::string::npos) << report.chosen;
  EXPECT_FALSE(report.recompute.empty());
  EXPECT_GT(report.best_seconds, roomy.best_seconds);
  Plan chosen;
  chosen.graph = report.plan;
  chosen.recompute = report.recompute;
  EXPECT_TRUE(simulated_plan_cost(chosen, tight, library()).fits());
  settings.recompute = false;
  EXPECT_THROW(optimize(library(), g, {}, tight, settings), LoomError);
}

// Where keeping every activation does not fit but dropping only what is cheap to compute again does
// (softmax, dropout, GELU, normalizations: operators without a contraction), the optimizer
// recomputes only those, as Megatron-LM and SuperScaler recompute attention, rather than
// checkpoints that compute products again.
TEST(Optimizer, SelectiveRecomputationDropsOnlyWhatIsCheapToComputeAgain) {
  const pcg::Graph g = models::build_model(
      library(), "bert_large",
      {{"batch", 8}, {"seq", 256}, {"layers", 2}, {"hidden", 256}, {"heads", 4}, {"vocab", 100}, {"max_positions", 256}});
  Machine machine = load_machine("summit").with_devices_per_node(1);
  OptimizeSettings settings = short_walks();
  const OptimizeReport roomy = optimize(library(), g, {}, CostModel(library(), machine), settings);
  ASSERT_TRUE(roomy.recompute.empty());
  const CostModel roomy_model(library(), machine);
  const auto contracts = [](const pcg::Graph& graph, const pcg::Node& n) {
    std::vector<pcg::ParallelShape> inputs;
    for (const pcg::PortRef& in : n.inputs) inputs.push_back(graph.node(in.node).output_shapes[static_cast<std::size_t>(in.port)]);
    return library().task_cost(n.op, n.attrs, inputs).shape == pcg::KernelShape::Contraction;
  };
  Plan plan;
  plan.graph = roomy.plan;
  const double keeping = plan_device_memory(plan, roomy_model, library())[0];
  for (const pcg::Node& n : plan.graph.nodes())
    if (roomy_model.is_compute(n) && !contracts(plan.graph, n)) plan.recompute.push_back(n.id);
  const double selective = plan_device_memory(plan, roomy_model, library())[0];
  ASSERT_LT(selective, keeping);
  machine.device.memory_bytes = (selective + keeping) / 2;
  const CostModel tight(library(), machine);
  const OptimizeReport report = optimize(library(), g, {}, tight, settings);
  EXPECT_NE(report.chosen.find("+recompute"), std::string::npos) << report.chosen;
  ASSERT_FALSE(report.recompute.empty());
  for (pcg::NodeId id : report.recompute) EXPECT_FALSE(contracts(report.plan, report.plan.node(id))) << report.plan.node(id).describe();
}

// Where even activation checkpoints need more than a device holds, co-sharding the same plan, each
// operator in more pieces run in turn, lets its backward pass compute again and hold one piece of a
// segment at a time: the optimizer returns that plan, and refuses when told not to co-shard.
TEST(Optimizer, WhenRecomputationDoesNotFitThePlanIsCoShardedToo) {
  const pcg::Graph g = models::build_model(library(), "mlp", {{"batch", 4096}, {"in", 64}, {"hidden", 512}, {"layers", 8}});
  Machine machine = load_machine("summit").with_devices_per_node(1);
  OptimizeSettings settings = short_walks();
  const OptimizeReport roomy = optimize(library(), g, {}, CostModel(library(), machine), settings);
  const CostModel roomy_model(library(), machine);
  // The least the plan needs with any spacing of checkpoints; co-sharded, with the spacings the
  // optimizer tries (every 2nd, 3rd or sqrt(n)-th operator kept, or the last alone).
  const auto least = [&](const std::vector<Placement>& placements, bool any_spacing) {
    Plan plan;
    plan.graph = materialize(roomy.graph, placements, library());
    std::vector<pcg::NodeId> compute;
    for (const pcg::Node& n : plan.graph.nodes())
      if (roomy_model.is_compute(n)) compute.push_back(n.id);
    double bytes = std::numeric_limits<double>::infinity();
    const auto root = static_cast<std::size_t>(std::ceil(std::sqrt(static_cast<double>(compute.size()))));
    for (std::size_t keep_every = 2; keep_every <= compute.size(); ++keep_every) {
      if (!any_spacing && keep_every != 2 && keep_every != 3 && keep_every != root && keep_every != compute.size()) continue;
      plan.recompute.clear();
      for (std::size_t i = 0; i < compute.size(); ++i)
        if (i % keep_every != keep_every - 1) plan.recompute.push_back(compute[i]);
      bytes = std::min(bytes, plan_device_memory(plan, roomy_model, library())[0]);
    }
    return bytes;
  };
  const double recomputing = least(roomy.placements, true);
  const double coshard = std::min(least(coshard_placements(library(), roomy.graph, roomy.placements, 2), false),
                                  least(coshard_placements(library(), roomy.graph, roomy.placements, 4), false));
  ASSERT_LT(coshard, recomputing);
  machine.device.memory_bytes = (coshard + recomputing) / 2;
  const CostModel tight(library(), machine);
  const OptimizeReport report = optimize(library(), g, {}, tight, settings);
  EXPECT_NE(report.chosen.find("+coshard+recompute"), std::string::npos) << report.chosen;
  EXPECT_GT(report.coshard.operators, 0u);
  EXPECT_FALSE(report.recompute.empty());
  Plan chosen;
  chosen.graph = report.plan;
  chosen.recompute = report.recompute;
  EXPECT_TRUE(simulated_plan_cost(chosen, tight, library()).fits());
  bool shares_a_device = false;
  for (const pcg::Node& n : report.plan.nodes()) {
    std::vector<int> devices = n.view_or_default().devices;
    std::sort(devices.begin(), devices.end());
    shares_a_device = shares_a_device || std::adjacent_find(devices.begin(), devices.end()) != devices.end();
  }
  EXPECT_TRUE(shares_a_device);
  settings.coshard = false;
  EXPECT_THROW(optimize(library(), g, {}, tight, settings), LoomError);
}

// A co-sharded region computes again piece by piece only where what is read from outside it is
// kept. BERT-Large's eight layers on 8 GPUs of 6.5 GiB: recomputing alone, or co-sharded with its
// outputs (the last layer's and the pooler's, which their gathers read) computed again, no plan
// fits; with the operators making the outputs kept, one does. Told not to co-shard, the optimizer
// says what the smallest plan it tried needs.
TEST(Optimizer, CoShardedPlansKeepTheOperatorsMakingTheOutputs) {
  const pcg::Graph g = models::build_model(library(), "bert_large", {{"batch", 160}, {"layers", 8}});
  Machine machine = load_machine("summit").with_nodes(2).with_devices_per_node(4);
  machine.device.memory_bytes = 6.5 * (1 << 30);
  OptimizeSettings settings = short_walks();
  settings.pipeline = false;
  const CostModel model(library(), machine);
  const OptimizeReport report = optimize(library(), g, {}, model, settings);
  EXPECT_NE(report.chosen.find("+coshard+recompute"), std::string::npos) << report.chosen;
  EXPECT_GT(report.coshard.operators, 0u);
  for (pcg::PortRef o : report.plan.outputs()) {
    pcg::NodeId maker = o.node;
    while (!model.is_compute(report.plan.node(maker))) maker = report.plan.node(maker).inputs.front().node;
    SCOPED_TRACE(report.plan.node(maker).describe());
    EXPECT_EQ(std::count(report.recompute.begin(), report.recompute.end(), maker), 0);
  }
  Plan chosen;
  chosen.graph = report.plan;
  chosen.recompute = report.recompute;
  EXPECT_TRUE(simulated_plan_cost(chosen, model, library()).fits());
  settings.coshard = false;
  try {
    optimize(library(), g, {}, model, settings);
    ADD_FAILURE() << "a plan fitted without co-shard";
  } catch (const LoomError& e) {
    EXPECT_NE(std::string(e.what()).find("with recomputation (co-shard not tried: --no-coshard), the smallest plan tried needs 7."),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace loom::search
