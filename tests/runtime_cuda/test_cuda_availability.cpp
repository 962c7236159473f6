// cuda_unavailable_reason() agrees with what the CUDA runtime reports.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <iostream>

#include "loom/runtime/cuda/cuda_kernels.hpp"

namespace loom::runtime {
namespace {

TEST(CudaAvailability, ReasonAgreesWithCudaGetDeviceCount) {
  int devices = 0;
  const cudaError_t status = cudaGetDeviceCount(&devices);
  const auto reason = cuda_unavailable_reason();
  if (status != cudaSuccess || devices == 0) {
    ASSERT_TRUE(reason.has_value()) << "cudaGetDeviceCount reports no device, yet CUDA is called usable";
    EXPECT_NE(reason->find("cudaGetDeviceCount"), std::string::npos) << *reason;
    std::cout << "CUDA unavailable: " << *reason << "\n";
    return;
  }
  cudaDeviceProp props{};
  ASSERT_EQ(cudaGetDeviceProperties(&props, 0), cudaSuccess);
  EXPECT_EQ(reason.has_value(), props.major < 9) << props.name << ": " << reason.value_or("usable");
}

}  // namespace
}  // namespace loom::runtime
