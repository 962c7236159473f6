// Value semantics of the expression language (docs/language.md, "Expressions"): comparisons and
// logic give 1 or 0, the functions, indices and attributes as values, floor division and modulo
// in index arithmetic and output dimensions, reductions with inferred and explicit ranges, lets,
// `??`, select and `?:`, in double and (where exact) modular evaluation.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "loom/interpreter/evaluate.hpp"
#include "loom/interpreter/library.hpp"

namespace loom::spec {
namespace {

using T = Tensor<double>;
using Dims = std::vector<std::int64_t>;

const char* kSpec = R"(
op cmp(x: [n], y: [n]) -> (lt: [n], le: [n], gt: [n], ge: [n], eq: [n], ne: [n]) {
  lt[i] = x[i] < y[i];
  le[i] = x[i] <= y[i];
  gt[i] = x[i] > y[i];
  ge[i] = x[i] >= y[i];
  eq[i] = x[i] == y[i];
  ne[i] = x[i] != y[i];
}

op logic(x: [n], y: [n]) -> (a: [n], o: [n], nx: [n], neg: [n]) {
  a[i] = x[i] && y[i];
  o[i] = x[i] || y[i];
  nx[i] = !x[i];
  neg[i] = -x[i];
}

op fns(x: [n]) -> (e: [n], l: [n], t: [n], s: [n], q: [n], ab: [n], er: [n], pw: [n], mx: [n], mn: [n]) {
  e[i] = exp(x[i]);
  l[i] = log(abs(x[i]) + 1);
  t[i] = tanh(x[i]);
  s[i] = sigmoid(x[i]);
  q[i] = sqrt(abs(x[i]));
  ab[i] = abs(x[i]);
  er[i] = erf(x[i]);
  pw[i] = pow(abs(x[i]), 1.5);
  mx[i] = max(x[i], 0.25);
  mn[i] = min(x[i], 0.25);
}

op idx<k: int>(x: [n]) -> (v: [n], fl: [n], md: [n], diag: [n, n]) {
  v[i] = i * 10 + k + n;
  fl[i] = x[(i - 3) / 2 + 1];
  md[i] = x[(i - 3) % n];
  diag[i, j] = select(i == j, 1, 0) * x[j];
}

op dims<a: int, b: int>(x: [n]) -> [min(n, a), max(n, b), n > a ? n - a : 1, (n + 1) / 2, (0 - n) / 2 + n + 1] {
  out[p, q, r, s, t] = p + q + r + s + t;
}

op reductions(x: [n, m]) -> (mx: [n], mn: [n], first2: [n], weighted: []) {
  mx[i] = max(j) x[i, j];
  mn[i] = min(j) x[i, j];
  first2[i] = sum(j < 2) x[i, j];
  weighted[] = sum(i, j) (x[i, j] * (i + 1));
}

op chain(x: [n]) -> [n] {
  let a[i] = x[i] * 2;
  let b[i] = a[i] + 1;
  out[i] = b[i] * a[i];
}

op shifted(x: [n]) -> (z: [n], c: [n], f: [n]) {
  z[i] = x[i + 1];
  c[i] = x[i + 1] ?? 7;
  f[i] = x[i + 1] ?? -inf;
}

op choose<k: int>(x: [n]) -> (t: [n], s: [n]) {
  t[i] = k > 0 ? x[i] : 0 - x[i];
  s[i] = select(x[i] > 0, x[i], 2 * x[i]);
}
)";

const Library& lib() {
  static Library l = Library::from_text(kSpec, "expressions.loom");
  return l;
}

std::vector<T> run(const std::string& op, const pcg::AttrMap& attrs, const std::vector<const T*>& inputs) {
  std::vector<Dims> dims;
  for (const auto* t : inputs) dims.push_back(t->dims);
  return evaluate<RealDomain>(lib().instantiate(op, attrs, dims), inputs);
}

T vec(std::vector<double> v) {
  T t({static_cast<std::int64_t>(v.size())});
  t.data = std::move(v);
  return t;
}

TEST(Expressions, ComparisonsGiveOneOrZero) {
  T x = vec({-1, 0, 2, 3.5, -4}), y = vec({0, 0, 1, 3.5, -5});
  auto o = run("cmp", {}, {&x, &y});
  ASSERT_EQ(o.size(), 6u);
  for (std::size_t i = 0; i < x.size(); ++i) {
    double a = x.data[i], b = y.data[i];
    EXPECT_EQ(o[0].data[i], a < b ? 1 : 0);
    EXPECT_EQ(o[1].data[i], a <= b ? 1 : 0);
    EXPECT_EQ(o[2].data[i], a > b ? 1 : 0);
    EXPECT_EQ(o[3].data[i], a >= b ? 1 : 0);
    EXPECT_EQ(o[4].data[i], a == b ? 1 : 0);
    EXPECT_EQ(o[5].data[i], a != b ? 1 : 0);
  }
}

TEST(Expressions, LogicTreatsNonZeroAsTrue) {
  T x = vec({0, 0, 2, -0.5}), y = vec({0, 3, 0, 1});
  auto o = run("logic", {}, {&x, &y});
  for (std::size_t i = 0; i < x.size(); ++i) {
    bool a = x.data[i] != 0, b = y.data[i] != 0;
    EXPECT_EQ(o[0].data[i], a && b ? 1 : 0);
    EXPECT_EQ(o[1].data[i], a || b ? 1 : 0);
    EXPECT_EQ(o[2].data[i], a ? 0 : 1);
    EXPECT_EQ(o[3].data[i], -x.data[i]);
  }
}

TEST(Expressions, Functions) {
  T x = vec({-2.5, -0.3, 0, 0.7, 1.9});
  auto o = run("fns", {}, {&x});
  ASSERT_EQ(o.size(), 10u);
  for (std::size_t i = 0; i < x.size(); ++i) {
    double v = x.data[i];
    EXPECT_DOUBLE_EQ(o[0].data[i], std::exp(v));
    EXPECT_DOUBLE_EQ(o[1].data[i], std::log(std::fabs(v) + 1));
    EXPECT_DOUBLE_EQ(o[2].data[i], std::tanh(v));
    EXPECT_DOUBLE_EQ(o[3].data[i], 1 / (1 + std::exp(-v)));
    EXPECT_DOUBLE_EQ(o[4].data[i], std::sqrt(std::fabs(v)));
    EXPECT_DOUBLE_EQ(o[5].data[i], std::fabs(v));
    EXPECT_DOUBLE_EQ(o[6].data[i], std::erf(v));
    EXPECT_DOUBLE_EQ(o[7].data[i], std::pow(std::fabs(v), 1.5));
    EXPECT_DOUBLE_EQ(o[8].data[i], std::max(v, 0.25));
    EXPECT_DOUBLE_EQ(o[9].data[i], std::min(v, 0.25));
  }
}

TEST(Expressions, IndicesAttributesAndFloorArithmetic) {
  const std::int64_t n = 6;
  T x({n});
  for (std::int64_t i = 0; i < n; ++i) x.data[static_cast<std::size_t>(i)] = 100 + static_cast<double>(i);
  auto o = run("idx", {{"k", 3}}, {&x});
  ASSERT_EQ(o.size(), 4u);
  auto floor_div = [](std::int64_t a, std::int64_t b) {
    return static_cast<std::int64_t>(std::floor(static_cast<double>(a) / static_cast<double>(b)));
  };
  for (std::int64_t i = 0; i < n; ++i) {
    auto I = static_cast<std::size_t>(i);
    EXPECT_EQ(o[0].data[I], static_cast<double>(i * 10 + 3 + n));
    std::int64_t at = floor_div(i - 3, 2) + 1;  // i = 0: -2 + 1 = -1, out of range
    EXPECT_EQ(o[1].data[I], at >= 0 && at < n ? x.data[static_cast<std::size_t>(at)] : 0.0) << "i = " << i;
    std::int64_t mod = ((i - 3) % n + n) % n;
    EXPECT_EQ(o[2].data[I], x.data[static_cast<std::size_t>(mod)]) << "i = " << i;
    for (std::int64_t j = 0; j < n; ++j) EXPECT_EQ(o[3].at({i, j}), i == j ? x.data[static_cast<std::size_t>(j)] : 0.0);
  }
}

TEST(Expressions, OutputDimensionExpressions) {
  for (std::int64_t n : {1, 2, 5, 8}) {
    for (auto [a, b] : std::vector<std::pair<std::int64_t, std::int64_t>>{{3, 4}, {1, 9}, {10, 1}}) {
      Program p = lib().instantiate("dims", {{"a", a}, {"b", b}}, {{n}});
      const auto& out = p.buffers[static_cast<std::size_t>(p.output_buffers[0])].dims;
      auto floor_div = [](std::int64_t x, std::int64_t y) {
        return static_cast<std::int64_t>(std::floor(static_cast<double>(x) / static_cast<double>(y)));
      };
      Dims want = {std::min(n, a), std::max(n, b), n > a ? n - a : 1, floor_div(n + 1, 2), floor_div(-n, 2) + n + 1};
      EXPECT_EQ(out, want) << "n = " << n << ", a = " << a << ", b = " << b;
      T x({n});
      auto o = evaluate<RealDomain>(p, {&x});
      // Each element is the sum of its own indices.
      for (std::size_t flat = 0; flat < o[0].size(); ++flat) {
        double s = 0;
        std::size_t rest = flat;
        for (std::size_t k = 5; k-- > 0;) {
          s += static_cast<double>(rest % static_cast<std::size_t>(want[k]));
          rest /= static_cast<std::size_t>(want[k]);
        }
        ASSERT_EQ(o[0].data[flat], s);
      }
    }
  }
}

TEST(Expressions, Reductions) {
  const std::int64_t n = 3, m = 4;
  T x({n, m});
  for (std::size_t i = 0; i < x.size(); ++i) x.data[i] = std::sin(static_cast<double>(i) * 1.3) * 5;
  auto o = run("reductions", {}, {&x});
  ASSERT_EQ(o.size(), 4u);
  EXPECT_TRUE(o[3].dims.empty());
  double weighted = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    double mx = -HUGE_VAL, mn = HUGE_VAL, first2 = 0;
    for (std::int64_t j = 0; j < m; ++j) {
      double v = x.at({i, j});
      mx = std::max(mx, v);
      mn = std::min(mn, v);
      if (j < 2) first2 += v;
      weighted += v * static_cast<double>(i + 1);
    }
    auto I = static_cast<std::size_t>(i);
    EXPECT_EQ(o[0].data[I], mx);
    EXPECT_EQ(o[1].data[I], mn);
    EXPECT_DOUBLE_EQ(o[2].data[I], first2);
  }
  EXPECT_NEAR(o[3].data[0], weighted, 1e-12);
}

TEST(Expressions, LetsFallbacksAndChoices) {
  T x = vec({1.5, -2, 0.5, 4});
  auto chain = run("chain", {}, {&x});
  for (std::size_t i = 0; i < x.size(); ++i) EXPECT_DOUBLE_EQ(chain[0].data[i], (2 * x.data[i] + 1) * (2 * x.data[i]));

  auto sh = run("shifted", {}, {&x});
  for (std::size_t i = 0; i + 1 < x.size(); ++i) {
    EXPECT_EQ(sh[0].data[i], x.data[i + 1]);
    EXPECT_EQ(sh[1].data[i], x.data[i + 1]);
    EXPECT_EQ(sh[2].data[i], x.data[i + 1]);
  }
  EXPECT_EQ(sh[0].data.back(), 0.0);  // out of range reads 0
  EXPECT_EQ(sh[1].data.back(), 7.0);  // ...or the fallback
  EXPECT_EQ(sh[2].data.back(), -HUGE_VAL);

  for (std::int64_t k : {1, -1}) {
    auto ch = run("choose", {{"k", k}}, {&x});
    for (std::size_t i = 0; i < x.size(); ++i) {
      EXPECT_EQ(ch[0].data[i], k > 0 ? x.data[i] : -x.data[i]);
      EXPECT_EQ(ch[1].data[i], x.data[i] > 0 ? x.data[i] : 2 * x.data[i]);
    }
  }
}

// The exact domain orders by signed representatives, so comparisons, max/min and select agree with
// doubles on small integers; division is exact (a * b^-1).
TEST(Expressions, ModularAgreesOnComparisonsAndChoices) {
  using M = ModularDomain;
  const std::vector<double> xs = {-3, 0, 2, 5, -7}, ys = {-3, 1, -2, 5, 0};
  auto to_mod = [](const std::vector<double>& v) {
    Tensor<M::Value> t({static_cast<std::int64_t>(v.size())});
    for (std::size_t i = 0; i < v.size(); ++i) t.data[i] = M::from_int(static_cast<std::int64_t>(v[i]));
    return t;
  };
  T x = vec(xs), y = vec(ys);
  auto mx = to_mod(xs), my = to_mod(ys);
  for (const char* op : {"cmp", "logic", "choose"}) {
    SCOPED_TRACE(op);
    pcg::AttrMap attrs;
    std::vector<const T*> real_in{&x, &y};
    std::vector<const Tensor<M::Value>*> mod_in{&mx, &my};
    if (std::string(op) == "choose") {
      attrs = {{"k", -1}};
      real_in.pop_back();
      mod_in.pop_back();
    }
    Program p = lib().instantiate(op, attrs, std::vector<Dims>(real_in.size(), Dims{5}));
    auto real = evaluate<RealDomain>(p, real_in);
    auto exact = evaluate<M>(p, mod_in);
    for (std::size_t o = 0; o < real.size(); ++o)
      for (std::size_t i = 0; i < 5; ++i) EXPECT_EQ(M::signed_value(exact[o].data[i]), static_cast<std::int64_t>(real[o].data[i]));
  }
  Program red = lib().instantiate("reductions", {}, {{1, 5}});
  Tensor<M::Value> row({1, 5});
  for (std::size_t i = 0; i < 5; ++i) row.data[i] = M::from_int(static_cast<std::int64_t>(xs[i]));
  auto r = evaluate<M>(red, {&row});
  EXPECT_EQ(M::signed_value(r[0].data[0]), 5);
  EXPECT_EQ(M::signed_value(r[1].data[0]), -7);
  EXPECT_EQ(M::signed_value(r[2].data[0]), -3);
}

}  // namespace
}  // namespace loom::spec
