// Plans run across processes launched by mpirun, one per device: every process checks that the
// sharded run's outputs and gradients equal the model run whole.
#include "../runtime/sharded_check.hpp"

#include "mpi_world.hpp"

namespace loom::runtime {
namespace {

using namespace sharded_test;

using mpi_test::world;

TEST(MpiExecution, RunsAcrossProcesses) {
  ASSERT_GE(world().size(), 2) << "start it with mpirun -np 2 or more";
  EXPECT_LT(world().rank(), world().size());
}

TEST(MpiExecution, DataParallelPlan) {
  const pcg::Graph g = small_mlp();
  const search::Machine m = search::load_machine("summit").with_devices_per_node(world().size());
  expect_same_as_logical(g, search::data_parallel(library(), g, m), world().size(), world());
}

TEST(MpiExecution, RandomSplitsOfTheFigureOneMlp) {
  const pcg::Graph g = small_mlp();
  for (std::uint64_t seed = 1; seed <= 8; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    expect_same_as_logical(g, random_placements(g, world().size(), seed), world().size(), world());
  }
}

TEST(MpiExecution, MegatronPlanOfATransformerLayer) {
  const pcg::Graph g = small_transformer();
  const search::Machine m = search::load_machine("summit").with_devices_per_node(world().size());
  expect_same_as_logical(g, search::expert_strategy(library(), g, m), world().size(), world());
}

// The plan runs its reduce_scatter and all_gather nodes as those collectives, not as messages,
// and gives the model's outputs and gradients.
void expect_collectives_match_the_model(const pcg::Graph& plan) {
  ShardedExecutor<double> e(library(), plan, builtin_kernels(), world(), {"w"}, world().size());
  EXPECT_EQ(e.collective_nodes(Collective::reduce_scatter), nodes_running(plan, "reduce_scatter"));
  EXPECT_EQ(e.collective_nodes(Collective::all_gather), nodes_running(plan, "all_gather"));
  expect_same_as_logical(product_relu_model(), plan, world().size(), world());
}

TEST(MpiExecution, ReduceScatterAndAllGatherOverEveryProcess) { expect_collectives_match_the_model(collective_plan(world().size())); }

TEST(MpiExecution, ReduceScatterAndAllGatherOverTwoProcesses) { expect_collectives_match_the_model(collective_plan(2)); }

// A reduce then a replicate run as one allreduce, a combine then a replicate as one all-gather,
// and the plans still give the model's outputs and gradients.
TEST(MpiExecution, ChainsOfParallelOperatorsRunAsOneCollective) {
  for (Collective kind : {Collective::allreduce, Collective::all_gather}) {
    const pcg::Graph plan = chain_plan(world().size(), kind);
    ShardedExecutor<double> e(library(), plan, builtin_kernels(), world(), {"w"}, world().size());
    EXPECT_EQ(e.collective_nodes(kind), std::vector<int>{nodes_running(plan, "replicate").back()});
    expect_same_as_logical(product_relu_model(), plan, world().size(), world());
  }
}

TEST(MpiExecution, ReduceScatterAndAllGatherWithinPairs) {
  if (world().size() != 4) GTEST_SKIP() << "needs exactly 4 ranks (mpirun -np 4); this run has " << world().size();
  expect_collectives_match_the_model(collective_plan_in_pairs());
}

}  // namespace
}  // namespace loom::runtime
