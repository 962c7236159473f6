// Plans run across processes launched by mpirun, one per device: every process checks that the
// sharded run's outputs and gradients equal the model run whole.
#include <chrono>
#include <thread>

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

// Passes every call on after a pause, counting the calls.
class SlowTransport final : public Transport {
 public:
  SlowTransport(Transport& inner, std::chrono::milliseconds pause) : inner_(inner), pause_(pause) {}
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  void exchange(std::vector<Outgoing<double>>& s, std::vector<Incoming<double>>& r) override { slow([&] { inner_.exchange(s, r); }); }
  void exchange(std::vector<Outgoing<float>>& s, std::vector<Incoming<float>>& r) override { slow([&] { inner_.exchange(s, r); }); }
  void sum(std::vector<double>& v) override { slow([&] { inner_.sum(v); }); }
  void sum(std::vector<float>& v) override { slow([&] { inner_.sum(v); }); }
  void sum(std::vector<double>& v, const std::vector<int>& g) override { slow([&] { inner_.sum(v, g); }); }
  void sum(std::vector<float>& v, const std::vector<int>& g) override { slow([&] { inner_.sum(v, g); }); }
  void all_gather(std::vector<double>& v, const std::vector<int>& g) override { slow([&] { inner_.all_gather(v, g); }); }
  void all_gather(std::vector<float>& v, const std::vector<int>& g) override { slow([&] { inner_.all_gather(v, g); }); }
  void reduce_scatter(std::vector<double>& v, const std::vector<int>& g) override { slow([&] { inner_.reduce_scatter(v, g); }); }
  void reduce_scatter(std::vector<float>& v, const std::vector<int>& g) override { slow([&] { inner_.reduce_scatter(v, g); }); }

  int calls = 0;

 private:
  template <class Call>
  void slow(Call&& call) {
    std::this_thread::sleep_for(pause_);
    call();
    ++calls;
  }
  Transport& inner_;
  std::chrono::milliseconds pause_;
};

// A layout change's time is the process's own work in it: however long its messages and
// collectives take, they are left out.
TEST(MpiExecution, LayoutChangeTimesLeaveOutTheTransport) {
  const pcg::Graph g = small_transformer();
  const search::Machine m = search::load_machine("summit").with_devices_per_node(world().size());
  const pcg::Graph plan = search::materialize(g, search::expert_strategy(library(), g, m), library());
  constexpr auto pause = std::chrono::milliseconds(50);
  SlowTransport slow(world(), pause);
  ShardedExecutor<double> e(library(), plan, builtin_kernels(), slow, weights_of(g), world().size());
  const NamedTensors<double> feeds = models::random_values(g, 11);  // read again by backward()
  e.forward(feeds);
  std::vector<Tensor<double>> output_grads;
  for (pcg::PortRef o : plan.outputs()) output_grads.emplace_back(plan.shape_of(o).dims, 1.0);
  e.backward(output_grads);

  double layout_seconds = 0;
  int layout_changes_with_calls = 0;
  for (const pcg::Node& n : plan.nodes()) {
    if (n.is_graph_input() || search::is_compute_node(library(), n)) continue;
    const OperatorTime& t = e.operator_times()[static_cast<std::size_t>(n.id)];
    layout_seconds += t.forward_seconds + t.backward_seconds;
    std::int64_t held = 0;
    for (std::int64_t task = 0; task < n.tasks(); ++task) held += (n.view ? n.view->devices[static_cast<std::size_t>(task)] : static_cast<int>(task)) == world().rank() ? 1 : 0;
    // Each pass counts the pieces of the new layout held here (a change fused into the next runs
    // as that one, and a weight's replicas are read from the feed: neither counts its own).
    if (t.forward_tasks > 0) {
      EXPECT_EQ(t.forward_tasks, held) << n.describe();
    }
    layout_changes_with_calls += t.forward_tasks > 0 && held > 0 ? 1 : 0;
  }
  EXPECT_GT(layout_changes_with_calls, 0);
  EXPECT_GE(slow.calls, 2);  // the Megatron plan's allreduces
  EXPECT_LT(layout_seconds, std::chrono::duration<double>(pause).count()) << slow.calls << " transport calls";
}

TEST(MpiExecution, ReduceScatterAndAllGatherWithinPairs) {
  if (world().size() != 4) GTEST_SKIP() << "needs exactly 4 ranks (mpirun -np 4); this run has " << world().size();
  expect_collectives_match_the_model(collective_plan_in_pairs());
}

}  // namespace
}  // namespace loom::runtime
