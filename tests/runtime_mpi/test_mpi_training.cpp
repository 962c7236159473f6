// The correctness suite across processes launched by mpirun, one per device: each model trained
// through each plan follows the single-process run step by step and ends with its weights.
#include "../runtime/training_check.hpp"

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

}  // namespace
}  // namespace loom::runtime
