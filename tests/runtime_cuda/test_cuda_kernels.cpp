// Every CUDA kernel against the CPU kernel of the same operator on random inputs, forward and backward, in double (1e-9 relative) and
// float (1e-4), with odd sizes that leave partial blocks and warps.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include "cuda_test_support.hpp"
#include "loom/runtime/cuda/cuda_kernels.hpp"
#include "loom/runtime/interpreter_kernel.hpp"
#include "loom/runtime/kernel_registry.hpp"
#include "runtime_test_support.hpp"

namespace loom::runtime {
namespace {

using testing::cuda_registry;

using testing::bundled_library;
using testing::relative_error;
using testing::same_infinities;
using testing::spec_output_dims;
using testing::uniform_tensor;

struct CudaCase {
  std::string op;
  pcg::AttrMap attrs;
  std::vector<std::vector<std::int64_t>> inputs;
  std::map<std::size_t, std::pair<double, double>> ranges;  // input -> value range, default [-1, 1]
  std::map<std::size_t, std::int64_t> ids = {};             // input -> integer ids in [0, value)
  // For a call on pieces of logical values: each input's region and logical dimensions.
  std::vector<pcg::Region> regions = {};
  std::vector<std::vector<std::int64_t>> logical_dims = {};
};

// The case run on pieces: input i is the box of its dims at offsets[i] in a value of logical[i].
CudaCase on_pieces(CudaCase c, const std::vector<std::vector<std::int64_t>>& offsets,
                   const std::vector<std::vector<std::int64_t>>& logical) {
  for (std::size_t i = 0; i < c.inputs.size(); ++i) {
    pcg::Region box{offsets.at(i), offsets.at(i)};
    for (std::size_t d = 0; d < box.hi.size(); ++d) box.hi[d] += c.inputs[i].at(d);
    c.regions.push_back(std::move(box));
  }
  c.logical_dims = logical;
  return c;
}

std::ostream& operator<<(std::ostream& os, const CudaCase& c) {
  return testing::describe_case(os, c.op, c.attrs, c.inputs, !c.regions.empty());
}

const std::vector<CudaCase>& cases() {
  const std::pair<double, double> positive{0.5, 1.5};
  const pcg::AttrMap conv{{"stride_h", 1}, {"stride_w", 1}, {"pad_h", 1}, {"pad_w", 1}, {"act", 0}};
  auto with = [](pcg::AttrMap a, const std::string& k, std::int64_t v) {
    a[k] = v;
    return a;
  };
  static const std::vector<CudaCase> all = {
      {"matmul", {}, {{7, 13}, {13, 5}}, {}},
      {"matmul", {}, {{67, 129}, {129, 33}}, {}},
      {"matmul_relu", {}, {{9, 11}, {11, 7}}, {}},
      {"linear", {}, {{3, 5, 17}, {17, 9}, {9}}, {}},
      {"linear_nobias", {}, {{31, 4}, {4, 3}}, {}},
      {"batch_matmul", {}, {{3, 7, 5}, {3, 5, 9}}, {}},
      {"batch_matmul", {}, {{2, 3, 5, 1}, {2, 3, 1, 7}}, {}},
      {"bias_add", {}, {{5, 3, 7}, {7}}, {}},
      {"bias_add_axis", {{"axis", 1}}, {{2, 3, 5, 7}, {3}}, {}},
      // Per entry 2 * 67 * 71 = 9514 summands: more than one block each, neither a multiple of 256.
      {"bias_add_axis", {{"axis", 1}}, {{2, 3, 67, 71}, {3}}, {}},
      {"bias_add_axis", {{"axis", 0}}, {{5, 7}, {5}}, {}},
      {"bias_add_axis", {{"axis", 2}}, {{3, 2, 301}, {301}}, {}},
      {"bias_add_axis", {{"axis", 3}}, {{2, 3, 2, 5}, {5}}, {}},
      // One block per entry: more entries than the 1024 blocks a sum aims for, then more than a
      // grid's 65535 columns (blocks take a second entry in turn).
      {"bias_add_axis", {{"axis", 1}}, {{2, 1031, 3}, {1031}}, {}},
      {"bias_add_axis", {{"axis", 1}}, {{2, 65539}, {65539}}, {}},
      // Two entries of 33 * 257 summands, each over three blocks whose partial sums are added after.
      {"bias_add_axis", {{"axis", 0}}, {{2, 33, 257}, {2}}, {}},
      // A piece of the channels: the bias comes split alike.
      on_pieces({"bias_add_axis", {{"axis", 1}}, {{2, 3, 4, 5}, {3}}, {}}, {{0, 3, 0, 0}, {3}}, {{2, 6, 4, 5}, {6}}),
      {"relu", {}, {{7, 13}}, {}},
      {"sigmoid", {}, {{7, 13}}, {}},
      {"tanh", {}, {{7, 13}}, {}},
      {"gelu", {}, {{7, 13}}, {}},
      {"exp", {}, {{7, 13}}, {}},
      {"sqrt", {}, {{7, 13}}, {{0, positive}}},
      {"erf", {}, {{7, 13}}, {}},
      {"identity", {}, {{7, 13}}, {}},
      {"dropout", {}, {{7, 13}}, {}},
      {"relu", {}, {{3, 1031}}, {}},
      {"ewadd", {}, {{7, 13}, {7, 13}}, {}},
      {"ewsub", {}, {{7, 13}, {7, 13}}, {}},
      {"ewmul", {}, {{7, 13}, {7, 13}}, {}},
      {"ewdiv", {}, {{7, 13}, {7, 13}}, {{1, positive}}},
      {"scalar_mul", {}, {{7, 13}, {}}, {}},
      {"scalar_add", {}, {{3, 301}, {}}, {}},
      {"softmax", {}, {{5, 7}}, {}},
      {"softmax", {}, {{2, 3, 301}}, {}},
      {"layer_norm", {}, {{3, 5, 7}, {7}, {7}}, {}},
      {"layer_norm", {}, {{5, 301}, {301}, {301}}, {}},
      {"batchnorm", {}, {{3, 5, 7, 9}, {5}, {5}, {5}, {5}}, {{4, positive}}},
      {"batchnorm", {}, {{2, 3, 17, 19}, {3}, {3}, {3}, {3}}, {{4, positive}}},
      {"conv2d", conv, {{2, 3, 7, 9}, {5, 3, 3, 3}}, {}},
      {"conv2d", with(with(with(conv, "act", 1), "stride_h", 2), "pad_w", 0), {{3, 3, 7, 5}, {4, 3, 3, 2}}, {}},
      {"conv2d", with(conv, "act", 3), {{1, 2, 5, 5}, {3, 2, 3, 3}}, {}},
      {"conv2d_grouped", with(with(conv, "groups", 2), "act", 2), {{2, 4, 7, 5}, {6, 2, 3, 3}}, {}},
      {"conv2d_depthwise", with(with(conv, "stride_w", 2), "act", 0), {{2, 3, 7, 7}, {3, 1, 3, 3}}, {}},
      {"pool2d_max", {{"kh", 3}, {"kw", 3}, {"stride", 2}, {"pad", 1}}, {{2, 3, 7, 9}}, {}},
      {"pool2d_avg", {{"kh", 3}, {"kw", 2}, {"stride", 1}, {"pad", 1}}, {{2, 3, 5, 7}}, {}},
      {"global_avg_pool", {}, {{2, 3, 5, 7}}, {}},
      {"embedding", {}, {{7}, {11, 5}}, {}, {{0, 11}}},
      // A piece of a table split by rows: ids of other rows (and one past the table) read zeros.
      on_pieces({"embedding", {}, {{7}, {5, 3}}, {}, {{0, 14}}}, {{0}, {4, 0}}, {{7}, {13, 3}}),
      {"embedding_bag", {}, {{5, 3}, {11, 7}}, {}, {{0, 11}}},
      // Many repeated ids: the backward's scatter-add collides.
      {"embedding_bag", {}, {{37, 4}, {5, 33}}, {}, {{0, 6}}},
      on_pieces({"embedding_bag", {}, {{5, 3}, {6, 5}}, {}, {{0, 13}}}, {{0, 0}, {3, 0}}, {{5, 3}, {13, 5}}),
      {"gather_rows", {}, {{2, 3}, {7, 4}}, {}, {{0, 8}}},
      {"gather_rows", {}, {{5}, {6, 2, 3}}, {}, {{0, 6}}},
      on_pieces({"gather_rows", {}, {{3, 5}, {4, 3}}, {}, {{0, 12}}}, {{0, 0}, {5, 0}}, {{3, 5}, {11, 3}}),
      {"concat", {{"axis", 1}}, {{2, 3, 5}, {2, 4, 5}}, {}},
      {"concat", {{"axis", 0}}, {{3, 7}, {2, 7}}, {}},
      {"concat", {{"axis", 2}}, {{3, 2, 5}, {3, 2, 1}}, {}},
      {"split", {{"axis", 1}, {"at", 2}}, {{3, 5, 7}}, {}},
      {"split", {{"axis", 0}, {"at", 1}}, {{3, 5}}, {}},
      {"split", {{"axis", 2}, {"at", 3}}, {{2, 3, 5}}, {}},
      {"slice_axis", {{"axis", 1}, {"start", 1}, {"size", 2}}, {{3, 5, 7}}, {}},
      {"slice_axis", {{"axis", 1}, {"start", 0}, {"size", 1}}, {{2, 9, 5}}, {}},
      {"slice_axis", {{"axis", 0}, {"start", 2}, {"size", 3}}, {{6, 4}}, {}},
      {"slice_axis", {{"axis", 2}, {"start", 4}, {"size", 1}}, {{2, 3, 5}}, {}},
      {"slice_axis", {{"axis", 3}, {"start", 2}, {"size", 3}}, {{2, 2, 3, 7}}, {}},
      {"slice_axis", {{"axis", 1}, {"start", 3}, {"size", 300}}, {{2, 303, 3}}, {}},
      // Reshapes keep the values and take their dims from the spec's inference.
      {"reshape", {{"rows", 6}, {"cols", 4}}, {{4, 6}}, {}},
      {"reshape_4d", {{"rows", 2}, {"cols", 48}}, {{2, 3, 4, 4}}, {}},
      {"flatten", {}, {{2, 3, 4, 4}}, {}},
      {"merge_axes", {{"axis", 1}}, {{2, 3, 4, 5}}, {}},
      {"split_axis", {{"axis", 1}, {"parts", 2}}, {{2, 4, 3}}, {}},
      {"squeeze_axis", {{"axis", 1}}, {{3, 1, 4}}, {}},
      {"unsqueeze_axis", {{"axis", 1}}, {{3, 4}}, {}},
      {"swap_axes", {{"axis", 1}}, {{2, 3, 5, 7}}, {}},
      {"swap_axes", {{"axis", 0}}, {{3, 5}}, {}},
      {"swap_axes", {{"axis", 2}}, {{2, 3, 5, 3}}, {}},
      {"transpose", {}, {{3, 5, 7}}, {}},
      {"transpose", {}, {{5, 9}}, {}},
      {"transpose", {}, {{2, 3, 33, 65}}, {}},
      {"lstm_cell", {}, {{3, 5}, {3, 7}, {3, 7}, {5, 28}, {7, 28}, {28}}, {}},
      {"lstm_cell", {}, {{1, 1}, {1, 3}, {1, 3}, {1, 12}, {3, 12}, {12}}, {}},
      {"lstm_cell", {}, {{9, 17}, {9, 65}, {9, 65}, {17, 260}, {65, 260}, {260}}, {}},
      {"attention_scores", {}, {{2, 3, 5}, {2, 7, 5}}, {}},
      {"attention_scores", {}, {{3, 2}, {4, 2}}, {}},
      {"attention_scores", {}, {{2, 3, 5, 9}, {2, 3, 7, 9}}, {}},
      // A piece of the head width: the scale is that of the logical width 11.
      on_pieces({"attention_scores", {}, {{2, 3, 4}, {2, 5, 4}}, {}}, {{0, 0, 4}, {0, 0, 4}}, {{2, 3, 11}, {2, 5, 11}}),
      {"causal_mask", {}, {{2, 5, 5}}, {}},
      // Pieces off the diagonal: the mask compares logical rows and columns.
      on_pieces({"causal_mask", {}, {{2, 3, 5}}, {}}, {{0, 2, 1}}, {{2, 7, 7}}),
      on_pieces({"causal_mask", {}, {{3, 4}}, {}}, {{2, 1}}, {{9, 9}}),
      {"head_proj", {}, {{2, 3, 5}, {3, 5, 7}, {3, 7}}, {}},
      {"head_proj", {}, {{5, 17}, {2, 17, 3}, {2, 3}}, {}},
      {"head_proj_nobias", {}, {{2, 2, 3, 5}, {3, 5, 2}}, {}},
      {"head_merge", {}, {{2, 3, 5, 7}, {3, 7, 9}, {9}}, {}},
      {"head_merge", {}, {{3, 5, 2}, {3, 2, 4}, {4}}, {}},
      {"add_relative_bias", {}, {{2, 3, 5, 7}, {5, 7, 3}}, {}},
      {"add_relative_bias", {}, {{3, 4, 5}, {4, 5, 3}}, {}},
      // The zoo's model operators.
      {"dot_attention", {}, {{3, 5}, {3, 7, 5}}, {}},
      {"dot_attention", {}, {{1, 1}, {1, 1, 1}}, {}},
      {"dot_attention", {}, {{2, 33}, {2, 301, 33}}, {}},
      {"window_partition", {{"ws", 2}}, {{2, 4, 6, 3}}, {}},
      {"window_partition", {{"ws", 3}}, {{1, 6, 9, 5}}, {}},
      {"window_partition", {{"ws", 7}}, {{2, 14, 21, 33}}, {}},
      {"window_reverse", {{"ws", 2}, {"height", 4}, {"width", 6}}, {{12, 4, 3}}, {}},
      {"window_reverse", {{"ws", 3}, {"height", 6}, {"width", 3}}, {{4, 9, 5}}, {}},
      {"cyclic_shift", {{"sh", 1}, {"sw", 2}}, {{2, 4, 5, 3}}, {}},
      {"cyclic_shift", {{"sh", 0}, {"sw", 0}}, {{1, 3, 3, 2}}, {}},
      {"cyclic_shift", {{"sh", 2}, {"sw", 0}}, {{2, 5, 4, 3}}, {}},
      {"cyclic_shift", {{"sh", 3}, {"sw", 3}}, {{2, 14, 14, 37}}, {}},
      {"add_window_mask", {}, {{6, 2, 4, 4}, {3, 4, 4}}, {}},
      {"add_window_mask", {}, {{8, 3, 5, 7}, {2, 5, 7}}, {}},
      {"add_window_mask", {}, {{12, 5, 16, 16}, {4, 16, 16}}, {}},
      // Rows 5 .. 7 of 8: logical row 5 takes window 1 of 4.
      on_pieces({"add_window_mask", {}, {{3, 2, 3, 4}, {4, 3, 4}}, {}}, {{5, 0, 0, 0}, {0, 0, 0}}, {{8, 2, 3, 4}, {4, 3, 4}}),
      {"add_pair_bias", {}, {{2, 3, 4, 5, 6}, {2, 5, 6, 4}}, {}},
      {"add_pair_bias", {}, {{1, 7, 3, 9, 11}, {1, 9, 11, 3}}, {}},
      {"add_pair_bias", {}, {{2, 5, 4, 17, 17}, {2, 17, 17, 4}}, {}},
      {"outer_product_mean", {}, {{2, 5, 3, 4}, {2, 5, 6, 2}}, {}},
      {"outer_product_mean", {}, {{7, 3, 2}, {7, 4, 3}}, {}},
      {"outer_product_mean", {}, {{2, 3, 4, 5, 2}, {2, 3, 4, 3, 3}}, {}},
      // Sequences 2 .. 4 of 5: partial sums of the mean over all five.
      on_pieces({"outer_product_mean", {}, {{2, 3, 4, 2}, {2, 3, 3, 3}}, {}}, {{0, 2, 0, 0}, {0, 2, 0, 0}}, {{2, 5, 4, 2}, {2, 5, 3, 3}}),
      {"triangle_mult_out", {}, {{2, 5, 5, 3}, {2, 5, 5, 3}}, {}},
      {"triangle_mult_out", {}, {{6, 6, 4}, {6, 6, 4}}, {}},
      {"triangle_mult_out", {}, {{2, 2, 9, 9, 3}, {2, 2, 9, 9, 3}}, {}},
      {"triangle_mult_in", {}, {{2, 5, 5, 3}, {2, 5, 5, 3}}, {}},
      {"triangle_mult_in", {}, {{6, 6, 4}, {6, 6, 4}}, {}},
      {"triangle_mult_in", {}, {{2, 2, 9, 9, 3}, {2, 2, 9, 9, 3}}, {}},
      // Windows 4 .. 7 of 8: the second image.
      on_pieces({"window_reverse", {{"ws", 2}, {"height", 4}, {"width", 4}}, {{4, 4, 3}}, {}}, {{4, 0, 0}}, {{8, 4, 3}}),
      // Rows 2 .. 4 of 5 of the output: a piece of a's rows (b's for the incoming edges), the
      // other input whole.
      on_pieces({"triangle_mult_out", {}, {{2, 3, 5, 3}, {2, 5, 5, 3}}, {}}, {{0, 2, 0, 0}, {0, 0, 0, 0}}, {{2, 5, 5, 3}, {2, 5, 5, 3}}),
      on_pieces({"triangle_mult_in", {}, {{2, 5, 3, 3}, {2, 5, 5, 3}}, {}}, {{0, 0, 2, 0}, {0, 0, 0, 0}}, {{2, 5, 5, 3}, {2, 5, 5, 3}}),
  };
  return all;
}

// Runs the CUDA kernel and the reference kernel on the same random values (rounded to T) and
// returns the worst relative difference over the outputs and the input gradients.
template <class T>
double worst_difference(const CudaCase& c) {
  const Kernel<T>* ref = builtin_kernels().find<T>(c.op, Backend::Cpu);
  EXPECT_NE(ref, nullptr) << c.op << " has no CPU kernel";
  const Kernel<T>* gpu = cuda_registry().find<T>(c.op, Backend::Cuda);
  EXPECT_NE(gpu, nullptr);
  if (!ref || !gpu) return HUGE_VAL;
  std::mt19937_64 rng(7);
  std::vector<Tensor<T>> inputs;
  for (std::size_t i = 0; i < c.inputs.size(); ++i) {
    if (const auto ids = c.ids.find(i); ids != c.ids.end()) {
      Tensor<T> t(c.inputs[i]);
      for (T& v : t.data) v = static_cast<T>(rng() % static_cast<std::uint64_t>(ids->second));
      inputs.push_back(std::move(t));
      continue;
    }
    const auto range = c.ranges.count(i) ? c.ranges.at(i) : std::pair<double, double>{-1, 1};
    inputs.push_back(convert<T>(uniform_tensor(c.inputs[i], rng, range.first, range.second)));
  }
  const OpCall<T> call{c.op,
                       c.attrs,
                       pointers(inputs),
                       c.regions,
                       c.logical_dims,
                       {},
                       c.regions.empty() ? spec_output_dims(c.op, c.attrs, c.inputs) : std::vector<std::vector<std::int64_t>>{}};
  const auto expected = ref->forward(call);
  const auto actual = gpu->forward(call);
  EXPECT_EQ(actual.size(), expected.size());
  double worst = 0;
  for (std::size_t i = 0; i < actual.size() && i < expected.size(); ++i) {
    worst = std::max(worst, relative_error(actual[i], convert<double>(expected[i])));
    EXPECT_TRUE(same_infinities(actual[i], expected[i])) << "output " << i;
  }

  std::vector<Tensor<T>> output_grads;
  for (const auto& o : expected) output_grads.push_back(convert<T>(uniform_tensor(o.dims, rng)));
  const std::vector<bool> wanted(inputs.size(), true);
  const auto expected_grads = ref->backward({call, pointers(expected), pointers(output_grads), wanted});
  const auto actual_grads = gpu->backward({call, pointers(expected), pointers(output_grads), wanted});
  EXPECT_EQ(actual_grads.size(), expected_grads.size());
  for (std::size_t i = 0; i < actual_grads.size() && i < expected_grads.size(); ++i)
    worst = std::max(worst, relative_error(actual_grads[i], convert<double>(expected_grads[i])));
  return worst;
}

class CudaKernel : public ::testing::TestWithParam<CudaCase> {
 protected:
  void SetUp() override {
    if (const auto reason = cuda_unavailable_reason()) GTEST_SKIP() << *reason;
  }
};

TEST_P(CudaKernel, AgreesWithTheCpuKernelInDouble) { EXPECT_LT(worst_difference<double>(GetParam()), 1e-9); }

TEST_P(CudaKernel, AgreesWithTheCpuKernelInFloat) { EXPECT_LT(worst_difference<float>(GetParam()), 1e-4); }

INSTANTIATE_TEST_SUITE_P(EveryKernel, CudaKernel, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<CudaCase>& info) { return info.param.op + "_" + std::to_string(info.index); });

// Only the gradients asked for are computed; the others may come back empty.
TEST(CudaKernels, ComputesOnlyTheWantedGradients) {
  if (const auto reason = cuda_unavailable_reason()) GTEST_SKIP() << *reason;
  std::mt19937_64 rng(3);
  const std::vector<Tensor<double>> inputs{uniform_tensor({5, 3}, rng), uniform_tensor({3, 4}, rng), uniform_tensor({4}, rng)};
  const OpCall<double> call{"linear", {}, pointers(inputs), {}, {}, {}, {}};
  const Kernel<double>* gpu = cuda_registry().find<double>("linear", Backend::Cuda);
  const Kernel<double>* cpu = builtin_kernels().find<double>("linear", Backend::Cpu);
  ASSERT_NE(gpu, nullptr);
  const auto out = cpu->forward(call);
  const std::vector<Tensor<double>> dy{uniform_tensor({5, 4}, rng)};
  const auto expected = cpu->backward({call, pointers(out), pointers(dy), {false, true, false}});
  const auto actual = gpu->backward({call, pointers(out), pointers(dy), {false, true, false}});
  ASSERT_EQ(actual.size(), 3u);
  EXPECT_TRUE(actual[0].data.empty());
  EXPECT_LT(relative_error(actual[1], expected[1]), 1e-9);
  EXPECT_TRUE(actual[2].data.empty());
}

// The same for the kernels whose device functions take a null pointer for an unwanted gradient.
TEST(CudaKernels, SkipsTheUnwantedGradientsOfMultiInputKernels) {
  if (const auto reason = cuda_unavailable_reason()) GTEST_SKIP() << *reason;
  struct Partial {
    CudaCase c;
    std::vector<bool> wanted;
  };
  const std::vector<Partial> partials = {
      {{"lstm_cell", {}, {{3, 5}, {3, 7}, {3, 7}, {5, 28}, {7, 28}, {28}}, {}}, {false, true, false, true, false, false}},
      {{"lstm_cell", {}, {{3, 5}, {3, 7}, {3, 7}, {5, 28}, {7, 28}, {28}}, {}}, {true, false, true, false, true, true}},
      {{"attention_scores", {}, {{2, 3, 5}, {2, 7, 5}}, {}}, {false, true}},
      {{"head_proj", {}, {{2, 3, 5}, {3, 5, 7}, {3, 7}}, {}}, {true, false, true}},
      {{"head_proj", {}, {{2, 3, 5}, {3, 5, 7}, {3, 7}}, {}}, {false, true, false}},
      {{"head_merge", {}, {{2, 3, 5, 7}, {3, 7, 9}, {9}}, {}}, {false, true, false}},
      {{"head_merge", {}, {{2, 3, 5, 7}, {3, 7, 9}, {9}}, {}}, {true, false, true}},
  };
  for (const Partial& p : partials) {
    std::mt19937_64 rng(5);
    std::vector<Tensor<double>> inputs;
    for (const auto& dims : p.c.inputs) inputs.push_back(uniform_tensor(dims, rng));
    const OpCall<double> call{p.c.op, {}, pointers(inputs), {}, {}, {}, {}};
    const Kernel<double>* cpu = builtin_kernels().find<double>(p.c.op, Backend::Cpu);
    const Kernel<double>* gpu = cuda_registry().find<double>(p.c.op, Backend::Cuda);
    ASSERT_NE(gpu, nullptr) << p.c;
    const auto out = cpu->forward(call);
    std::vector<Tensor<double>> dy;
    for (const auto& o : out) dy.push_back(uniform_tensor(o.dims, rng));
    const auto expected = cpu->backward({call, pointers(out), pointers(dy), p.wanted});
    const auto actual = gpu->backward({call, pointers(out), pointers(dy), p.wanted});
    ASSERT_EQ(actual.size(), inputs.size()) << p.c;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      if (p.wanted[i])
        EXPECT_LT(relative_error(actual[i], expected[i]), 1e-9) << p.c << " gradient " << i;
      else
        EXPECT_TRUE(actual[i].data.empty()) << p.c << " gradient " << i;
    }
  }
}

// slice_axis on a piece of another axis (BERT's batch split): the window of the piece, whatever
// its offset; on a piece of the sliced axis: a LoomError naming the op, before any device work.
TEST(CudaKernels, SlicesPiecesOfOtherAxesAndRefusesPiecesOfTheSlicedAxis) {
  const pcg::AttrMap attrs{{"axis", 1}, {"start", 1}, {"size", 2}};
  std::mt19937_64 rng(11);
  const std::vector<Tensor<double>> piece{uniform_tensor({2, 5, 3}, rng)};
  const Kernel<double>* gpu = cuda_registry().find<double>("slice_axis", Backend::Cuda);
  ASSERT_NE(gpu, nullptr);
  const OpCall<double> of_axis{"slice_axis", attrs, pointers(piece), {pcg::Region{{0, 5, 0}, {2, 10, 3}}}, {{2, 10, 3}}, {}, {}};
  try {
    gpu->forward(of_axis);
    ADD_FAILURE() << "a piece of the sliced axis was accepted";
  } catch (const LoomError& e) {
    EXPECT_NE(std::string(e.what()).find("slice_axis"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("dimension 1"), std::string::npos) << e.what();
  }

  if (const auto reason = cuda_unavailable_reason()) GTEST_SKIP() << *reason;
  const OpCall<double> of_batch{"slice_axis", attrs, pointers(piece), {pcg::Region{{2, 0, 0}, {4, 5, 3}}}, {{6, 5, 3}}, {}, {}};
  const Kernel<double> reference = interpreter_kernel<double>(bundled_library(), "slice_axis", attrs, {{2, 5, 3}}, {}, false);
  const OpCall<double> whole{"slice_axis", attrs, pointers(piece), {}, {}, {}, {}};
  const auto expected = reference.forward(whole);
  const auto actual = gpu->forward(of_batch);
  ASSERT_EQ(actual.size(), 1u);
  EXPECT_LT(relative_error(actual[0], expected[0]), 1e-12);
  const std::vector<Tensor<double>> dy{uniform_tensor({2, 2, 3}, rng)};
  const auto expected_dx = reference.backward({whole, pointers(expected), pointers(dy), {true}});
  const auto actual_dx = gpu->backward({of_batch, pointers(actual), pointers(dy), {true}});
  ASSERT_EQ(actual_dx.size(), 1u);
  EXPECT_LT(relative_error(actual_dx[0], expected_dx[0]), 1e-12);
}

// Registration needs no device: these run everywhere.
TEST(CudaKernels, EveryRegisteredKernelIsTested) {
  std::set<std::string> tested;
  for (const auto& c : cases()) tested.insert(c.op);
  const auto ops = cuda_registry().ops(Backend::Cuda);
  EXPECT_FALSE(ops.empty());
  for (const auto& op : ops) EXPECT_TRUE(tested.count(op)) << op << " has a CUDA kernel but no test case";
}

TEST(CudaKernels, TheCudaBackendRunsEveryOperatorOfTheKernelTable) {
  EXPECT_EQ(cuda_registry().ops(Backend::Cuda), builtin_kernels().ops(Backend::Cpu));
}

TEST(CudaKernels, EveryKernelHasACpuCounterpartInBothPrecisions) {
  for (const auto& op : cuda_registry().ops(Backend::Cuda)) {
    EXPECT_NE(builtin_kernels().find<double>(op, Backend::Cpu), nullptr) << op;
    EXPECT_NE(cuda_registry().find<float>(op, Backend::Cuda), nullptr) << op;
    EXPECT_EQ(cuda_registry().find<float>(op, Backend::Cpu), nullptr) << op << " is registered for the CPU by the CUDA backend";
  }
}

}  // namespace
}  // namespace loom::runtime
