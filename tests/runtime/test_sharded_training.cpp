// The correctness suite in one process: every device's tasks run here, values still moving
// between tasks as the plan says.
#include "training_check.hpp"

namespace loom::runtime {
namespace {

using namespace sharded_test;

class ShardedTraining : public ::testing::TestWithParam<PlanKind> {};

TEST_P(ShardedTraining, FollowsTheSingleProcessRunInDouble) {
  LocalTransport local;
  for (const SuiteModel& model : suite_models()) {
    SCOPED_TRACE(model.name + ", " + plan_name(GetParam()));
    expect_training_matches<double>(model, plan_graph(GetParam(), model.graph, 4), 4, local, 1e-9);
  }
}

INSTANTIATE_TEST_SUITE_P(Plans, ShardedTraining, all_plan_kinds, plan_test_name);

TEST(ShardedTraining, FloatFollowsTheSingleProcessRun) {
  LocalTransport local;
  for (const SuiteModel& model : suite_models()) {
    SCOPED_TRACE(model.name);
    expect_training_matches<float>(model, plan_graph(PlanKind::Megatron, model.graph, 2), 2, local, 1e-4);
  }
}

// The plans differ from the model: the suite would prove nothing if every plan were the model.
TEST(ShardedTraining, EveryPlanSplitsSomething) {
  for (const SuiteModel& model : suite_models())
    for (PlanKind kind : {PlanKind::DataParallel, PlanKind::Reduction}) {
      const pcg::Graph plan = plan_graph(kind, model.graph, 4);
      EXPECT_GT(plan.size(), model.graph.size()) << model.name << ", " << plan_name(kind);
    }
}

}  // namespace
}  // namespace loom::runtime
