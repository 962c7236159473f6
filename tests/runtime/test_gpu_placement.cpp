// Which GPU each process takes, and when NCCL gives way to MPI because processes share a GPU.
#include <gtest/gtest.h>

#include "loom/pcg/diagnostic.hpp"
#include "loom/runtime/gpu_placement.hpp"

namespace loom::runtime {
namespace {

TEST(GpuPlacement, EachProcessOnAGpuOfItsOwnUsesNccl) {
  const std::vector<std::string> four{"0000:19:00.0", "0000:3b:00.0", "0000:5d:00.0", "0000:88:00.0"};
  for (int rank = 0; rank < 4; ++rank) {
    const GpuPlacement p = place_on_gpus(four, rank, rank);
    EXPECT_EQ(p.device, rank);
    EXPECT_TRUE(p.nccl);
    EXPECT_TRUE(p.why_not_nccl.empty());
    EXPECT_EQ(p.first_on_node, rank == 0);
  }
  // Each process given one GPU of its own (CUDA_VISIBLE_DEVICES): each sees its GPU as device 0.
  EXPECT_TRUE(place_on_gpus(four, 2, 0).nccl);
}

TEST(GpuPlacement, ProcessesSharingAGpuMoveValuesThroughMpiAndSayWhy) {
  const GpuPlacement one = place_on_gpus({"0000:19:00.0", "0000:19:00.0", "0000:19:00.0", "0000:19:00.0"}, 3, 0);
  EXPECT_EQ(one.device, 0);
  EXPECT_FALSE(one.nccl);
  EXPECT_FALSE(one.first_on_node);
  EXPECT_NE(one.why_not_nccl.find("4 processes share 1 GPU on this node"), std::string::npos) << one.why_not_nccl;
  const GpuPlacement two = place_on_gpus({"a", "b", "a", "b"}, 3, 1);
  EXPECT_FALSE(two.nccl);
  EXPECT_NE(two.why_not_nccl.find("4 processes share 2 GPUs"), std::string::npos) << two.why_not_nccl;
}

TEST(GpuPlacement, RefusesANumberingOutOfRange) {
  EXPECT_THROW(place_on_gpus({}, 0, 0), LoomError);
  EXPECT_THROW(place_on_gpus({"a", "b"}, 2, 0), LoomError);
  EXPECT_THROW(place_on_gpus({"a", "b"}, -1, 0), LoomError);
}

}  // namespace
}  // namespace loom::runtime
