// Every native kernel against the interpreter: forward values, and backward against the gradient
// derived from the operator's comprehension, in double (1e-9) and float (1e-4).
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include "loom/runtime/interpreter_kernel.hpp"
#include "loom/runtime/kernel_registry.hpp"
#include "runtime_test_support.hpp"

namespace loom::runtime {
namespace {

using testing::bundled_library;
using testing::relative_error;
using testing::same_infinities;
using testing::uniform_tensor;

struct KernelCase {
  std::string op;
  pcg::AttrMap attrs;
  std::vector<std::vector<std::int64_t>> inputs;
  std::map<std::size_t, std::pair<double, double>> ranges;  // input -> value range, default [-1, 1]
  std::map<std::size_t, std::int64_t> ids;                  // input -> table rows (integer ids)
};

std::ostream& operator<<(std::ostream& os, const KernelCase& c) {
  os << c.op;
  for (const auto& [k, v] : c.attrs) os << " " << k << "=" << v;
  return os;
}

const std::vector<KernelCase>& cases() {
  const std::pair<double, double> positive{0.5, 1.5};
  const pcg::AttrMap conv{{"stride_h", 1}, {"stride_w", 1}, {"pad_h", 1}, {"pad_w", 1}, {"act", 0}};
  auto with = [](pcg::AttrMap a, const std::string& k, std::int64_t v) {
    a[k] = v;
    return a;
  };
  static const std::vector<KernelCase> all = {
      {"matmul", {}, {{3, 4}, {4, 5}}, {}, {}},
      {"matmul_relu", {}, {{3, 4}, {4, 5}}, {}, {}},
      {"linear", {}, {{2, 3, 4}, {4, 5}, {5}}, {}, {}},
      {"linear_nobias", {}, {{6, 4}, {4, 3}}, {}, {}},
      {"batch_matmul", {}, {{2, 3, 4}, {2, 4, 5}}, {}, {}},
      {"bias_add", {}, {{3, 4}, {4}}, {}, {}},
      {"transpose", {}, {{2, 3, 4}}, {}, {}},
      {"relu", {}, {{3, 4}}, {}, {}},
      {"sigmoid", {}, {{3, 4}}, {}, {}},
      {"tanh", {}, {{3, 4}}, {}, {}},
      {"gelu", {}, {{3, 4}}, {}, {}},
      {"exp", {}, {{3, 4}}, {}, {}},
      {"sqrt", {}, {{3, 4}}, {{0, positive}}, {}},
      {"erf", {}, {{3, 4}}, {}, {}},
      {"identity", {}, {{3, 4}}, {}, {}},
      {"dropout", {}, {{3, 4}}, {}, {}},
      {"ewadd", {}, {{3, 4}, {3, 4}}, {}, {}},
      {"ewsub", {}, {{3, 4}, {3, 4}}, {}, {}},
      {"ewmul", {}, {{3, 4}, {3, 4}}, {}, {}},
      {"ewdiv", {}, {{3, 4}, {3, 4}}, {{1, positive}}, {}},
      {"scalar_mul", {}, {{3, 4}, {}}, {}, {}},
      {"scalar_add", {}, {{3, 4}, {}}, {}, {}},
      {"softmax", {}, {{3, 5}}, {}, {}},
      {"layer_norm", {}, {{2, 3, 5}, {5}, {5}}, {}, {}},
      {"batchnorm", {}, {{2, 3, 4, 4}, {3}, {3}, {3}, {3}}, {{4, positive}}, {}},
      {"conv2d", conv, {{2, 3, 5, 5}, {4, 3, 3, 3}}, {}, {}},
      {"conv2d", with(with(with(conv, "act", 1), "stride_h", 2), "pad_w", 0), {{2, 3, 6, 5}, {4, 3, 3, 2}}, {}, {}},
      {"conv2d", with(conv, "act", 3), {{1, 2, 4, 4}, {3, 2, 3, 3}}, {}, {}},
      {"conv2d_grouped", with(with(conv, "groups", 2), "act", 2), {{2, 4, 5, 5}, {6, 2, 3, 3}}, {}, {}},
      {"conv2d_depthwise", with(with(conv, "stride_w", 2), "act", 0), {{2, 3, 5, 5}, {3, 1, 3, 3}}, {}, {}},
      {"pool2d_max", {{"kh", 3}, {"kw", 3}, {"stride", 2}, {"pad", 1}}, {{2, 3, 6, 6}}, {}, {}},
      {"pool2d_avg", {{"kh", 3}, {"kw", 2}, {"stride", 1}, {"pad", 1}}, {{2, 3, 5, 5}}, {}, {}},
      {"global_avg_pool", {}, {{2, 3, 4, 5}}, {}, {}},
      {"embedding", {}, {{5}, {7, 4}}, {}, {{0, 7}}},
      {"embedding_bag", {}, {{3, 2}, {7, 4}}, {}, {{0, 7}}},
      {"concat", {{"axis", 1}}, {{2, 3, 4}, {2, 2, 4}}, {}, {}},
      {"concat", {{"axis", 0}}, {{2, 3}, {4, 3}}, {}, {}},
      {"split", {{"axis", 1}, {"at", 2}}, {{2, 5, 3}}, {}, {}},
      {"reshape", {{"rows", 6}, {"cols", 4}}, {{4, 6}}, {}, {}},
      {"reshape_4d", {{"rows", 2}, {"cols", 48}}, {{2, 3, 4, 4}}, {}, {}},
      {"flatten", {}, {{2, 3, 4, 4}}, {}, {}},
      {"swap_axes", {{"axis", 1}}, {{2, 3, 4, 5}}, {}, {}},
      {"merge_axes", {{"axis", 1}}, {{2, 3, 4, 5}}, {}, {}},
      {"split_axis", {{"axis", 1}, {"parts", 2}}, {{2, 4, 3}}, {}, {}},
      {"squeeze_axis", {{"axis", 1}}, {{3, 1, 4}}, {}, {}},
      {"unsqueeze_axis", {{"axis", 1}}, {{3, 4}}, {}, {}},
      {"lstm_cell", {}, {{2, 3}, {2, 4}, {2, 4}, {3, 16}, {4, 16}, {16}}, {}, {}},
      {"attention_scores", {}, {{2, 3, 4}, {2, 5, 4}}, {}, {}},
      {"attention_scores", {}, {{3, 2}, {4, 2}}, {}, {}},
      {"causal_mask", {}, {{2, 4, 4}}, {}, {}},
      {"gather_rows", {}, {{2, 3}, {7, 4}}, {}, {{0, 8}}},
      {"gather_rows", {}, {{5}, {6, 2, 3}}, {}, {{0, 6}}},
      {"head_proj", {}, {{2, 3, 4}, {2, 4, 5}, {2, 5}}, {}, {}},
      {"head_proj_nobias", {}, {{2, 2, 3, 4}, {3, 4, 2}}, {}, {}},
      {"head_merge", {}, {{2, 3, 4, 5}, {3, 5, 6}, {6}}, {}, {}},
      {"add_relative_bias", {}, {{2, 3, 4, 5}, {4, 5, 3}}, {}, {}},
  };
  return all;
}

std::vector<Tensor<double>> inputs_for(const KernelCase& c, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Tensor<double>> inputs;
  for (std::size_t i = 0; i < c.inputs.size(); ++i) {
    if (auto ids = c.ids.find(i); ids != c.ids.end()) {
      Tensor<double> t(c.inputs[i]);
      for (double& v : t.data) v = static_cast<double>(rng() % static_cast<std::uint64_t>(ids->second));
      inputs.push_back(std::move(t));
      continue;
    }
    auto range = c.ranges.count(i) ? c.ranges.at(i) : std::pair<double, double>{-1, 1};
    inputs.push_back(uniform_tensor(c.inputs[i], rng, range.first, range.second));
  }
  return inputs;
}

// Runs the native kernel and the interpreter fallback on the same values (rounded to T) and
// returns the worst relative difference of outputs and of input gradients.
template <class T>
double worst_difference(const KernelCase& c) {
  const Kernel<T>* native = builtin_kernels().find<T>(c.op, Backend::Cpu);
  EXPECT_NE(native, nullptr);
  if (!native) return HUGE_VAL;
  const Kernel<double> reference = interpreter_kernel<double>(bundled_library(), c.op, c.attrs, c.inputs);
  std::vector<Tensor<T>> inputs;
  for (const auto& t : inputs_for(c, 7)) inputs.push_back(convert<T>(t));
  std::vector<Tensor<double>> inputs_d;
  for (const auto& t : inputs) inputs_d.push_back(convert<double>(t));

  const OpCall<T> call{c.op, c.attrs, pointers(inputs), {}, {}, {}};
  const OpCall<double> call_d{c.op, c.attrs, pointers(inputs_d), {}, {}, {}};
  const auto out = native->forward(call);
  const auto out_d = reference.forward(call_d);
  EXPECT_EQ(out.size(), out_d.size());
  double worst = 0;
  for (std::size_t i = 0; i < out.size() && i < out_d.size(); ++i) {
    worst = std::max(worst, relative_error(out[i], out_d[i]));
    EXPECT_TRUE(same_infinities(out[i], out_d[i])) << "output " << i;
  }

  std::mt19937_64 rng(11);
  std::vector<Tensor<T>> grads;
  std::vector<Tensor<double>> grads_d;
  for (const auto& o : out_d) {
    grads_d.push_back(uniform_tensor(o.dims, rng));
    grads.push_back(convert<T>(grads_d.back()));
    grads_d.back() = convert<double>(grads.back());
  }
  const std::vector<bool> wanted(inputs.size(), true);
  const auto in_grads = native->backward({call, pointers(out), pointers(grads), wanted});
  const auto in_grads_d = reference.backward({call_d, pointers(out_d), pointers(grads_d), wanted});
  EXPECT_EQ(in_grads.size(), inputs.size());
  for (std::size_t i = 0; i < in_grads.size() && i < in_grads_d.size(); ++i) {
    if (c.ids.count(i)) continue;  // ids take no gradient
    worst = std::max(worst, relative_error(in_grads[i], in_grads_d[i]));
  }
  return worst;
}

class NativeKernel : public ::testing::TestWithParam<KernelCase> {};

TEST_P(NativeKernel, AgreesWithTheInterpreterInDouble) { EXPECT_LT(worst_difference<double>(GetParam()), 1e-9); }

TEST_P(NativeKernel, AgreesWithTheInterpreterInFloat) { EXPECT_LT(worst_difference<float>(GetParam()), 1e-4); }

INSTANTIATE_TEST_SUITE_P(EveryKernel, NativeKernel, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<KernelCase>& info) {
                           return info.param.op + "_" + std::to_string(info.index);
                         });

TEST(NativeKernels, EveryRegisteredKernelIsTested) {
  std::set<std::string> tested;
  for (const auto& c : cases()) tested.insert(c.op);
  for (const std::string& op : builtin_kernels().ops(Backend::Cpu)) EXPECT_TRUE(tested.count(op)) << op << " has no test case";
  EXPECT_GE(builtin_kernels().ops(Backend::Cpu).size(), 40u);
}

TEST(NativeKernels, EveryKernelNamesAnOperatorOfTheLibrary) {
  for (const std::string& op : builtin_kernels().ops(Backend::Cpu)) EXPECT_NE(bundled_library().find_op(op), nullptr) << op;
}

}  // namespace
}  // namespace loom::runtime
