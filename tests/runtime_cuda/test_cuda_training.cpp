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

}  // namespace
}  // namespace loom::runtime
