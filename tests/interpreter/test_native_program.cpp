// Comprehensions compiled to machine code against the interpreter: values and derived gradients,
// in double and float, for bodies with every construct the language has (reductions hoisted out
// of their statement's loops or not, max reductions, reads past the edge with and without a
// fallback, selects, functions); the disk cache; and a missing or failing compiler reported.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include "loom/interpreter/evaluate.hpp"
#include "loom/interpreter/gradient.hpp"
#include "loom/interpreter/native_program.hpp"
#include "loom/interpreter/piece_program.hpp"
#include "test_support.hpp"

namespace loom::spec {
namespace {

namespace fs = std::filesystem;

struct Case {
  std::string op;
  pcg::AttrMap attrs;
  std::vector<std::vector<std::int64_t>> inputs;
  bool positive = false;  // inputs drawn from (0.1, 2) instead of (-1, 1)
  bool ties = false;      // inputs drawn from {-1, 0, 1}: maxima attained more than once
};

std::ostream& operator<<(std::ostream& os, const Case& c) { return os << c.op; }

Tensor<double> random_tensor(const std::vector<std::int64_t>& dims, std::mt19937_64& rng, double lo = -1, double hi = 1) {
  Tensor<double> t(dims, 0.0);
  std::uniform_real_distribution<double> u(lo, hi);
  for (double& v : t.data) v = u(rng);
  return t;
}

template <class T, class From>
Tensor<T> as(const Tensor<From>& t) {
  Tensor<T> out(t.dims, T(0));
  for (std::size_t i = 0; i < t.size(); ++i) out.data[i] = static_cast<T>(t.data[i]);
  return out;
}

template <class T>
std::vector<const Tensor<T>*> pointers_to(const std::vector<Tensor<T>>& ts) {
  std::vector<const Tensor<T>*> out;
  for (const auto& t : ts) out.push_back(&t);
  return out;
}

// The worst difference, relative above 1 in magnitude; infinities must match exactly.
template <class T>
double worst(const Tensor<T>& got, const Tensor<double>& want) {
  EXPECT_EQ(got.dims, want.dims);
  double w = 0;
  for (std::size_t i = 0; i < want.size() && i < got.size(); ++i) {
    const double g = static_cast<double>(got.data[i]), x = want.data[i];
    if (!std::isfinite(x) || !std::isfinite(g)) {
      EXPECT_EQ(g, x) << "element " << i;
      continue;
    }
    w = std::max(w, std::abs(g - x) / std::max(1.0, std::abs(x)));
  }
  return w;
}

// The worst difference between `built` and the interpreter running `program`, values and
// gradients.
template <class T>
double against_interpreted(const Program& program, const NativeBuild& built, const Case& c) {
  EXPECT_NE(built.program, nullptr) << built.why_not;
  if (!built.program) return HUGE_VAL;
  std::mt19937_64 rng(3);
  std::vector<Tensor<T>> inputs;
  std::vector<Tensor<double>> inputs_d;
  std::vector<std::vector<std::int64_t>> dims_of_inputs;
  for (int b : program.input_buffers) dims_of_inputs.push_back(program.buffers[static_cast<std::size_t>(b)].dims);
  for (const auto& dims : dims_of_inputs) {
    inputs.push_back(as<T>(c.positive ? random_tensor(dims, rng, 0.1, 2) : random_tensor(dims, rng)));
    if (c.ties)
      for (T& v : inputs.back().data) v = std::round(v);
    inputs_d.push_back(as<double>(inputs.back()));
  }
  const auto want = evaluate<RealDomain>(program, pointers_to(inputs_d));
  const auto got = built.program->evaluate(pointers_to(inputs));
  EXPECT_EQ(got.size(), want.size());
  double w = 0;
  std::vector<Tensor<T>> grads;
  std::vector<Tensor<double>> grads_d;
  for (std::size_t k = 0; k < want.size() && k < got.size(); ++k) {
    w = std::max(w, worst(got[k], want[k]));
    grads.push_back(as<T>(random_tensor(want[k].dims, rng)));
    grads_d.push_back(as<double>(grads.back()));
  }
  const auto want_grads = evaluate_gradient(program, pointers_to(inputs_d), pointers_to(grads_d));
  const auto got_grads = built.program->gradient(pointers_to(inputs), pointers_to(grads));
  EXPECT_EQ(got_grads.size(), want_grads.size());
  for (std::size_t i = 0; i < want_grads.size() && i < got_grads.size(); ++i) w = std::max(w, worst(got_grads[i], want_grads[i]));
  return w;
}

template <class T>
double compiled_against_interpreted(const Case& c) {
  const Program program = test::bundled().instantiate(c.op, c.attrs, c.inputs);
  return against_interpreted<T>(program, build_native(program, native_type_of<T>()), c);
}

const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      {"relu", {}, {{3, 5}}},
      {"gelu", {}, {{4, 6}}},
      {"erf", {}, {{7}}},
      {"sigmoid", {}, {{2, 3, 4}}},
      {"scalar_pow", {}, {{2, 5}, {}}, true},
      {"clip", {}, {{3, 4}, {}, {}}},
      {"matmul", {}, {{4, 6}, {6, 5}}},
      {"batch_matmul", {}, {{2, 3, 4}, {2, 4, 5}}},
      {"softmax", {}, {{3, 7}}},
      {"layer_norm", {}, {{4, 8}, {8}, {8}}},
      {"reduce_mean", {}, {{5, 6}}},
      {"pool2d_max", {{"kh", 2}, {"kw", 2}, {"stride", 2}, {"pad", 1}}, {{1, 2, 5, 5}}},
      {"pool2d_max", {{"kh", 3}, {"kw", 3}, {"stride", 1}, {"pad", 1}}, {{1, 2, 5, 5}}, false, true},
      {"conv2d", {{"stride_h", 1}, {"stride_w", 2}, {"pad_h", 1}, {"pad_w", 1}, {"act", 1}}, {{2, 3, 5, 5}, {4, 3, 3, 3}}},
      {"causal_mask", {}, {{2, 4, 4}}},
      {"concat", {{"axis", 1}}, {{2, 3}, {2, 4}}},
      {"split_axis", {{"axis", 1}, {"parts", 2}}, {{2, 4, 3}}},
      {"pad_axis", {{"axis", 0}, {"before", 1}, {"after", 2}}, {{3, 2}}},
      {"cyclic_shift", {{"sh", 1}, {"sw", 2}}, {{1, 4, 4, 2}}},
      {"outer_product_mean", {}, {{3, 4, 2}, {3, 5, 2}}},
      {"head_proj_nobias", {}, {{2, 3, 4}, {2, 4, 5}}},
      {"triangle_mult_out", {}, {{2, 3, 3, 2}, {2, 3, 3, 2}}},
      {"dot_attention", {}, {{2, 4}, {2, 3, 4}}},
      {"attention_scores", {}, {{2, 3, 4}, {2, 5, 4}}},
      {"head_proj", {}, {{2, 3, 4}, {2, 4, 5}, {2, 5}}},
  };
  return all;
}

class CompiledOp : public ::testing::TestWithParam<Case> {};

TEST_P(CompiledOp, AgreesWithTheInterpreterInDouble) { EXPECT_LT(compiled_against_interpreted<double>(GetParam()), 1e-9); }

TEST_P(CompiledOp, AgreesWithTheInterpreterInFloat) { EXPECT_LT(compiled_against_interpreted<float>(GetParam()), 1e-4); }

INSTANTIATE_TEST_SUITE_P(BundledOps, CompiledOp, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.op + "_" + std::to_string(info.index); });

TEST(NativeSource, AReductionOverTheRowIsComputedOncePerRow) {
  // softmax's denominator depends on the row only: it is taken out of the column loop.
  const Program softmax = test::bundled().instantiate("softmax", {}, {{3, 7}});
  const std::string source = native_source(softmax, NativeType::Double).code;
  EXPECT_NE(source.find("const T h"), std::string::npos) << source;
  const Program relu = test::bundled().instantiate("relu", {}, {{3, 7}});
  EXPECT_EQ(native_source(relu, NativeType::Double).code.find("const T h"), std::string::npos);
}

TEST(NativeSource, ContractionsCallGemm) {
  // Rows, columns, batch and summed indices in any order of the target and the operands.
  for (const Case& c : std::vector<Case>{{"matmul", {}, {{4, 6}, {6, 5}}},
                                         {"head_proj_nobias", {}, {{2, 3, 4}, {2, 4, 5}}},
                                         {"triangle_mult_out", {}, {{2, 3, 3, 2}, {2, 3, 3, 2}}}})
    EXPECT_NE(native_source(test::bundled().instantiate(c.op, c.attrs, c.inputs), NativeType::Float).code.find("gemm(0, 0"),
              std::string::npos)
        << c.op;
  // A contraction inside a larger body (scaled scores, a projection plus its bias).
  EXPECT_NE(
      native_source(test::bundled().instantiate("attention_scores", {}, {{2, 3, 4}, {2, 5, 4}}), NativeType::Float).code.find("gemm(0, 0"),
      std::string::npos);
  // Reads past the edge are no contraction.
  const Program conv = test::bundled().instantiate("conv2d", {{"stride_h", 1}, {"stride_w", 1}, {"pad_h", 1}, {"pad_w", 1}, {"act", 0}},
                                                   {{1, 2, 4, 4}, {2, 2, 3, 3}});
  EXPECT_EQ(native_source(conv, NativeType::Float).code.find("gemm("), std::string::npos);
}

// NaN compared as the interpreter orders values (a <= b is !(b < a)), and a point whose gradient
// is zero adding nothing even where its derivative is infinite.
TEST(NativeProgram, ComparesNaNAndSkipsZeroGradientsAsTheInterpreter) {
  test::TempDir dir;
  const std::string file = dir.write("edge.loom",
                                     "op edge(x: [n]) -> [n] {\n"
                                     "  out[i] = select(x[i] >= 1, 5, 7) + select(x[i] <= 0, 20, 30) + log(x[i]);\n"
                                     "}\n");
  const Library library = Library::load({file});
  const Program program = library.instantiate("edge", {}, {{4}});
  const NativeBuild built = build_native(program, NativeType::Double);
  ASSERT_NE(built.program, nullptr) << built.why_not;
  Tensor<double> x({4}, 0.0);
  x.data = {std::nan(""), 0.0, 1.0, 2.0};
  const auto want = evaluate<RealDomain>(program, {&x}).at(0);
  const auto got = built.program->evaluate<double>({&x}).at(0);
  // Only the comparisons differ between NaN's branches: log(NaN) is NaN either way, so the sum
  // is compared through the selects alone.
  EXPECT_TRUE(std::isnan(got.data[0]));
  for (std::size_t i = 1; i < 4; ++i) EXPECT_EQ(got.data[i], want.data[i]) << i;
  const Library selects_library = Library::load(
      {dir.write("selects.loom", "op selects(x: [n]) -> [n] { out[i] = select(x[i] >= 1, 5, 7) + select(x[i] <= 0, 20, 30); }\n")});
  const Program selects = selects_library.instantiate("selects", {}, {{4}});
  const NativeBuild built_selects = build_native(selects, NativeType::Double);
  ASSERT_NE(built_selects.program, nullptr) << built_selects.why_not;
  EXPECT_EQ(built_selects.program->evaluate<double>({&x}).at(0).data, evaluate<RealDomain>(selects, {&x}).at(0).data);

  Tensor<double> grad({4}, 1.0);
  grad.data = {1.0, 0.0, 1.0, 1.0};  // x = 0 has an infinite derivative and a zero gradient
  const auto want_grad = evaluate_gradient(program, {&x}, {&grad}).at(0);
  const auto got_grad = built.program->gradient<double>({&x}, {&grad}).at(0);
  EXPECT_EQ(want_grad.data[1], 0.0);
  for (std::size_t i = 1; i < 4; ++i) EXPECT_EQ(got_grad.data[i], want_grad.data[i]) << i;
}

NativeToolchain scratch_toolchain(const std::string& compiler) {
  NativeToolchain t;
  t.compiler = compiler;
  t.cache_dir = (fs::temp_directory_path() / ("loom-native-test-" + std::to_string(::getpid()))).string();
  fs::remove_all(t.cache_dir);
  return t;
}

// The system compiler behind a script that counts its runs, building into a scratch cache.
struct CountingToolchain {
  NativeToolchain tools = scratch_toolchain("");
  fs::path counter = fs::path(tools.cache_dir) / "runs";

  CountingToolchain() {
    const NativeToolchain& real = NativeToolchain::from_environment();
    fs::create_directories(tools.cache_dir);
    const fs::path wrapper = fs::path(tools.cache_dir) / "cxx";
    std::ofstream(wrapper) << "#!/bin/sh\necho run >> " << counter.string() << "\nexec " << real.compiler << " \"$@\"\n";
    fs::permissions(wrapper, fs::perms::owner_all);
    tools.compiler = wrapper.string();
  }
  ~CountingToolchain() { fs::remove_all(tools.cache_dir); }

  std::size_t runs() const {
    std::ifstream in(counter);
    std::size_t n = 0;
    for (std::string line; std::getline(in, line);) ++n;
    return n;
  }
};

TEST(NativeBuild, IsKeptOnDiskAndTakenFromThereNextTime) {
  ASSERT_FALSE(NativeToolchain::from_environment().compiler.empty()) << NativeToolchain::from_environment().why_none;
  CountingToolchain counting;
  const NativeToolchain& t = counting.tools;
  auto runs = [&] { return counting.runs(); };
  const NativeBuild first = build_native(test::bundled().instantiate("ewmul", {}, {{3, 3}, {3, 3}}), NativeType::Double, t);
  ASSERT_NE(first.program, nullptr) << first.why_not;
  EXPECT_EQ(runs(), 1u);
  // Another cache folder holding the same files, as a later process meets them.
  NativeToolchain later = t;
  later.cache_dir = t.cache_dir + "-later";
  fs::remove_all(later.cache_dir);
  fs::copy(t.cache_dir, later.cache_dir);
  const NativeBuild again = build_native(test::bundled().instantiate("ewmul", {}, {{3, 3}, {3, 3}}), NativeType::Double, later);
  ASSERT_NE(again.program, nullptr) << again.why_not;
  EXPECT_EQ(runs(), 1u) << "the library on disk was built again";
  Tensor<double> x({3, 3}, 2.0), y({3, 3}, 3.0);
  EXPECT_EQ(again.program->evaluate<double>({&x, &y}).at(0).data, std::vector<double>(9, 6.0));
  // Another element type is another library.
  ASSERT_NE(build_native(test::bundled().instantiate("ewmul", {}, {{3, 3}, {3, 3}}), NativeType::Float, t).program, nullptr);
  EXPECT_EQ(runs(), 2u);
  fs::remove_all(later.cache_dir);
}

// Instances differing only in outer sizes, attribute values or a piece's place run one kernel, each
// with its own numbers, and each agrees with the interpreter; another innermost extent is another
// kernel.
TEST(NativeBuild, InstancesOfOneShapeClassShareOneKernel) {
  ASSERT_FALSE(NativeToolchain::from_environment().compiler.empty()) << NativeToolchain::from_environment().why_none;
  CountingToolchain counting;
  const std::vector<std::vector<Case>> classes = {
      {{"layer_norm", {}, {{4, 8}, {8}, {8}}}, {"layer_norm", {}, {{6, 8}, {8}, {8}}}, {"layer_norm", {}, {{1, 8}, {8}, {8}}}},
      {{"layer_norm", {}, {{4, 5}, {5}, {5}}}},  // rows of another length
      {{"matmul", {}, {{4, 6}, {6, 5}}}, {"matmul", {}, {{9, 6}, {6, 5}}}},
      {{"pool2d_max", {{"kh", 2}, {"kw", 2}, {"stride", 2}, {"pad", 1}}, {{1, 2, 5, 5}}},
       {"pool2d_max", {{"kh", 3}, {"kw", 2}, {"stride", 2}, {"pad", 1}}, {{2, 3, 7, 5}}}},
  };
  std::size_t kernels = 0;
  for (const auto& shape_class : classes) {
    std::string library;
    for (const Case& c : shape_class) {
      const Program program = test::bundled().instantiate(c.op, c.attrs, c.inputs);
      const NativeBuild built = build_native(program, NativeType::Double, counting.tools);
      EXPECT_LT(against_interpreted<double>(program, built, c), 1e-9) << c.op << " " << dims_to_string(c.inputs[0]);
      if (library.empty()) library = built.library;
      EXPECT_EQ(built.library, library) << c.op << " " << dims_to_string(c.inputs[0]) << " has a kernel of its own";
    }
    EXPECT_EQ(counting.runs(), ++kernels) << shape_class[0].op;
  }
  // The pieces of a positional operator (causal_mask reads its indices' values) split by rows.
  const Program logical = test::bundled().instantiate("causal_mask", {}, {{2, 6, 6}});
  std::string library;
  for (std::int64_t lo : {0, 2, 4}) {
    const pcg::Region rows{{0, lo, 0}, {2, lo + 2, 6}};
    const Program piece = place_piece(logical, {{rows}, {rows}});
    const NativeBuild built = build_native(piece, NativeType::Double, counting.tools);
    EXPECT_LT(against_interpreted<double>(piece, built, {"causal_mask", {}, {}}), 1e-9) << "rows from " << lo;
    if (library.empty()) library = built.library;
    EXPECT_EQ(built.library, library) << "rows from " << lo;
  }
  EXPECT_EQ(counting.runs(), kernels + 1);
}

TEST(NativeBuild, AFailingCompilerIsReportedNotThrown) {
  NativeToolchain t = scratch_toolchain("/bin/false");
  const NativeBuild built = build_native(test::bundled().instantiate("relu", {}, {{2, 2}}), NativeType::Float, t);
  EXPECT_EQ(built.program, nullptr);
  EXPECT_NE(built.why_not.find("/bin/false failed"), std::string::npos) << built.why_not;
  NativeToolchain none;
  none.why_none = "no compiler here";
  EXPECT_EQ(build_native(test::bundled().instantiate("relu", {}, {{2, 2}}), NativeType::Float, none).why_not, "no compiler here");
  fs::remove_all(t.cache_dir);
}

TEST(NativeProgram, RefusesInputsOfAnotherShapeOrType) {
  const NativeBuild built = build_native(test::bundled().instantiate("relu", {}, {{2, 2}}), NativeType::Double);
  ASSERT_NE(built.program, nullptr) << built.why_not;
  Tensor<double> wrong({3, 2}, 1.0);
  EXPECT_THROW(built.program->evaluate<double>({&wrong}), LoomError);
  Tensor<float> single({2, 2}, 1.0f);
  EXPECT_THROW(built.program->evaluate<float>({&single}), LoomError);
}

}  // namespace
}  // namespace loom::spec
