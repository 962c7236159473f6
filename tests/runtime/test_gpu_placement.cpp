// Which GPU each process takes, and when NCCL gives way to MPI because processes share a GPU.
#include <gtest/gtest.h>

#include <cstdlib>

#include "loom/pcg/diagnostic.hpp"
#include "loom/runtime/gpu_placement.hpp"

namespace loom::runtime {
namespace {

TEST(GpuPlacement, EachProcessWithAGpuOfItsOwnUsesNccl) {
  for (int rank = 0; rank < 4; ++rank) {
    const GpuPlacement p = place_on_gpus({rank, 4, 8});
    EXPECT_EQ(p.device, rank);
    EXPECT_TRUE(p.nccl);
    EXPECT_TRUE(p.why_not_nccl.empty());
  }
}

TEST(GpuPlacement, ProcessesSharingAGpuMoveValuesThroughMpiAndSayWhy) {
  const GpuPlacement shared = place_on_gpus({3, 4, 1});
  EXPECT_EQ(shared.device, 0);
  EXPECT_FALSE(shared.nccl);
  EXPECT_NE(shared.why_not_nccl.find("4 processes share 1 GPU on this node"), std::string::npos) << shared.why_not_nccl;
  const GpuPlacement two = place_on_gpus({3, 4, 2});
  EXPECT_EQ(two.device, 1);
  EXPECT_FALSE(two.nccl);
  EXPECT_NE(two.why_not_nccl.find("share 2 GPUs"), std::string::npos) << two.why_not_nccl;
}

TEST(GpuPlacement, RefusesNoDeviceAndANumberingOutOfRange) {
  EXPECT_THROW(place_on_gpus({0, 1, 0}), LoomError);
  EXPECT_THROW(place_on_gpus({2, 2, 1}), LoomError);
  EXPECT_THROW(place_on_gpus({-1, 2, 1}), LoomError);
}

// Sets a variable for the scope, restoring what was there.
class ScopedVariable {
 public:
  ScopedVariable(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old, had_ = true;
    setenv(name, value, 1);
  }
  ~ScopedVariable() {
    if (had_)
      setenv(name_, old_.c_str(), 1);
    else
      unsetenv(name_);
  }
  ScopedVariable(const ScopedVariable&) = delete;
  ScopedVariable& operator=(const ScopedVariable&) = delete;

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

TEST(GpuPlacement, ReadsTheLaunchersNumberingOfTheNodesProcesses) {
  {
    ScopedVariable rank("OMPI_COMM_WORLD_LOCAL_RANK", "1"), ranks("OMPI_COMM_WORLD_LOCAL_SIZE", "2");
    const NodeRanks node = node_ranks_from_environment(1);
    EXPECT_EQ(node.local_rank, 1);
    EXPECT_EQ(node.local_ranks, 2);
    EXPECT_EQ(node.devices, 1);
  }
  {
    ScopedVariable rank("OMPI_COMM_WORLD_LOCAL_RANK", ""), ranks("OMPI_COMM_WORLD_LOCAL_SIZE", "");
    ScopedVariable mpich_rank("MPI_LOCALRANKID", "2"), mpich_ranks("MPI_LOCALNRANKS", "3");
    const NodeRanks node = node_ranks_from_environment(4);
    EXPECT_EQ(node.local_rank, 2);
    EXPECT_EQ(node.local_ranks, 3);
  }
  ScopedVariable bad("OMPI_COMM_WORLD_LOCAL_RANK", "one");
  EXPECT_THROW(node_ranks_from_environment(1), LoomError);
}

}  // namespace
}  // namespace loom::runtime
