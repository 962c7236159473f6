#include "sharded_check.hpp"

#include "loom/pcg/diagnostic.hpp"

namespace loom::runtime {
namespace {

using namespace sharded_test;

LocalTransport local;

TEST(ShardedExecutor, DataParallelPlanMatchesTheModel) {
  const pcg::Graph g = small_mlp();
  const search::Machine m = search::load_machine("summit").with_devices_per_node(4);
  expect_same_as_logical(g, search::data_parallel(library(), g, m), 4, local);
}

TEST(ShardedExecutor, RandomSplitsOfTheFigureOneMlpMatchTheModel) {
  const pcg::Graph g = small_mlp();
  for (std::uint64_t seed = 1; seed <= 12; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    expect_same_as_logical(g, random_placements(g, 4, seed), 4, local);
  }
}

TEST(ShardedExecutor, MegatronPlanOfATransformerLayerMatchesTheModel) {
  const pcg::Graph g = small_transformer();
  const search::Machine m = search::load_machine("summit").with_devices_per_node(2);
  expect_same_as_logical(g, search::expert_strategy(library(), g, m), 2, local);
}

TEST(ShardedExecutor, RefusesAProcessCountOtherThanThePlans) {
  struct FourProcesses final : Transport {
    int rank() const override { return 0; }
    int size() const override { return 4; }
    void exchange(std::vector<Outgoing<float>>&, std::vector<Incoming<float>>&) override {}
    void exchange(std::vector<Outgoing<double>>&, std::vector<Incoming<double>>&) override {}
    void sum(std::vector<float>&) override {}
    void sum(std::vector<double>&) override {}
    void sum(std::vector<float>&, const std::vector<int>&) override {}
    void sum(std::vector<double>&, const std::vector<int>&) override {}
  } four;
  try {
    ShardedExecutor<double> e(library(), small_mlp(), builtin_kernels(), four, {}, 2);
    FAIL() << "a plan for 2 devices ran on 4 processes";
  } catch (const LoomError& e) {
    EXPECT_NE(std::string(e.what()).find("mpirun -np 2"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace loom::runtime
