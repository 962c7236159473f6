// Every native kernel against the interpreter: forward values, and backward against the gradient
// derived from the operator's comprehension, in double (1e-9) and float (1e-4). Every operator of
// the model zoo has one; the zoo's kernels compute their piece of split rows or refuse the piece.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include "loom/interpreter/native_program.hpp"
#include "loom/models/registry.hpp"
#include "loom/pcg/diagnostic.hpp"
#include "loom/runtime/interpreter_kernel.hpp"
#include "loom/runtime/kernel_registry.hpp"
#include "runtime_test_support.hpp"

namespace loom::runtime {
namespace {

using testing::bundled_library;
using testing::relative_error;
using testing::same_infinities;
using testing::spec_output_dims;
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
      {"bias_add_axis", {{"axis", 1}}, {{2, 3, 4, 5}, {3}}, {}, {}},
      {"bias_add_axis", {{"axis", 0}}, {{3, 4}, {3}}, {}, {}},
      {"bias_add_axis", {{"axis", 2}}, {{2, 3, 4}, {4}}, {}, {}},
      {"slice_axis", {{"axis", 1}, {"start", 1}, {"size", 2}}, {{2, 4, 3}}, {}, {}},
      {"slice_axis", {{"axis", 0}, {"start", 2}, {"size", 3}}, {{5, 2}}, {}, {}},
      {"dot_attention", {}, {{2, 4}, {2, 5, 4}}, {}, {}},
      {"dot_attention", {}, {{3, 2}, {3, 1, 2}}, {}, {}},
      {"window_partition", {{"ws", 2}}, {{2, 4, 6, 3}}, {}, {}},
      {"window_reverse", {{"ws", 2}, {"height", 4}, {"width", 6}}, {{12, 4, 3}}, {}, {}},
      {"cyclic_shift", {{"sh", 1}, {"sw", 2}}, {{2, 3, 4, 2}}, {}, {}},
      {"cyclic_shift", {{"sh", 2}, {"sw", 0}}, {{1, 4, 3, 2}}, {}, {}},
      {"add_window_mask", {}, {{6, 2, 3, 3}, {3, 3, 3}}, {}, {}},
      {"add_pair_bias", {}, {{2, 3, 2, 4, 5}, {2, 4, 5, 2}}, {}, {}},
      {"outer_product_mean", {}, {{2, 3, 4, 2}, {2, 3, 5, 3}}, {}, {}},
      {"outer_product_mean", {}, {{3, 4, 2}, {3, 2, 3}}, {}, {}},
      {"triangle_mult_out", {}, {{2, 4, 4, 3}, {2, 4, 4, 3}}, {}, {}},
      {"triangle_mult_out", {}, {{3, 3, 2}, {3, 3, 2}}, {}, {}},
      {"triangle_mult_in", {}, {{2, 4, 4, 3}, {2, 4, 4, 3}}, {}, {}},
      {"triangle_mult_in", {}, {{3, 3, 2}, {3, 3, 2}}, {}, {}},
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

// Runs `kernel` and the interpreter on the same values (rounded to T) and returns the worst
// relative difference of outputs and of input gradients.
template <class T>
double worst_difference(const KernelCase& c, const Kernel<T>* kernel) {
  const Kernel<T>* native = kernel;
  EXPECT_NE(native, nullptr);
  if (!native) return HUGE_VAL;
  const Kernel<double> reference = interpreter_kernel<double>(bundled_library(), c.op, c.attrs, c.inputs, {}, false);
  std::vector<Tensor<T>> inputs;
  for (const auto& t : inputs_for(c, 7)) inputs.push_back(convert<T>(t));
  std::vector<Tensor<double>> inputs_d;
  for (const auto& t : inputs) inputs_d.push_back(convert<double>(t));

  const OpCall<T> call{c.op, c.attrs, pointers(inputs), {}, {}, {}, spec_output_dims(c.op, c.attrs, c.inputs)};
  const OpCall<double> call_d{c.op, c.attrs, pointers(inputs_d), {}, {}, {}, call.output_dims};
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

template <class T>
double native_difference(const KernelCase& c) {
  return worst_difference<T>(c, builtin_kernels().find<T>(c.op, Backend::Cpu));
}

// The same operator compiled from its spec, as it runs where no kernel is written for it.
template <class T>
double compiled_difference(const KernelCase& c) {
  const Kernel<T> compiled = interpreter_kernel<T>(bundled_library(), c.op, c.attrs, c.inputs);
  EXPECT_EQ(compiled.route, KernelRoute::Compiled) << spec::NativeToolchain::from_environment().why_none;
  return worst_difference<T>(c, &compiled);
}

TEST_P(NativeKernel, AgreesWithTheInterpreterInDouble) { EXPECT_LT(native_difference<double>(GetParam()), 1e-9); }

TEST_P(NativeKernel, AgreesWithTheInterpreterInFloat) { EXPECT_LT(native_difference<float>(GetParam()), 1e-4); }

TEST_P(NativeKernel, CompiledFromItsSpecAgreesWithTheInterpreterInDouble) { EXPECT_LT(compiled_difference<double>(GetParam()), 1e-9); }

TEST_P(NativeKernel, CompiledFromItsSpecAgreesWithTheInterpreterInFloat) { EXPECT_LT(compiled_difference<float>(GetParam()), 1e-4); }

INSTANTIATE_TEST_SUITE_P(EveryKernel, NativeKernel, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<KernelCase>& info) { return info.param.op + "_" + std::to_string(info.index); });

TEST(NativeKernels, EveryRegisteredKernelIsTested) {
  std::set<std::string> tested;
  for (const auto& c : cases()) tested.insert(c.op);
  for (const std::string& op : builtin_kernels().ops(Backend::Cpu)) EXPECT_TRUE(tested.count(op)) << op << " has no test case";
  EXPECT_GE(builtin_kernels().ops(Backend::Cpu).size(), 40u);
}

TEST(NativeKernels, EveryOperatorOfTheZooHasANativeKernel) {
  std::size_t operators = 0;
  for (const models::ModelInfo& model : models::model_zoo()) {
    const pcg::Graph graph = models::build_model(bundled_library(), model.name);
    for (const pcg::Node& n : graph.nodes()) {
      if (n.is_graph_input() || bundled_library().find_parallel(n.op) || bundled_library().find_fused(n.op)) continue;
      ++operators;
      EXPECT_NE(builtin_kernels().find<double>(n.op, Backend::Cpu), nullptr) << model.name << ": " << n.describe();
      EXPECT_NE(builtin_kernels().find<float>(n.op, Backend::Cpu), nullptr) << model.name << ": " << n.describe();
    }
  }
  EXPECT_GT(operators, 0u);
}

// Rows lo .. hi - 1 of dimension 0.
Tensor<double> rows_of(const Tensor<double>& t, std::int64_t lo, std::int64_t hi) {
  const std::size_t width = t.size() / static_cast<std::size_t>(t.dims.at(0));
  Tensor<double> out;
  out.dims = t.dims;
  out.dims[0] = hi - lo;
  out.data.assign(t.data.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(lo) * width),
                  t.data.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(hi) * width));
  return out;
}

pcg::Region rows_region(const std::vector<std::int64_t>& dims, std::int64_t lo, std::int64_t hi) {
  pcg::Region r = pcg::whole_region(dims);
  r.lo[0] = lo;
  r.hi[0] = hi;
  return r;
}

// Outputs and input gradients of one call.
struct CallResult {
  std::vector<Tensor<double>> outputs, input_grads;
};

// Runs the native double kernel of `op` with the inputs in `split` cut to rows lo .. hi - 1 of
// dimension 0 (the others whole) and the regions filled in; the output is rows lo .. hi - 1 of the
// logical output when `split_output`, else a partial sum of all of it. `output_grad` is the
// gradient of the whole output.
CallResult run_on_rows(const std::string& op, const pcg::AttrMap& attrs, const std::vector<Tensor<double>>& whole,
                       const std::set<std::size_t>& split, std::int64_t lo, std::int64_t hi, const Tensor<double>& output_grad,
                       bool split_output) {
  std::vector<Tensor<double>> pieces;
  OpCall<double> call{op, attrs, {}, {}, {}, {}, {}};
  for (std::size_t i = 0; i < whole.size(); ++i) {
    const bool cut = split.count(i) > 0;
    pieces.push_back(cut ? rows_of(whole[i], lo, hi) : whole[i]);
    call.regions.push_back(cut ? rows_region(whole[i].dims, lo, hi) : pcg::whole_region(whole[i].dims));
    call.logical_dims.push_back(whole[i].dims);
  }
  call.inputs = pointers(pieces);
  call.output_regions.push_back(split_output ? rows_region(output_grad.dims, lo, hi) : pcg::whole_region(output_grad.dims));
  call.output_dims.push_back(call.output_regions.back().extent());
  const Kernel<double>& native = *builtin_kernels().find<double>(op, Backend::Cpu);
  CallResult r;
  r.outputs = native.forward(call);
  const Tensor<double> grad = split_output ? rows_of(output_grad, lo, hi) : output_grad;
  r.input_grads = native.backward({call, pointers(r.outputs), {&grad}, std::vector<bool>(whole.size(), true)});
  return r;
}

// The rows of both halves, one after the other.
Tensor<double> stacked(const Tensor<double>& first, const Tensor<double>& second) {
  Tensor<double> out = first;
  out.dims[0] += second.dims[0];
  out.data.insert(out.data.end(), second.data.begin(), second.data.end());
  return out;
}

Tensor<double> summed(const Tensor<double>& first, const Tensor<double>& second) {
  Tensor<double> out = first;
  for (std::size_t k = 0; k < out.size(); ++k) out.data[k] += second.data.at(k);
  return out;
}

// The op on split rows, both halves assembled (stacked where split, summed where partial), equals
// the interpreter on whole values, forward and backward.
void expect_halves_assemble(const std::string& op, const pcg::AttrMap& attrs, const std::vector<std::vector<std::int64_t>>& dims,
                            const std::set<std::size_t>& split, std::int64_t at, bool split_output) {
  std::mt19937_64 rng(3);
  std::vector<Tensor<double>> whole;
  for (const auto& d : dims) whole.push_back(uniform_tensor(d, rng));
  const Kernel<double> reference = interpreter_kernel<double>(bundled_library(), op, attrs, dims, {}, false);
  const OpCall<double> call{op, attrs, pointers(whole), {}, {}, {}, spec_output_dims(op, attrs, dims)};
  const std::vector<Tensor<double>> want = reference.forward(call);
  const Tensor<double> output_grad = uniform_tensor(want.at(0).dims, rng);
  const std::vector<Tensor<double>> want_grads =
      reference.backward({call, pointers(want), {&output_grad}, std::vector<bool>(whole.size(), true)});

  const std::int64_t rows = dims.at(*split.begin()).at(0);
  const CallResult first = run_on_rows(op, attrs, whole, split, 0, at, output_grad, split_output);
  const CallResult second = run_on_rows(op, attrs, whole, split, at, rows, output_grad, split_output);
  const Tensor<double> output =
      split_output ? stacked(first.outputs.at(0), second.outputs.at(0)) : summed(first.outputs.at(0), second.outputs.at(0));
  EXPECT_LT(relative_error(output, want.at(0)), 1e-12) << op << " output";
  for (std::size_t i = 0; i < whole.size(); ++i) {
    const Tensor<double>& a = first.input_grads.at(i);
    const Tensor<double>& b = second.input_grads.at(i);
    EXPECT_LT(relative_error(split.count(i) ? stacked(a, b) : summed(a, b), want_grads.at(i)), 1e-12) << op << " gradient " << i;
  }
}

TEST(NativeKernels, ZooKernelsComputeTheirPieceOfSplitRows) {
  // Score rows at an offset pick their window's mask by logical row (3 + i) % 4, not i % 4.
  expect_halves_assemble("add_window_mask", {}, {{8, 2, 3, 3}, {4, 3, 3}}, {0}, 3, true);
  // A piece of the sequences gives a partial sum of the mean over all of them.
  expect_halves_assemble("outer_product_mean", {}, {{4, 2, 2}, {4, 3, 2}}, {0, 1}, 1, false);
  // Rows i of outgoing edges split the output's rows; rows k of incoming edges give partial sums.
  expect_halves_assemble("triangle_mult_out", {}, {{4, 4, 2}, {4, 4, 2}}, {0}, 2, true);
  expect_halves_assemble("triangle_mult_in", {}, {{4, 4, 2}, {4, 4, 2}}, {0, 1}, 2, false);
  expect_halves_assemble("dot_attention", {}, {{4, 3}, {4, 5, 3}}, {0, 1}, 1, true);
  expect_halves_assemble("bias_add_axis", {{"axis", 0}}, {{4, 3}, {4}}, {0, 1}, 2, true);
}

// Whether the native kernel refuses (with a LoomError naming the op) a call whose input `input`
// holds only the second half of dimension `dim`, the other inputs whole.
bool refuses_second_half(const std::string& op, const pcg::AttrMap& attrs, const std::vector<std::vector<std::int64_t>>& dims,
                         std::size_t input, std::size_t dim) {
  std::vector<Tensor<double>> pieces;
  OpCall<double> call{op, attrs, {}, {}, {}, {}, {}};
  for (std::size_t i = 0; i < dims.size(); ++i) {
    pcg::Region region = pcg::whole_region(dims[i]);
    std::vector<std::int64_t> piece = dims[i];
    if (i == input) {
      region.lo[dim] = dims[i][dim] / 2;
      piece[dim] -= region.lo[dim];
    }
    pieces.emplace_back(piece, 0.5);
    call.regions.push_back(region);
    call.logical_dims.push_back(dims[i]);
  }
  call.inputs = pointers(pieces);
  try {
    builtin_kernels().find<double>(op, Backend::Cpu)->forward(call);
  } catch (const LoomError& e) {
    EXPECT_NE(std::string(e.what()).find(op), std::string::npos) << e.what();
    return true;
  }
  return false;
}

TEST(NativeKernels, ZooKernelsRefusePiecesTheyCannotCompute) {
  EXPECT_TRUE(refuses_second_half("slice_axis", {{"axis", 1}, {"start", 1}, {"size", 2}}, {{2, 4, 3}}, 0, 1));
  EXPECT_TRUE(refuses_second_half("dot_attention", {}, {{2, 4}, {2, 6, 4}}, 1, 1));
  EXPECT_TRUE(refuses_second_half("dot_attention", {}, {{2, 4}, {2, 6, 4}}, 0, 1));
  EXPECT_TRUE(refuses_second_half("window_partition", {{"ws", 2}}, {{1, 4, 4, 2}}, 0, 1));
  EXPECT_TRUE(refuses_second_half("window_partition", {{"ws", 2}}, {{1, 4, 4, 2}}, 0, 2));
  EXPECT_TRUE(refuses_second_half("window_reverse", {{"ws", 2}, {"height", 4}, {"width", 4}}, {{4, 4, 2}}, 0, 0));
  EXPECT_TRUE(refuses_second_half("window_reverse", {{"ws", 2}, {"height", 4}, {"width", 4}}, {{4, 4, 2}}, 0, 1));
  EXPECT_TRUE(refuses_second_half("cyclic_shift", {{"sh", 1}, {"sw", 1}}, {{1, 4, 4, 2}}, 0, 1));
  EXPECT_TRUE(refuses_second_half("cyclic_shift", {{"sh", 1}, {"sw", 1}}, {{1, 4, 4, 2}}, 0, 2));
  EXPECT_TRUE(refuses_second_half("add_window_mask", {}, {{4, 2, 3, 3}, {4, 3, 3}}, 1, 0));
  EXPECT_TRUE(refuses_second_half("outer_product_mean", {}, {{3, 2, 4}, {3, 2, 2}}, 0, 2));
  // Whole images of windows, and the batch of an image, are pieces these kernels can compute.
  EXPECT_FALSE(refuses_second_half("window_reverse", {{"ws", 2}, {"height", 4}, {"width", 4}}, {{8, 4, 2}}, 0, 0));
  EXPECT_FALSE(refuses_second_half("cyclic_shift", {{"sh", 1}, {"sw", 1}}, {{2, 4, 4, 2}}, 0, 0));
}

TEST(NativeKernels, EveryKernelNamesAnOperatorOfTheLibrary) {
  for (const std::string& op : builtin_kernels().ops(Backend::Cpu)) EXPECT_NE(bundled_library().find_op(op), nullptr) << op;
}

// ReLU runs Eigen's max: the same values as `x < 0 ? 0 : x`, a NaN kept (so that training names
// the first operator whose output went non-finite), a zero and infinities as they were.
TEST(NativeKernels, ReluKeepsANaNAZeroAndTheInfinities) {
  const Kernel<float>* relu = builtin_kernels().find<float>("relu", Backend::Cpu);
  ASSERT_NE(relu, nullptr);
  Tensor<float> x(std::vector<std::int64_t>{3, 7});
  const std::vector<float> special = {std::nanf(""), -0.0f, -INFINITY, INFINITY, -2.5f, 3.5f, 0.0f};
  for (std::size_t i = 0; i < x.data.size(); ++i)
    x.data[i] = i < special.size() ? special[i] : (i % 2 ? 1.f : -1.f) * static_cast<float>(i);
  const OpCall<float> call{"relu", {}, {&x}, {}, {}, {}, {x.dims}};
  const Tensor<float> y = relu->forward(call).at(0);
  ASSERT_EQ(y.data.size(), x.data.size());
  EXPECT_TRUE(std::isnan(y.data[0]));
  EXPECT_EQ(y.data[1], 0.0f);
  for (std::size_t i = 2; i < x.data.size(); ++i) EXPECT_EQ(y.data[i], x.data[i] < 0 ? 0.f : x.data[i]) << i;
}

}  // namespace
}  // namespace loom::runtime
