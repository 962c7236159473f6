// The training correctness suite on the CUDA backend: each model trained through each plan with
// the CUDA kernels (in one process, every device's tasks here) follows the CPU's single-process run.
#include "cuda_test_support.hpp"
#include "loom/runtime/cuda/cuda_kernels.hpp"
#include "training_check.hpp"

namespace loom::runtime {
namespace {

using namespace sharded_test;
using testing::cuda_training_registry;

// The suite trains with CUDA kernels where there are some and the CPU's elsewhere; this needs no GPU.
TEST(CudaTrainingRegistry, HoldsCudaKernelsBesideTheCpuKernels) {
  const KernelRegistry& r = cuda_training_registry();
  EXPECT_NE(r.find<double>("matmul", Backend::Cuda), nullptr);
  EXPECT_NE(r.find<float>("conv2d", Backend::Cuda), nullptr);
  EXPECT_NE(r.find<double>("lstm_cell", Backend::Cpu), nullptr);
  EXPECT_EQ(r.ops(Backend::Cpu), builtin_kernels().ops(Backend::Cpu));
}

class CudaTraining : public ::testing::TestWithParam<PlanKind> {};

TEST_P(CudaTraining, FollowsTheCpuRunInDouble) {
  if (const auto reason = cuda_unavailable_reason()) GTEST_SKIP() << *reason;
  LocalTransport local;
  for (const SuiteModel& model : suite_models()) {
    SCOPED_TRACE(model.name + ", " + plan_name(GetParam()));
    expect_training_matches<double>(model, plan_graph(GetParam(), model.graph, 4), 4, local, 1e-9, 20, Backend::Cuda,
                                    &cuda_training_registry());
  }
}

TEST_P(CudaTraining, FollowsTheCpuRunInFloat) {
  if (const auto reason = cuda_unavailable_reason()) GTEST_SKIP() << *reason;
  LocalTransport local;
  for (const SuiteModel& model : suite_models()) {
    SCOPED_TRACE(model.name + ", " + plan_name(GetParam()));
    expect_training_matches<float>(model, plan_graph(GetParam(), model.graph, 4), 4, local, 1e-4, 20, Backend::Cuda,
                                   &cuda_training_registry());
  }
}

INSTANTIATE_TEST_SUITE_P(Plans, CudaTraining, all_plan_kinds, plan_test_name);

// Adam's moments live beside the weights on the device, updated there.
TEST(CudaTraining, AdamFollowsTheCpuRun) {
  if (const auto reason = cuda_unavailable_reason()) GTEST_SKIP() << *reason;
  TrainSettings s;
  s.steps = 10;
  s.optimizer = optimizer_from_name("adam");
  expect_backend_matches_cpu<double>(suite_models().front(), s, Backend::Cuda, cuda_training_registry(), 1e-9);
}

// What the CUDA kernels make stays on the device: the executor's output pieces and the weights'
// gradients are device arrays, and reading one back gives the CPU's values.
TEST(CudaTraining, ValuesStayOnTheDeviceBetweenKernels) {
  if (const auto reason = cuda_unavailable_reason()) GTEST_SKIP() << *reason;
  const SuiteModel model = suite_models().front();
  const NamedTensors<double> feeds = models::random_values(library(), model.graph, 3);
  const std::set<std::string> weights = weights_of(model.graph);
  LocalTransport local;
  ShardedExecutor<double> cpu(library(), model.graph, builtin_kernels(), local, weights, 1);
  ShardedExecutor<double> gpu(library(), model.graph, cuda_training_registry(), local, weights, 1, Backend::Cuda);
  cpu.forward(feeds);
  gpu.forward(feeds);
  const auto pieces = gpu.output_pieces(0);
  ASSERT_EQ(pieces.size(), 1u);
  EXPECT_NE(pieces[0].value->device(), nullptr) << "the output was read back to the host";
  const Tensor<double> want = cpu.output(0), got = pieces[0].value->host();
  ASSERT_EQ(got.data.size(), want.data.size());
  for (std::size_t k = 0; k < want.data.size(); ++k) ASSERT_NEAR(got.data[k], want.data[k], 1e-9 * (1 + std::abs(want.data[k])));

  const std::vector<Tensor<double>> ones{Tensor<double>(want.dims, 1.0)};
  const NamedTensors<double> cpu_grads = cpu.backward(ones);
  const NamedValues<double> gpu_grads = gpu.backward_values(ones);
  for (const std::string& w : weights) {
    ASSERT_NE(gpu_grads.at(w).device(), nullptr) << w << "'s gradient was read back to the host";
    const Tensor<double>& g = gpu_grads.at(w).host();
    for (std::size_t k = 0; k < g.data.size(); ++k)
      ASSERT_NEAR(g.data[k], cpu_grads.at(w).data[k], 1e-9 * (1 + std::abs(cpu_grads.at(w).data[k]))) << w << "[" << k << "]";
  }
}

}  // namespace
}  // namespace loom::runtime
