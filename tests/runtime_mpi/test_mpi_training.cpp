// The correctness suite across processes launched by mpirun, one per device: each model trained
// through each plan follows the single-process run step by step and ends with its weights.
#include <set>

#include "../runtime/training_check.hpp"
#include "loom/runtime/initializer.hpp"
#include "loom/runtime/operator_profile.hpp"

#include "mpi_world.hpp"

namespace loom::runtime {
namespace {

using namespace sharded_test;

using mpi_test::world;

class MpiTraining : public ::testing::TestWithParam<PlanKind> {};

TEST_P(MpiTraining, FollowsTheSingleProcessRunInDouble) {
  ASSERT_GE(world().size(), 2) << "start it with mpirun -np 2 or more";
  for (const SuiteModel& model : suite_models()) {
    SCOPED_TRACE(model.name + ", " + plan_name(GetParam()) + ", " + std::to_string(world().size()) + " processes");
    expect_training_matches<double>(model, plan_graph(GetParam(), model.graph, world().size()), world().size(), world(), 1e-9);
  }
}

INSTANTIATE_TEST_SUITE_P(Plans, MpiTraining, all_plan_kinds, plan_test_name);

TEST(MpiTraining, FloatFollowsTheSingleProcessRun) {
  for (const SuiteModel& model : suite_models()) {
    SCOPED_TRACE(model.name);
    expect_training_matches<float>(model, plan_graph(PlanKind::DataParallel, model.graph, world().size()), world().size(), world(), 1e-4);
  }
}

// Adam keeps moments per element; each process updates only the weight elements it reads, so a
// checkpoint has to gather weights and moments from the processes that hold them: a run resumed
// from one follows the single-process run.
TEST(MpiTraining, AdamResumedFromACheckpointFollowsTheSingleProcessRun) {
  const SuiteModel model = suite_models().front();
  TrainSettings s;
  s.steps = 6;
  s.loss = model.loss;
  s.run_name = model.name;
  s.optimizer = optimizer_from_name("adam");
  const TrainReport whole = train<double>(library(), model.graph, s);
  for (PlanKind kind : {PlanKind::Megatron, PlanKind::Reduction}) {
    SCOPED_TRACE(plan_name(kind));
    const pcg::Graph plan = plan_graph(kind, model.graph, world().size());
    TrainSettings first = s;
    first.plan_devices = world().size();
    first.steps = 3;
    first.checkpoint = ::testing::TempDir() + "loom_mpi_adam_" + std::to_string(world().size()) + ".ckpt";
    train<double>(library(), plan, first, {}, &world());
    std::vector<double> written{1};
    world().sum(written);  // rank 0 has written the checkpoint
    TrainSettings rest = first;
    rest.steps = 6;
    rest.checkpoint.clear();
    rest.resume = first.checkpoint;
    const TrainReport resumed = train<double>(library(), plan, rest, {}, &world());
    ASSERT_EQ(resumed.losses.size(), whole.losses.size());
    for (std::size_t i = 0; i < whole.losses.size(); ++i)
      expect_relatively_near(resumed.losses[i], whole.losses[i], 1e-9, "loss of step " + std::to_string(i + 1));
    for (const auto& [name, want] : whole.weights)
      for (std::size_t k = 0; k < want.data.size(); ++k)
        expect_relatively_near(resumed.weights.at(name).data[k], want.data[k], 1e-9, name + "[" + std::to_string(k) + "]");
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
    std::vector<double> coverage(static_cast<std::size_t>(Tensor<double>::element_count(plan.node(*plan.find(name)).output_shapes[0].dims)), 0);
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

}  // namespace
}  // namespace loom::runtime
