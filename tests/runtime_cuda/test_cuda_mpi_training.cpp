// Several processes on one GPU: launched by mpirun, the processes share the node's GPUs (each takes
// the one place_processes_on_gpus gives it), run the CUDA kernels there and move their values
// through MPI. Each model trained through each plan follows the CPU's single-process run.
#include <iostream>

#include "../runtime_mpi/mpi_world.hpp"
#include "cuda_test_support.hpp"
#include "loom/runtime/cuda/gpu_processes.hpp"
#include "training_check.hpp"

namespace loom::runtime {
namespace {

using namespace sharded_test;
using mpi_test::world;

class CudaMpiTraining : public ::testing::TestWithParam<PlanKind> {
 protected:
  void SetUp() override {
    if (const auto reason = cuda_unavailable_reason()) GTEST_SKIP() << *reason;
    static const GpuPlacement place = place_processes_on_gpus();  // a collective: once, by every process
    use_cuda_device(place.device);
    static bool told = false;
    if (place.first_on_node && !place.nccl && !told) std::cout << "[          ] " << place.why_not_nccl << "\n";
    told = true;
  }
};

TEST_P(CudaMpiTraining, FollowsTheSingleProcessRunInDouble) {
  ASSERT_GE(world().size(), 2) << "start it with mpirun -np 2 or more";
  for (const SuiteModel& model : suite_models()) {
    SCOPED_TRACE(model.name + ", " + plan_name(GetParam()) + ", " + std::to_string(world().size()) + " processes");
    expect_training_matches<double>(model, plan_graph(GetParam(), model.graph, world().size()), world().size(), world(), 1e-9, 20,
                                    Backend::Cuda, &testing::cuda_training_registry());
  }
}

TEST_P(CudaMpiTraining, FollowsTheSingleProcessRunInFloat) {
  for (const SuiteModel& model : suite_models()) {
    SCOPED_TRACE(model.name + ", " + plan_name(GetParam()));
    expect_training_matches<float>(model, plan_graph(GetParam(), model.graph, world().size()), world().size(), world(), 1e-4, 20,
                                   Backend::Cuda, &testing::cuda_training_registry());
  }
}

INSTANTIATE_TEST_SUITE_P(Plans, CudaMpiTraining, all_plan_kinds, plan_test_name);

}  // namespace
}  // namespace loom::runtime
