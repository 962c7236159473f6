// The one table of natively run operators drives the CPU registry; a backend that lacks a kernel
// the table lists is refused by name; reshapes take their output dims from the call.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "loom/pcg/diagnostic.hpp"
#include "loom/runtime/kernel_table.hpp"
#include "loom/runtime/relabel_kernel.hpp"
#include "runtime_test_support.hpp"

namespace loom::runtime {
namespace {

using testing::spec_output_dims;

TEST(KernelTable, TheCpuRegistryHoldsExactlyTheTablesOperatorsInBothPrecisions) {
  std::set<std::string> listed;
  for (const NativeKernelEntry& entry : native_kernel_table()) {
    EXPECT_TRUE(listed.insert(std::string(entry.op)).second) << entry.op << " is listed twice";
    EXPECT_NE(builtin_kernels().find<float>(std::string(entry.op), Backend::Cpu), nullptr) << entry.op;
    EXPECT_NE(builtin_kernels().find<double>(std::string(entry.op), Backend::Cpu), nullptr) << entry.op;
  }
  const auto registered = builtin_kernels().ops(Backend::Cpu);
  EXPECT_EQ(std::set<std::string>(registered.begin(), registered.end()), listed);
}

TEST(KernelTable, ABackendLackingAListedKernelIsRefusedNamingTheOperator) {
  BackendKernels partial;
  partial.provide<float>(NativeKernel::Dense, relabel_kernel<float>());
  partial.provide<double>(NativeKernel::Dense, relabel_kernel<double>());
  KernelRegistry registry;
  try {
    partial.register_all(registry, Backend::Cuda);
    FAIL() << "a backend without most kernels was accepted";
  } catch (const LoomError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("CUDA backend"), std::string::npos) << what;
    EXPECT_NE(what.find("'matmul_relu'"), std::string::npos) << what;
  }
}

TEST(KernelTable, AReshapeTakesTheDimsTheSpecInfers) {
  const Tensor<double> x({2, 3, 4, 4}, 1.5);
  const Kernel<double>* flatten = builtin_kernels().find<double>("flatten", Backend::Cpu);
  ASSERT_NE(flatten, nullptr);
  const OpCall<double> call{"flatten", {}, {&x}, {}, {}, {}, spec_output_dims("flatten", {}, {x.dims})};
  const auto y = flatten->forward(call);
  ASSERT_EQ(y.size(), 1u);
  EXPECT_EQ(y[0].dims, (std::vector<std::int64_t>{2, 48}));
  EXPECT_EQ(y[0].data, x.data);

  const OpCall<double> without_dims{"flatten", {}, {&x}, {}, {}, {}, {}};
  try {
    flatten->forward(without_dims);
    FAIL() << "a reshape without output dims ran";
  } catch (const LoomError& e) {
    EXPECT_NE(std::string(e.what()).find("flatten"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace loom::runtime
