// What the CUDA kernels of the model zoo's operators (NMT's dot attention, Swin-Transformer's
// windows, shift and mask, AlphaFold2's pair bias, outer product mean and triangle updates) do
// beyond agreeing with the CPU kernels (test_cuda_kernels.cpp): they compute only the wanted
// gradients, and refuse a piece of a split their body cannot compute (no device needed).
#include <gtest/gtest.h>

#include <cmath>

#include "cuda_test_support.hpp"
#include "loom/pcg/diagnostic.hpp"
#include "loom/runtime/cuda/cuda_kernels.hpp"
#include "loom/runtime/kernel_registry.hpp"
#include "runtime_test_support.hpp"

namespace loom::runtime {
namespace {

using testing::cuda_registry;

using Dims = std::vector<std::int64_t>;
using testing::relative_error;
using testing::spec_output_dims;
using testing::uniform_tensor;

struct ModelCase {
  std::string op;
  pcg::AttrMap attrs;
  std::vector<Dims> inputs;
  // For a call on pieces: each input's offsets and logical dimensions.
  std::vector<Dims> offsets = {};
  std::vector<Dims> logical = {};
};

std::ostream& operator<<(std::ostream& os, const ModelCase& c) {
  return testing::describe_case(os, c.op, c.attrs, c.inputs, !c.offsets.empty());
}

// The call of the case on `inputs`, with its pieces' regions when it has any.
template <class T>
OpCall<T> call_of(const ModelCase& c, const std::vector<Tensor<T>>& inputs) {
  OpCall<T> call{c.op, c.attrs, pointers(inputs), {}, {}, {}, {}};
  if (c.offsets.empty()) call.output_dims = spec_output_dims(c.op, c.attrs, c.inputs);
  for (std::size_t i = 0; i < c.offsets.size(); ++i) {
    pcg::Region box{c.offsets[i], c.offsets[i]};
    for (std::size_t d = 0; d < box.hi.size(); ++d) box.hi[d] += c.inputs[i].at(d);
    call.regions.push_back(std::move(box));
  }
  call.logical_dims = c.logical;
  return call;
}

template <class T>
std::vector<Tensor<T>> random_inputs(const ModelCase& c, std::mt19937_64& rng) {
  std::vector<Tensor<T>> inputs;
  for (const Dims& dims : c.inputs) inputs.push_back(convert<T>(uniform_tensor(dims, rng)));
  return inputs;
}

// Only the wanted gradient is computed; the other comes back empty.
TEST(CudaModelKernels, ComputesOnlyTheWantedGradients) {
  if (const auto reason = cuda_unavailable_reason()) GTEST_SKIP() << *reason;
  const std::vector<ModelCase> cases = {
      {"dot_attention", {}, {{3, 5}, {3, 7, 5}}},
      {"add_window_mask", {}, {{6, 2, 4, 4}, {3, 4, 4}}},
      {"add_pair_bias", {}, {{2, 3, 4, 5, 6}, {2, 5, 6, 4}}},
      {"outer_product_mean", {}, {{2, 5, 3, 4}, {2, 5, 6, 2}}},
      {"triangle_mult_out", {}, {{2, 5, 5, 3}, {2, 5, 5, 3}}},
      {"triangle_mult_in", {}, {{2, 5, 5, 3}, {2, 5, 5, 3}}},
  };
  for (const ModelCase& c : cases)
    for (std::size_t skipped = 0; skipped < 2; ++skipped) {
      std::mt19937_64 rng(5);
      const auto inputs = random_inputs<double>(c, rng);
      const OpCall<double> call = call_of(c, inputs);
      const Kernel<double>* cpu = builtin_kernels().find<double>(c.op, Backend::Cpu);
      ASSERT_NE(cpu, nullptr) << c;
      const Kernel<double>& reference = *cpu;
      const Kernel<double>* gpu = cuda_registry().find<double>(c.op, Backend::Cuda);
      ASSERT_NE(gpu, nullptr) << c;
      const auto out = reference.forward(call);
      const std::vector<Tensor<double>> dy{uniform_tensor(out.at(0).dims, rng)};
      std::vector<bool> wanted(2, true);
      wanted[skipped] = false;
      const auto expected = reference.backward({call, pointers(out), pointers(dy), wanted});
      const auto actual = gpu->backward({call, pointers(out), pointers(dy), wanted});
      ASSERT_EQ(actual.size(), 2u) << c;
      const std::size_t kept = 1 - skipped;
      // The scores' gradient of the two bias ops is dy itself, returned whether wanted or not.
      if (c.op != "add_window_mask" && c.op != "add_pair_bias") {
        EXPECT_TRUE(actual[skipped].data.empty()) << c;
      }
      EXPECT_LT(relative_error(actual[kept], expected[kept]), 1e-9) << c << " gradient " << kept;
    }
}

// A split the body cannot compute a piece of is refused, naming the op, before any device work.
TEST(CudaModelKernels, RefusesPiecesSplitWhereTheBodyNeedsTheWhole) {
  const std::vector<ModelCase> refused = {
      {"cyclic_shift", {{"sh", 1}, {"sw", 1}}, {{2, 2, 4, 3}}, {{0, 2, 0, 0}}, {{2, 4, 4, 3}}},
      {"window_partition", {{"ws", 2}}, {{1, 4, 2, 3}}, {{0, 0, 2, 0}}, {{1, 4, 4, 3}}},
      {"window_reverse", {{"ws", 2}, {"height", 4}, {"width", 4}}, {{2, 4, 3}}, {{1, 0, 0}}, {{8, 4, 3}}},
      {"dot_attention", {}, {{3, 5}, {3, 4, 5}}, {{0, 0}, {0, 3, 0}}, {{3, 5}, {3, 7, 5}}},
      {"dot_attention", {}, {{3, 2}, {3, 7, 2}}, {{0, 3}, {0, 0, 3}}, {{3, 5}, {3, 7, 5}}},
      {"add_window_mask", {}, {{6, 2, 4, 4}, {2, 4, 4}}, {{0, 0, 0, 0}, {1, 0, 0}}, {{6, 2, 4, 4}, {3, 4, 4}}},
  };
  for (const ModelCase& c : refused) {
    std::mt19937_64 rng(3);
    const auto inputs = random_inputs<double>(c, rng);
    const Kernel<double>* gpu = cuda_registry().find<double>(c.op, Backend::Cuda);
    ASSERT_NE(gpu, nullptr) << c;
    try {
      gpu->forward(call_of(c, inputs));
      ADD_FAILURE() << c << " was not refused";
    } catch (const LoomError& e) {
      EXPECT_NE(std::string(e.what()).find(c.op), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace loom::runtime
