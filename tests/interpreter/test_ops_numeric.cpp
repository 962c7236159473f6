// Every bundled operator, evaluated by the interpreter, against an independent computation: Eigen
// for the matrix products and transpose, plain loops for everything else, on several shapes with
// seeded random values. Then exact (modular) evaluation against double evaluation on small
// integers for the polynomial operators.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "loom/interpreter/evaluate.hpp"
#include "loom/interpreter/library.hpp"
#include "test_support.hpp"

namespace loom::spec {
namespace {

using test::bundled;
using T = Tensor<double>;
using Dims = std::vector<std::int64_t>;
using RowMat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

std::int64_t prod(const Dims& d, std::size_t from = 0, std::size_t to = std::string::npos) {
  std::int64_t p = 1;
  for (std::size_t i = from; i < std::min(to, d.size()); ++i) p *= d[i];
  return p;
}

Dims cat(Dims a, const Dims& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

T random_tensor(const Dims& dims, std::mt19937_64& rng, double lo = -1, double hi = 1) {
  T t(dims);
  std::uniform_real_distribution<double> u(lo, hi);
  for (auto& v : t.data) v = u(rng);
  return t;
}

T random_ints(const Dims& dims, std::mt19937_64& rng, int lo, int hi) {
  T t(dims);
  std::uniform_int_distribution<int> u(lo, hi);
  for (auto& v : t.data) v = u(rng);
  return t;
}

std::vector<T> run(const std::string& op, const pcg::AttrMap& attrs, const std::vector<const T*>& inputs) {
  std::vector<Dims> dims;
  for (const auto* t : inputs) dims.push_back(t->dims);
  Program p = bundled().instantiate(op, attrs, dims);
  return evaluate<RealDomain>(p, inputs);
}

T run1(const std::string& op, const pcg::AttrMap& attrs, const std::vector<const T*>& inputs) {
  auto outs = run(op, attrs, inputs);
  EXPECT_EQ(outs.size(), 1u) << op;
  return outs.empty() ? T{} : outs[0];
}

// Same dims, and every element within a relative 1e-9 (absolute near zero).
void expect_close(const T& got, const Dims& dims, const std::vector<double>& want, double tol = 1e-9) {
  ASSERT_EQ(got.dims, dims);
  ASSERT_EQ(got.data.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got.data[i], want[i], tol * (1 + std::fabs(want[i]))) << "element " << i;
}

void expect_close(const T& got, const T& want, double tol = 1e-9) { expect_close(got, want.dims, want.data, tol); }

std::vector<double> to_vector(const RowMat& m) {
  std::vector<double> v(static_cast<std::size_t>(m.size()));
  Eigen::Map<RowMat>(v.data(), m.rows(), m.cols()) = m;
  return v;
}

Eigen::Map<const RowMat> as_matrix(const T& t, std::int64_t rows, std::int64_t cols, std::int64_t offset = 0) {
  return Eigen::Map<const RowMat>(t.data.data() + offset, rows, cols);
}

// ---- matrix products (Eigen) ----------------------------------------------------------------

TEST(OpsNumeric, MatmulAgainstEigen) {
  std::mt19937_64 rng(11);
  for (auto [m, k, n] : std::vector<std::array<std::int64_t, 3>>{{1, 1, 1}, {3, 4, 5}, {7, 2, 6}, {5, 8, 3}, {4, 1, 9}}) {
    SCOPED_TRACE(std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n));
    T a = random_tensor({m, k}, rng), b = random_tensor({k, n}, rng);
    RowMat want = as_matrix(a, m, k) * as_matrix(b, k, n);
    expect_close(run1("matmul", {}, {&a, &b}), {m, n}, to_vector(want));
  }
}

TEST(OpsNumeric, MatmulReluAgainstEigen) {
  std::mt19937_64 rng(12);
  for (auto [m, k, n] : std::vector<std::array<std::int64_t, 3>>{{1, 1, 1}, {3, 4, 5}, {6, 3, 2}}) {
    T a = random_tensor({m, k}, rng), b = random_tensor({k, n}, rng);
    RowMat want = (as_matrix(a, m, k) * as_matrix(b, k, n)).cwiseMax(0.0);
    expect_close(run1("matmul_relu", {}, {&a, &b}), {m, n}, to_vector(want));
  }
}

TEST(OpsNumeric, BatchMatmulAgainstEigen) {
  std::mt19937_64 rng(12);
  for (const Dims& batch : std::vector<Dims>{{}, {3}, {2, 3}}) {
    for (auto [m, k, n] : std::vector<std::array<std::int64_t, 3>>{{2, 3, 4}, {5, 1, 2}}) {
      SCOPED_TRACE(::testing::PrintToString(batch) + " " + std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n));
      T x = random_tensor(cat(batch, {m, k}), rng), y = random_tensor(cat(batch, {k, n}), rng);
      std::vector<double> want;
      for (std::int64_t b = 0; b < prod(batch); ++b) {
        RowMat r = as_matrix(x, m, k, b * m * k) * as_matrix(y, k, n, b * k * n);
        auto v = to_vector(r);
        want.insert(want.end(), v.begin(), v.end());
      }
      expect_close(run1("batch_matmul", {}, {&x, &y}), cat(batch, {m, n}), want);
    }
  }
}

TEST(OpsNumeric, LinearAgainstEigen) {
  std::mt19937_64 rng(13);
  for (const Dims& batch : std::vector<Dims>{{}, {4}, {2, 3}}) {
    for (auto [k, n] : std::vector<std::array<std::int64_t, 2>>{{3, 5}, {6, 1}}) {
      SCOPED_TRACE(::testing::PrintToString(batch) + " k=" + std::to_string(k) + " n=" + std::to_string(n));
      T x = random_tensor(cat(batch, {k}), rng), w = random_tensor({k, n}, rng), bias = random_tensor({n}, rng);
      std::int64_t rows = prod(batch);
      RowMat xw = as_matrix(x, rows, k) * as_matrix(w, k, n);
      RowMat with_bias = xw.rowwise() + as_matrix(bias, 1, n).row(0);
      expect_close(run1("linear", {}, {&x, &w, &bias}), cat(batch, {n}), to_vector(with_bias));
      expect_close(run1("linear_nobias", {}, {&x, &w}), cat(batch, {n}), to_vector(xw));
    }
  }
}

TEST(OpsNumeric, BiasAddAgainstEigen) {
  std::mt19937_64 rng(14);
  for (const Dims& batch : std::vector<Dims>{{}, {3}, {2, 2}}) {
    std::int64_t n = 5;
    T x = random_tensor(cat(batch, {n}), rng), bias = random_tensor({n}, rng);
    RowMat want = as_matrix(x, prod(batch), n).rowwise() + as_matrix(bias, 1, n).row(0);
    expect_close(run1("bias_add", {}, {&x, &bias}), cat(batch, {n}), to_vector(want));
  }
}

TEST(OpsNumeric, TransposeAgainstEigen) {
  std::mt19937_64 rng(15);
  for (const Dims& batch : std::vector<Dims>{{}, {2}, {2, 3}}) {
    for (auto [m, n] : std::vector<std::array<std::int64_t, 2>>{{3, 4}, {1, 5}, {2, 2}}) {
      T x = random_tensor(cat(batch, {m, n}), rng);
      std::vector<double> want;
      for (std::int64_t b = 0; b < prod(batch); ++b) {
        RowMat t = as_matrix(x, m, n, b * m * n).transpose();
        auto v = to_vector(t);
        want.insert(want.end(), v.begin(), v.end());
      }
      expect_close(run1("transpose", {}, {&x}), cat(batch, {n, m}), want);
    }
  }
}

// ---- convolution and pooling (loops) --------------------------------------------------------

double activate(double v, int act) {
  switch (act) {
    case 1: return v > 0 ? v : 0;
    case 2: return 1 / (1 + std::exp(-v));
    case 3: return std::tanh(v);
    default: return v;
  }
}

// NCHW grouped convolution with zero padding: weight [o, c / groups, kh, kw].
T conv_reference(const T& x, const T& w, int sh, int sw, int ph, int pw, int act, std::int64_t groups) {
  const std::int64_t N = x.dims[0], C = x.dims[1], H = x.dims[2], W = x.dims[3];
  const std::int64_t O = w.dims[0], CG = w.dims[1], KH = w.dims[2], KW = w.dims[3];
  EXPECT_EQ(C, CG * groups);
  const std::int64_t OH = (H + 2 * ph - KH) / sh + 1, OW = (W + 2 * pw - KW) / sw + 1;
  T out({N, O, OH, OW});
  for (std::int64_t b = 0; b < N; ++b)
    for (std::int64_t f = 0; f < O; ++f) {
      std::int64_t g = f / (O / groups);
      for (std::int64_t i = 0; i < OH; ++i)
        for (std::int64_t j = 0; j < OW; ++j) {
          double acc = 0;
          for (std::int64_t q = 0; q < CG; ++q)
            for (std::int64_t r = 0; r < KH; ++r)
              for (std::int64_t s = 0; s < KW; ++s) {
                std::int64_t hi = i * sh + r - ph, wi = j * sw + s - pw;
                if (hi < 0 || hi >= H || wi < 0 || wi >= W) continue;
                acc += x.at({b, g * CG + q, hi, wi}) * w.at({f, q, r, s});
              }
          out.at({b, f, i, j}) = activate(acc, act);
        }
    }
  return out;
}

struct ConvCase {
  Dims x, w;
  int sh, sw, ph, pw, act;
};

TEST(OpsNumeric, Conv2dWithStridePaddingAndActivation) {
  std::mt19937_64 rng(21);
  const std::vector<ConvCase> cases = {
      {{2, 3, 5, 5}, {4, 3, 3, 3}, 1, 1, 1, 1, 0}, {{1, 2, 7, 6}, {3, 2, 3, 2}, 2, 1, 2, 0, 1}, {{2, 2, 6, 6}, {2, 2, 1, 1}, 2, 2, 0, 0, 2},
      {{1, 3, 4, 5}, {2, 3, 4, 5}, 1, 1, 0, 0, 3}, {{1, 1, 5, 5}, {1, 1, 5, 5}, 2, 2, 2, 2, 0}, {{2, 2, 4, 3}, {3, 2, 2, 3}, 1, 2, 1, 2, 1},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(::testing::PrintToString(c.x) + " * " + ::testing::PrintToString(c.w) + " act " + std::to_string(c.act));
    T x = random_tensor(c.x, rng), w = random_tensor(c.w, rng);
    pcg::AttrMap a{{"stride_h", c.sh}, {"stride_w", c.sw}, {"pad_h", c.ph}, {"pad_w", c.pw}, {"act", c.act}};
    expect_close(run1("conv2d", a, {&x, &w}), conv_reference(x, w, c.sh, c.sw, c.ph, c.pw, c.act, 1));
  }
  // Every activation on the same instance.
  T x = random_tensor({1, 2, 4, 4}, rng), w = random_tensor({2, 2, 3, 3}, rng);
  for (int act = 0; act < 4; ++act) {
    pcg::AttrMap a{{"stride_h", 1}, {"stride_w", 1}, {"pad_h", 1}, {"pad_w", 1}, {"act", act}};
    expect_close(run1("conv2d", a, {&x, &w}), conv_reference(x, w, 1, 1, 1, 1, act, 1));
  }
}

TEST(OpsNumeric, GroupedAndDepthwiseConv) {
  std::mt19937_64 rng(22);
  struct Case {
    std::int64_t groups;
    ConvCase c;
  };
  for (const auto& [groups, c] : std::vector<Case>{{2, {{1, 4, 5, 5}, {6, 2, 3, 3}, 1, 1, 1, 1, 0}},
                                                   {3, {{2, 3, 4, 4}, {3, 1, 3, 3}, 2, 2, 1, 0, 1}},
                                                   {1, {{1, 2, 3, 3}, {2, 2, 2, 2}, 1, 1, 0, 0, 3}},
                                                   {2, {{1, 6, 5, 4}, {4, 3, 3, 1}, 1, 2, 0, 1, 2}}}) {
    SCOPED_TRACE("groups " + std::to_string(groups));
    T x = random_tensor(c.x, rng), w = random_tensor(c.w, rng);
    pcg::AttrMap a{{"groups", groups}, {"stride_h", c.sh}, {"stride_w", c.sw}, {"pad_h", c.ph}, {"pad_w", c.pw}, {"act", c.act}};
    expect_close(run1("conv2d_grouped", a, {&x, &w}), conv_reference(x, w, c.sh, c.sw, c.ph, c.pw, c.act, groups));
  }
  for (const auto& c : std::vector<ConvCase>{{{2, 3, 5, 5}, {3, 1, 3, 3}, 1, 1, 1, 1, 0}, {{1, 4, 6, 5}, {4, 1, 3, 2}, 2, 1, 2, 1, 3}}) {
    T x = random_tensor(c.x, rng), w = random_tensor(c.w, rng);
    pcg::AttrMap a{{"stride_h", c.sh}, {"stride_w", c.sw}, {"pad_h", c.ph}, {"pad_w", c.pw}, {"act", c.act}};
    expect_close(run1("conv2d_depthwise", a, {&x, &w}), conv_reference(x, w, c.sh, c.sw, c.ph, c.pw, c.act, c.x[1]));
  }
  // Requirements: channels must split into the groups.
  T x = random_tensor({1, 4, 3, 3}, rng), w = random_tensor({4, 3, 1, 1}, rng);
  EXPECT_THROW(run("conv2d_grouped", {{"groups", 2}, {"stride_h", 1}, {"stride_w", 1}, {"pad_h", 0}, {"pad_w", 0}, {"act", 0}}, {&x, &w}),
               LoomError);
}

TEST(OpsNumeric, Pooling) {
  std::mt19937_64 rng(23);
  struct Case {
    Dims x;
    int kh, kw, stride, pad;
  };
  for (const auto& c : std::vector<Case>{{{2, 3, 6, 6}, 2, 2, 2, 0},
                                         {{1, 2, 5, 5}, 3, 3, 1, 1},
                                         {{1, 1, 5, 6}, 3, 2, 2, 1},
                                         {{2, 1, 4, 4}, 4, 4, 1, 0},
                                         {{1, 2, 3, 7}, 1, 5, 2, 2}}) {
    SCOPED_TRACE(::testing::PrintToString(c.x) + " k " + std::to_string(c.kh) + "x" + std::to_string(c.kw) + " s " +
                 std::to_string(c.stride) + " p " + std::to_string(c.pad));
    T x = random_tensor(c.x, rng);
    const std::int64_t N = c.x[0], C = c.x[1], H = c.x[2], W = c.x[3];
    const std::int64_t OH = (H + 2 * c.pad - c.kh) / c.stride + 1, OW = (W + 2 * c.pad - c.kw) / c.stride + 1;
    T mx({N, C, OH, OW}), avg({N, C, OH, OW});
    for (std::int64_t b = 0; b < N; ++b)
      for (std::int64_t f = 0; f < C; ++f)
        for (std::int64_t i = 0; i < OH; ++i)
          for (std::int64_t j = 0; j < OW; ++j) {
            double best = -HUGE_VAL, sum = 0;
            for (int r = 0; r < c.kh; ++r)
              for (int s = 0; s < c.kw; ++s) {
                std::int64_t hi = i * c.stride + r - c.pad, wi = j * c.stride + s - c.pad;
                if (hi < 0 || hi >= H || wi < 0 || wi >= W) continue;  // padding: never the max, adds 0
                best = std::max(best, x.at({b, f, hi, wi}));
                sum += x.at({b, f, hi, wi});
              }
            mx.at({b, f, i, j}) = best;
            avg.at({b, f, i, j}) = sum / (c.kh * c.kw);  // count-include-pad
          }
    pcg::AttrMap a{{"kh", c.kh}, {"kw", c.kw}, {"stride", c.stride}, {"pad", c.pad}};
    if (c.pad < c.kh && c.pad < c.kw) expect_close(run1("pool2d_max", a, {&x}), mx);
    expect_close(run1("pool2d_avg", a, {&x}), avg);
  }
  // All inputs negative: padding must not win the max.
  T neg = random_tensor({1, 1, 3, 3}, rng, -2, -1);
  T out = run1("pool2d_max", {{"kh", 2}, {"kw", 2}, {"stride", 1}, {"pad", 1}}, {&neg});
  for (double v : out.data) EXPECT_LT(v, 0);
}

TEST(OpsNumeric, BatchNorm) {
  std::mt19937_64 rng(24);
  for (const Dims& d : std::vector<Dims>{{2, 3, 4, 5}, {1, 1, 2, 2}, {3, 2, 1, 3}}) {
    const std::int64_t C = d[1];
    T x = random_tensor(d, rng), scale = random_tensor({C}, rng), bias = random_tensor({C}, rng), mean = random_tensor({C}, rng),
      var = random_tensor({C}, rng, 0.1, 2.0);
    T want(d);
    for (std::int64_t b = 0; b < d[0]; ++b)
      for (std::int64_t f = 0; f < C; ++f)
        for (std::int64_t i = 0; i < d[2]; ++i)
          for (std::int64_t j = 0; j < d[3]; ++j) {
            auto F = static_cast<std::size_t>(f);
            want.at({b, f, i, j}) = (x.at({b, f, i, j}) - mean.data[F]) / std::sqrt(var.data[F] + 1e-5) * scale.data[F] + bias.data[F];
          }
    expect_close(run1("batchnorm", {}, {&x, &scale, &bias, &mean, &var}), want);
  }
}

TEST(OpsNumeric, Enlarge) {
  std::mt19937_64 rng(25);
  struct Case {
    Dims w;
    int kh, kw;
  };
  for (const auto& c : std::vector<Case>{{{2, 3, 1, 1}, 3, 5}, {{2, 2, 3, 3}, 5, 5}, {{1, 1, 3, 1}, 3, 3}, {{1, 2, 2, 2}, 2, 4}}) {
    T w = random_tensor(c.w, rng);
    T want({c.w[0], c.w[1], c.kh, c.kw}, 0.0);
    const std::int64_t oh = (c.kh - c.w[2]) / 2, ow = (c.kw - c.w[3]) / 2;
    for (std::int64_t f = 0; f < c.w[0]; ++f)
      for (std::int64_t g = 0; g < c.w[1]; ++g)
        for (std::int64_t r = 0; r < c.w[2]; ++r)
          for (std::int64_t s = 0; s < c.w[3]; ++s) want.at({f, g, r + oh, s + ow}) = w.at({f, g, r, s});
    expect_close(run1("enlarge", {{"kh", c.kh}, {"kw", c.kw}}, {&w}), want);
  }
  T w = random_tensor({1, 1, 2, 2}, rng);
  EXPECT_THROW(run("enlarge", {{"kh", 3}, {"kw", 3}}, {&w}), LoomError);  // odd padding
  EXPECT_THROW(run("enlarge", {{"kh", 1}, {"kw", 2}}, {&w}), LoomError);  // smaller than the kernel
}

// ---- elementwise (loops) --------------------------------------------------------------------

const std::vector<Dims> kElementwiseShapes = {{7}, {3, 4}, {2, 3, 4}, {2, 1, 3, 2}};

TEST(OpsNumeric, UnaryActivations) {
  std::mt19937_64 rng(31);
  const std::vector<std::pair<std::string, std::function<double(double)>>> ops = {
      {"relu", [](double v) { return v > 0 ? v : 0.0; }},
      {"sigmoid", [](double v) { return 1 / (1 + std::exp(-v)); }},
      {"tanh", [](double v) { return std::tanh(v); }},
      {"gelu", [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }},
      {"dropout", [](double v) { return v; }},
      {"identity", [](double v) { return v; }},
  };
  for (const auto& dims : kElementwiseShapes) {
    T x = random_tensor(dims, rng, -3, 3);
    for (const auto& [name, f] : ops) {
      SCOPED_TRACE(name + " " + ::testing::PrintToString(dims));
      std::vector<double> want;
      for (double v : x.data) want.push_back(f(v));
      expect_close(run1(name, {}, {&x}), dims, want);
    }
  }
}

TEST(OpsNumeric, BinaryElementwise) {
  std::mt19937_64 rng(32);
  const std::vector<std::pair<std::string, std::function<double(double, double)>>> ops = {{"ewadd", std::plus<double>()},
                                                                                          {"ewsub", std::minus<double>()},
                                                                                          {"ewmul", std::multiplies<double>()},
                                                                                          {"ewdiv", std::divides<double>()}};
  for (const auto& dims : kElementwiseShapes) {
    T x = random_tensor(dims, rng);
    T y = random_tensor(dims, rng, 0.5, 1.5);
    for (std::size_t i = 0; i < y.size(); i += 2) y.data[i] = -y.data[i];  // both signs, away from 0
    for (const auto& [name, f] : ops) {
      SCOPED_TRACE(name + " " + ::testing::PrintToString(dims));
      std::vector<double> want;
      for (std::size_t i = 0; i < x.size(); ++i) want.push_back(f(x.data[i], y.data[i]));
      expect_close(run1(name, {}, {&x, &y}), dims, want);
    }
    T c(Dims{});
    c.data[0] = -1.75;
    std::vector<double> scaled;
    for (double v : x.data) scaled.push_back(v * -1.75);
    expect_close(run1("scalar_mul", {}, {&x, &c}), dims, scaled);
  }
  T a = random_tensor({2, 3}, rng), b = random_tensor({3, 2}, rng);
  EXPECT_THROW(run("ewadd", {}, {&a, &b}), LoomError);  // shapes differ
}

// ---- shape operators, reductions, normalizations, embeddings (loops) --------------------------

TEST(OpsNumeric, ConcatAndSplit) {
  std::mt19937_64 rng(41);
  struct Case {
    Dims x, y;
    int axis;
  };
  for (const auto& c : std::vector<Case>{{{2, 3}, {4, 3}, 0},
                                         {{2, 3}, {2, 1}, 1},
                                         {{3, 2, 4}, {3, 5, 4}, 1},
                                         {{2, 1, 3, 2}, {2, 1, 2, 2}, 2},
                                         {{1, 2, 2, 3}, {1, 2, 2, 1}, 3},
                                         {{5}, {2}, 0}}) {
    SCOPED_TRACE(::testing::PrintToString(c.x) + " ++ " + ::testing::PrintToString(c.y) + " axis " + std::to_string(c.axis));
    T x = random_tensor(c.x, rng), y = random_tensor(c.y, rng);
    const auto ax = static_cast<std::size_t>(c.axis);
    const std::int64_t outer = prod(c.x, 0, ax), nx = prod(c.x, ax), ny = prod(c.y, ax);
    std::vector<double> want;
    for (std::int64_t o = 0; o < outer; ++o) {
      want.insert(want.end(), x.data.begin() + o * nx, x.data.begin() + (o + 1) * nx);
      want.insert(want.end(), y.data.begin() + o * ny, y.data.begin() + (o + 1) * ny);
    }
    Dims out_dims = c.x;
    out_dims[ax] += c.y[ax];
    T joined = run1("concat", {{"axis", c.axis}}, {&x, &y});
    expect_close(joined, out_dims, want);
    // Splitting the result where x ends gives x and y back.
    auto parts = run("split", {{"axis", c.axis}, {"at", c.x[ax]}}, {&joined});
    ASSERT_EQ(parts.size(), 2u);
    expect_close(parts[0], x);
    expect_close(parts[1], y);
  }
  T x = random_tensor({2, 3}, rng), y = random_tensor({3, 3}, rng);
  EXPECT_THROW(run("concat", {{"axis", 1}}, {&x, &y}), LoomError);  // rows differ
  EXPECT_THROW(run("split", {{"axis", 1}, {"at", 3}}, {&x}), LoomError);
  EXPECT_THROW(run("split", {{"axis", 0}, {"at", 0}}, {&x}), LoomError);
}

TEST(OpsNumeric, SplitAtEveryPosition) {
  std::mt19937_64 rng(42);
  T x = random_tensor({3, 5, 2}, rng);
  for (std::int64_t at = 1; at < 5; ++at) {
    auto parts = run("split", {{"axis", 1}, {"at", at}}, {&x});
    T first({3, at, 2}), second({3, 5 - at, 2});
    for (std::int64_t i = 0; i < 3; ++i)
      for (std::int64_t j = 0; j < 5; ++j)
        for (std::int64_t k = 0; k < 2; ++k) (j < at ? first.at({i, j, k}) : second.at({i, j - at, k})) = x.at({i, j, k});
    expect_close(parts[0], first);
    expect_close(parts[1], second);
  }
}

TEST(OpsNumeric, ReshapeAndFlattenKeepRowMajorOrder) {
  std::mt19937_64 rng(43);
  T m = random_tensor({3, 4}, rng);
  for (auto [r, c] : std::vector<std::array<std::int64_t, 2>>{{2, 6}, {12, 1}, {1, 12}, {4, 3}, {3, 4}})
    expect_close(run1("reshape", {{"rows", r}, {"cols", c}}, {&m}), {r, c}, m.data);
  EXPECT_THROW(run("reshape", {{"rows", 5}, {"cols", 2}}, {&m}), LoomError);
  T q = random_tensor({2, 3, 2, 2}, rng);
  for (auto [r, c] : std::vector<std::array<std::int64_t, 2>>{{6, 4}, {24, 1}, {4, 6}, {2, 12}})
    expect_close(run1("reshape_4d", {{"rows", r}, {"cols", c}}, {&q}), {r, c}, q.data);
  for (const Dims& d : std::vector<Dims>{{2, 3, 2, 2}, {1, 2, 3, 4}, {3, 1, 1, 2}}) {
    T x = random_tensor(d, rng);
    expect_close(run1("flatten", {}, {&x}), {d[0], d[1] * d[2] * d[3]}, x.data);
  }
}

TEST(OpsNumeric, Reductions) {
  std::mt19937_64 rng(44);
  for (const Dims& d : std::vector<Dims>{{5}, {3, 4}, {2, 3, 6}}) {
    T x = random_tensor(d, rng);
    const std::int64_t n = d.back(), rows = prod(d) / n;
    Dims out(d.begin(), d.end() - 1);
    std::vector<double> sums, means;
    for (std::int64_t r = 0; r < rows; ++r) {
      double s = 0;
      for (std::int64_t j = 0; j < n; ++j) s += x.data[static_cast<std::size_t>(r * n + j)];
      sums.push_back(s);
      means.push_back(s / static_cast<double>(n));
    }
    expect_close(run1("reduce_sum", {}, {&x}), out, sums);
    expect_close(run1("reduce_mean", {}, {&x}), out, means);
    // Over the first axis.
    const std::int64_t n0 = d[0], rest = prod(d) / n0;
    std::vector<double> col(static_cast<std::size_t>(rest), 0.0);
    for (std::int64_t i = 0; i < n0; ++i)
      for (std::int64_t j = 0; j < rest; ++j) col[static_cast<std::size_t>(j)] += x.data[static_cast<std::size_t>(i * rest + j)];
    if (d.size() > 1) expect_close(run1("reduce_sum_axis0", {}, {&x}), Dims(d.begin() + 1, d.end()), col);
  }
}

TEST(OpsNumeric, SoftmaxAndLayerNorm) {
  std::mt19937_64 rng(45);
  for (const Dims& d : std::vector<Dims>{{5}, {3, 4}, {2, 3, 6}}) {
    for (double scale : {1.0, 30.0}) {
      T x = random_tensor(d, rng, -scale, scale);
      const std::int64_t n = d.back(), rows = prod(d) / n;
      std::vector<double> soft;
      for (std::int64_t r = 0; r < rows; ++r) {
        double z = 0;
        for (std::int64_t j = 0; j < n; ++j) z += std::exp(x.data[static_cast<std::size_t>(r * n + j)]);
        for (std::int64_t j = 0; j < n; ++j) soft.push_back(std::exp(x.data[static_cast<std::size_t>(r * n + j)]) / z);
      }
      expect_close(run1("softmax", {}, {&x}), d, soft);
      double row_total = std::accumulate(soft.begin(), soft.begin() + n, 0.0);
      EXPECT_NEAR(row_total, 1.0, 1e-12);

      T gamma = random_tensor({n}, rng), beta = random_tensor({n}, rng);
      std::vector<double> norm;
      for (std::int64_t r = 0; r < rows; ++r) {
        double mu = 0, var = 0;
        for (std::int64_t j = 0; j < n; ++j) mu += x.data[static_cast<std::size_t>(r * n + j)];
        mu /= static_cast<double>(n);
        for (std::int64_t j = 0; j < n; ++j) var += std::pow(x.data[static_cast<std::size_t>(r * n + j)] - mu, 2);
        var /= static_cast<double>(n);  // biased
        for (std::int64_t j = 0; j < n; ++j)
          norm.push_back((x.data[static_cast<std::size_t>(r * n + j)] - mu) / std::sqrt(var + 1e-5) *
                             gamma.data[static_cast<std::size_t>(j)] +
                         beta.data[static_cast<std::size_t>(j)]);
      }
      expect_close(run1("layer_norm", {}, {&x, &gamma, &beta}), d, norm, 1e-8);
    }
  }
}

TEST(OpsNumeric, EmbeddingAndBag) {
  std::mt19937_64 rng(46);
  for (auto [b, v, d] : std::vector<std::array<std::int64_t, 3>>{{4, 6, 3}, {1, 1, 5}, {7, 3, 2}}) {
    SCOPED_TRACE("b " + std::to_string(b) + " v " + std::to_string(v) + " d " + std::to_string(d));
    T table = random_tensor({v, d}, rng);
    T ids = random_ints({b}, rng, 0, static_cast<int>(v - 1));
    std::vector<double> want;
    for (double id : ids.data)
      for (std::int64_t j = 0; j < d; ++j) want.push_back(table.at({static_cast<std::int64_t>(id), j}));
    expect_close(run1("embedding", {}, {&ids, &table}), {b, d}, want);
    for (std::int64_t l : {1, 3}) {
      T bag = random_ints({b, l}, rng, 0, static_cast<int>(v - 1));
      std::vector<double> sums(static_cast<std::size_t>(b * d), 0.0);
      for (std::int64_t i = 0; i < b; ++i)
        for (std::int64_t t = 0; t < l; ++t)
          for (std::int64_t j = 0; j < d; ++j)
            sums[static_cast<std::size_t>(i * d + j)] += table.at({static_cast<std::int64_t>(bag.at({i, t})), j});
      expect_close(run1("embedding_bag", {}, {&bag, &table}), {b, d}, sums);
    }
  }
}

// ---- constants ----------------------------------------------------------------------------------

TEST(OpsNumeric, ConstantOperators) {
  for (std::int64_t n : {1, 3, 5}) {
    RowMat eye = RowMat::Identity(n, n);
    expect_close(run1("const_imm", {{"n", n}}, {}), {n, n}, to_vector(eye));
  }
  for (auto [m, n] : std::vector<std::array<std::int64_t, 2>>{{1, 1}, {2, 5}, {4, 3}})
    expect_close(run1("const_one", {{"m", m}, {"n", n}}, {}), {m, n}, std::vector<double>(static_cast<std::size_t>(m * n), 1.0));
  for (auto [c, kh, kw] : std::vector<std::array<std::int64_t, 3>>{{1, 1, 1}, {2, 3, 3}, {3, 5, 1}, {2, 1, 3}}) {
    T iconv({c, c, kh, kw}, 0.0), pool({c, c, kh, kw}, 0.0);
    for (std::int64_t f = 0; f < c; ++f) {
      iconv.at({f, f, (kh - 1) / 2, (kw - 1) / 2}) = 1;
      for (std::int64_t r = 0; r < kh; ++r)
        for (std::int64_t s = 0; s < kw; ++s) pool.at({f, f, r, s}) = 1.0 / static_cast<double>(kh * kw);
    }
    expect_close(run1("const_iconv", {{"c", c}, {"kh", kh}, {"kw", kw}}, {}), iconv);
    expect_close(run1("const_pool", {{"c", c}, {"kh", kh}, {"kw", kw}}, {}), pool);
  }
  // The identity kernel really is one: convolving with it (same padding) returns the input.
  std::mt19937_64 rng(51);
  T x = random_tensor({2, 3, 5, 4}, rng);
  T k = run1("const_iconv", {{"c", 3}, {"kh", 3}, {"kw", 5}}, {});
  expect_close(run1("conv2d", {{"stride_h", 1}, {"stride_w", 1}, {"pad_h", 1}, {"pad_w", 2}, {"act", 0}}, {&x, &k}), x);
  EXPECT_THROW(run("const_imm", {{"n", 0}}, {}), LoomError);
  EXPECT_THROW(run("const_iconv", {{"c", 2}, {"kh", 2}, {"kw", 3}}, {}), LoomError);  // kh outside {1, 3, 5}
}

// Guards the list above: a new bundled op needs a numeric test here.
TEST(OpsNumeric, EveryBundledOpIsCovered) {
  const std::set<std::string> tested = {
      "matmul", "matmul_relu", "batch_matmul", "linear", "linear_nobias", "bias_add", "transpose", "enlarge", "conv2d", "conv2d_grouped",
      "conv2d_depthwise", "pool2d_max", "pool2d_avg", "batchnorm", "relu", "sigmoid", "tanh", "gelu", "dropout", "identity", "ewadd",
      "ewsub", "ewmul", "ewdiv", "scalar_mul", "concat", "split", "reshape", "reshape_4d", "flatten", "reduce_sum", "reduce_mean",
      "reduce_sum_axis0", "softmax", "layer_norm", "embedding", "embedding_bag", "const_iconv", "const_pool", "const_imm", "const_one",
      // specs/ops/models.loom, tested against loops in tests/models/test_model_ops.cpp
      "erf", "sqrt", "exp", "scalar_add", "scalar_pow", "clip", "layer_norm_eps", "bias_add_axis", "swap_axes", "merge_axes", "split_axis",
      "squeeze_axis", "unsqueeze_axis", "expand_axis", "slice_axis", "pad_axis", "reduce_mean_keep", "global_avg_pool", "gather_rows",
      "head_proj", "head_proj_nobias", "head_merge", "attention_scores", "causal_mask", "add_relative_bias", "add_pair_bias",
      "dot_attention", "lstm_cell", "window_partition", "window_reverse", "cyclic_shift", "add_window_mask", "outer_product_mean",
      "triangle_mult_out", "triangle_mult_in", "stop_gradient"};
  for (const auto* op : bundled().ops()) EXPECT_TRUE(tested.count(op->name)) << op->name << " has no numeric test";
}

// ---- exact (modular) evaluation agrees with doubles on small integers --------------------------

using M = ModularDomain;

void expect_modular_matches(const std::string& op, const pcg::AttrMap& attrs, const std::vector<T>& inputs) {
  SCOPED_TRACE(op);
  std::vector<Dims> dims;
  std::vector<const T*> real_in;
  std::vector<Tensor<M::Value>> mod_store;
  for (const auto& t : inputs) {
    dims.push_back(t.dims);
    real_in.push_back(&t);
    Tensor<M::Value> m(t.dims);
    for (std::size_t i = 0; i < t.size(); ++i) m.data[i] = M::from_int(static_cast<std::int64_t>(t.data[i]));
    mod_store.push_back(std::move(m));
  }
  std::vector<const Tensor<M::Value>*> mod_in;
  for (const auto& m : mod_store) mod_in.push_back(&m);
  Program p = bundled().instantiate(op, attrs, dims);
  auto real = evaluate<RealDomain>(p, real_in);
  auto exact = evaluate<M>(p, mod_in);
  ASSERT_EQ(real.size(), exact.size());
  for (std::size_t o = 0; o < real.size(); ++o) {
    ASSERT_EQ(real[o].dims, exact[o].dims);
    for (std::size_t i = 0; i < real[o].size(); ++i) {
      double r = real[o].data[i];
      ASSERT_EQ(r, std::round(r)) << "element " << i << " is not an integer in double mode";
      ASSERT_EQ(M::signed_value(exact[o].data[i]), static_cast<std::int64_t>(r)) << "output " << o << " element " << i;
    }
  }
}

TEST(OpsModular, PolynomialOpsAgreeWithDoubles) {
  std::mt19937_64 rng(61);
  for (int round = 0; round < 3; ++round) {
    expect_modular_matches("matmul", {}, {random_ints({3, 4}, rng, -5, 5), random_ints({4, 2}, rng, -5, 5)});
    expect_modular_matches("batch_matmul", {}, {random_ints({2, 3, 4}, rng, -5, 5), random_ints({2, 4, 3}, rng, -5, 5)});
    expect_modular_matches("ewadd", {}, {random_ints({2, 3, 2}, rng, -9, 9), random_ints({2, 3, 2}, rng, -9, 9)});
    expect_modular_matches("ewsub", {}, {random_ints({5}, rng, -9, 9), random_ints({5}, rng, -9, 9)});
    expect_modular_matches("ewmul", {}, {random_ints({4, 3}, rng, -9, 9), random_ints({4, 3}, rng, -9, 9)});
    expect_modular_matches("conv2d", {{"stride_h", 2}, {"stride_w", 1}, {"pad_h", 1}, {"pad_w", 2}, {"act", 0}},
                           {random_ints({2, 3, 5, 5}, rng, -4, 4), random_ints({2, 3, 3, 2}, rng, -4, 4)});
    expect_modular_matches("concat", {{"axis", 1}}, {random_ints({2, 3, 2}, rng, -9, 9), random_ints({2, 1, 2}, rng, -9, 9)});
    expect_modular_matches("concat", {{"axis", 0}}, {random_ints({1, 4}, rng, -9, 9), random_ints({3, 4}, rng, -9, 9)});
    expect_modular_matches("transpose", {}, {random_ints({2, 3, 4}, rng, -9, 9)});
    expect_modular_matches("relu", {}, {random_ints({3, 5}, rng, -9, 9)});
    expect_modular_matches("linear", {}, {random_ints({3, 4}, rng, -5, 5), random_ints({4, 2}, rng, -5, 5), random_ints({2}, rng, -5, 5)});
    expect_modular_matches("reduce_sum", {}, {random_ints({3, 6}, rng, -9, 9)});
    expect_modular_matches("pool2d_max", {{"kh", 2}, {"kw", 2}, {"stride", 1}, {"pad", 1}}, {random_ints({1, 2, 3, 3}, rng, -9, -1)});
    expect_modular_matches("split", {{"axis", 1}, {"at", 2}}, {random_ints({2, 5}, rng, -9, 9)});
    expect_modular_matches("embedding", {}, {random_ints({4}, rng, 0, 5), random_ints({6, 3}, rng, -9, 9)});
  }
}

TEST(OpsModular, ReluKeepsTheSignOfSignedRepresentatives) {
  T x({6});
  x.data = {-3, -1, 0, 1, 2, -100};
  expect_modular_matches("relu", {}, {x});
  Tensor<M::Value> m({6});
  for (std::size_t i = 0; i < 6; ++i) m.data[i] = M::from_int(static_cast<std::int64_t>(x.data[i]));
  Program p = bundled().instantiate("relu", {}, {{6}});
  auto out = evaluate<M>(p, {&m});
  const std::vector<std::int64_t> want = {0, 0, 0, 1, 2, 0};
  for (std::size_t i = 0; i < 6; ++i) EXPECT_EQ(M::signed_value(out[0].data[i]), want[i]);
}

}  // namespace
}  // namespace loom::spec
