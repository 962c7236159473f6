// Plans run across processes launched by mpirun, one per device: every process checks that the
// sharded run's outputs and gradients equal the model run whole.
#include <algorithm>
#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "../runtime/sharded_check.hpp"
#include "loom/search/task_graph.hpp"

#include "mpi_world.hpp"
#include "passing_transport.hpp"

namespace loom::runtime {
namespace {

using namespace sharded_test;

using mpi_test::PassingTransport;
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

// A split moved from the rows to the columns runs as one all-to-all among the processes, forward
// and back.
TEST(MpiExecution, AMovedSplitRunsAsOneAllToAll) {
  for (int degree : {2, world().size()}) {
    const pcg::Graph plan = all_to_all_plan(degree);
    ShardedExecutor<double> e(library(), plan, builtin_kernels(), world(), {"w"}, world().size());
    EXPECT_EQ(e.collective_nodes(Collective::all_to_all), nodes_running(plan, "all_to_all"));
    expect_same_as_logical(product_relu_model(), plan, world().size(), world());
  }
}

// A reduce then a replicate run as one allreduce, a combine then a replicate as one all-gather,
// and the plans still give the model's outputs and gradients.
TEST(MpiExecution, ChainsOfParallelOperatorsRunAsOneCollective) {
  for (Collective kind : {Collective::allreduce, Collective::all_gather}) {
    const pcg::Graph plan = chain_plan(world().size(), kind);
    ShardedExecutor<double> e(library(), plan, builtin_kernels(), world(), {"w"}, world().size());
    EXPECT_EQ(e.collective_nodes(kind), std::vector<pcg::NodeId>{nodes_running(plan, "replicate").back()});
    expect_same_as_logical(product_relu_model(), plan, world().size(), world());
  }
}

// Passes every call on after a pause, counting the calls (progress calls, which start nothing,
// pass at once).
class SlowTransport final : public PassingTransport {
 public:
  SlowTransport(Transport& inner, std::chrono::milliseconds pause) : PassingTransport(inner), pause_(pause) {}
  int calls = 0;

 private:
  void pass(const char* call, const std::function<void()>& run) override {
    if (std::string(call) == "progress") {
      run();
      return;
    }
    std::this_thread::sleep_for(pause_);
    run();
    ++calls;
  }
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
  const NamedTensors<double> feeds = models::random_values(library(), g, 11);  // read again by backward()
  e.forward(feeds);
  std::vector<Tensor<double>> output_grads;
  for (pcg::PortRef o : plan.outputs()) output_grads.emplace_back(plan.shape_of(o).dims, 1.0);
  e.backward(output_grads);

  double layout_seconds = 0;
  int layout_changes_with_calls = 0;
  for (const pcg::Node& n : plan.nodes()) {
    if (n.is_graph_input() || search::is_compute_node(library(), n)) continue;
    const OperatorTime& t = e.operator_times()[n.id.index()];
    layout_seconds += t.forward_seconds + t.backward_seconds;
    std::int64_t held = 0;
    for (std::int64_t task = 0; task < n.tasks(); ++task)
      held += (n.view ? n.view->devices[static_cast<std::size_t>(task)] : static_cast<int>(task)) == world().rank() ? 1 : 0;
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

// Passes every call on, listing the calls and the sizes of the sums started.
class RecordingTransport final : public PassingTransport {
 public:
  using PassingTransport::PassingTransport;
  void start_sum_values(HostValues v, const std::vector<int>& g) override {
    started_sizes.push_back(v.count);
    started_data.push_back(static_cast<const double*>(v.data));
    PassingTransport::start_sum_values(v, g);
  }
  std::vector<std::string> calls;
  std::vector<std::size_t> started_sizes;
  std::vector<const double*> started_data;

 private:
  void pass(const char* call, const std::function<void()>& run) override {
    calls.emplace_back(call);
    run();
  }
};

// Data parallelism sums each weight's gradient over the replicas as soon as the backward pass has
// made it: the last layer's sum is started while the earlier layers still run backward, and
// every weight is summed once, whole.
// The gradients of the data-parallel plan of `model`, run forward and backward (output gradients
// of ones) through `recording`, which keeps what the backward pass called alone.
NamedValues<double> data_parallel_backward(const pcg::Graph& model, RecordingTransport& recording) {
  const search::Machine m = search::load_machine("summit").with_devices_per_node(world().size());
  const pcg::Graph plan = search::materialize(model, search::data_parallel(library(), model, m), library());
  ShardedExecutor<double> e(library(), plan, builtin_kernels(), recording, weights_of(model), world().size());
  const NamedTensors<double> feeds = models::random_values(library(), model, 11);
  e.forward(feeds);
  std::vector<Tensor<double>> output_grads;
  for (pcg::PortRef o : plan.outputs()) output_grads.emplace_back(plan.shape_of(o).dims, 1.0);
  recording.calls.clear();
  recording.started_sizes.clear();
  recording.started_data.clear();
  return e.backward_values(output_grads);
}

TEST(MpiExecution, GradientSumsStartDuringTheBackwardPass) {
  const pcg::Graph g = small_mlp();
  RecordingTransport recording(world());
  data_parallel_backward(g, recording);

  std::size_t weight_elements = 0;
  for (const std::string& w : weights_of(g))
    weight_elements += static_cast<std::size_t>(pcg::whole_region(g.node(*g.find(w)).output_shapes[0].dims).elements());
  std::size_t started = 0;
  for (std::size_t n : recording.started_sizes) started += n;
  EXPECT_EQ(started, weight_elements);
  ASSERT_GE(recording.started_sizes.size(), 2u) << "every gradient summed at once, after the pass";

  const auto& calls = recording.calls;
  const auto first_start = std::find(calls.begin(), calls.end(), "start_sum");
  const auto last_start = std::find(calls.rbegin(), calls.rend(), "start_sum").base() - 1;
  EXPECT_GT(std::count(first_start, last_start, "progress"), 0) << "no backward work between the first and the last sum started";
  EXPECT_EQ(calls.back(), "finish_sums");
  EXPECT_EQ(std::count(calls.begin(), calls.end(), "finish_sums"), 1);
}

// relu(x w + b) for x [8, 128], w [128, 64] and b [64]: w's gradient is large enough to be summed
// where it lies, b's is packed; both are complete at the same node.
pcg::Graph linear_relu_model() {
  pcg::Graph g;
  const int x = g.add_input("x", pcg::ParallelShape::unpartitioned({8, 128}));
  const int w = g.add_input("w", pcg::ParallelShape::unpartitioned({128, 64}), true);
  const int b = g.add_input("b", pcg::ParallelShape::unpartitioned({64}), true);
  const int y = g.add_node(library(), "linear", {}, {{x, 0}, {w, 0}, {b, 0}});
  g.mark_output({g.add_node(library(), "relu", {}, {{y, 0}}), 0});
  return g;
}

// A whole gradient of at least kGradientSumInPlaceElements is summed in its own buffer, in a sum
// of its own; the smaller gradients complete at the same node are packed into one sum before it.
TEST(MpiExecution, LargeGradientsAreSummedWhereTheyLieAndSmallOnesPacked) {
  const pcg::Graph g = linear_relu_model();
  const search::Machine m = search::load_machine("summit").with_devices_per_node(world().size());
  expect_same_as_logical(g, search::data_parallel(library(), g, m), world().size(), world());

  RecordingTransport recording(world());
  const NamedValues<double> grads = data_parallel_backward(g, recording);
  ASSERT_GE(pcg::kGradientSumInPlaceElements, 64);
  ASSERT_LE(pcg::kGradientSumInPlaceElements, 128 * 64);
  ASSERT_EQ(recording.started_sizes, (std::vector<std::size_t>{64, 128 * 64}));
  EXPECT_EQ(recording.started_data[1], grads.at("w").host().data.data());
  EXPECT_NE(recording.started_data[0], grads.at("b").host().data.data());
}

// Data parallelism's forward pass moves nothing: each process reads its rows of the batch and its
// replica of the weights from the feeds, and the combine that would gather the output on one
// device is not run, since the loss reads the output's pieces where they lie.
TEST(MpiExecution, DataParallelForwardPassSendsNothing) {
  const pcg::Graph g = small_mlp();
  const search::Machine m = search::load_machine("summit").with_devices_per_node(world().size());
  const pcg::Graph plan = search::materialize(g, search::data_parallel(library(), g, m), library());
  ASSERT_EQ(plan.node(plan.outputs().front().node).op, "combine");
  RecordingTransport recording(world());
  ShardedExecutor<double> e(library(), plan, builtin_kernels(), recording, weights_of(g), world().size());
  e.forward(models::random_values(library(), g, 11));
  EXPECT_TRUE(recording.calls.empty()) << recording.calls.size() << " transport calls, the first " << recording.calls.front();
}

TEST(MpiExecution, ReduceScatterAndAllGatherWithinPairs) {
  if (world().size() != 4) GTEST_SKIP() << "needs exactly 4 ranks (mpirun -np 4); this run has " << world().size();
  expect_collectives_match_the_model(collective_plan_in_pairs());
}

}  // namespace
}  // namespace loom::runtime
