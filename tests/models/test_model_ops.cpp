// The operators of specs/ops/models.loom, evaluated by the interpreter and compared with loops
// written here from each operator's definition; and the parallelism their comprehensions give.
#include <cmath>
#include <functional>

#include "loom/interpreter/evaluate.hpp"
#include "loom/pcg/diagnostic.hpp"
#include "support.hpp"

namespace loom::models::test {
namespace {

using std::int64_t;
using T = TensorValue;
using Index = std::vector<int64_t>;

std::vector<T> run(const std::string& op, const pcg::AttrMap& attrs, const std::vector<const T*>& inputs) {
  std::vector<std::vector<int64_t>> dims;
  for (const T* t : inputs) dims.push_back(t->dims);
  return spec::evaluate<spec::RealDomain>(library().instantiate(op, attrs, dims), inputs);
}

T run1(const std::string& op, const pcg::AttrMap& attrs, const std::vector<const T*>& inputs) { return run(op, attrs, inputs).at(0); }

// A tensor of `dims` whose element at each index is f(index).
T make(const std::vector<int64_t>& dims, const std::function<double(const Index&)>& f) {
  T t(dims);
  Index idx(dims.size(), 0);
  for (std::size_t flat = 0; flat < t.size(); ++flat) {
    std::size_t rest = flat;
    for (std::size_t k = dims.size(); k-- > 0;) {
      idx[k] = static_cast<int64_t>(rest % static_cast<std::size_t>(dims[k]));
      rest /= static_cast<std::size_t>(dims[k]);
    }
    t.data[flat] = f(idx);
  }
  return t;
}

T scalar(double v) {
  T t(std::vector<int64_t>{});
  t.data = {v};
  return t;
}

double sigmoid(double z) { return 1 / (1 + std::exp(-z)); }

TEST(ModelOps, Elementwise) {
  const T x = random_tensor({2, 3}, 1), c = scalar(0.75), lo = scalar(-0.2), hi = scalar(0.3);
  const T pos = make({2, 3}, [&](const Index& i) { return 0.1 + std::abs(x.at(i)); });
  expect_near_all(run1("erf", {}, {&x}), make({2, 3}, [&](const Index& i) { return std::erf(x.at(i)); }));
  expect_near_all(run1("sqrt", {}, {&pos}), make({2, 3}, [&](const Index& i) { return std::sqrt(pos.at(i)); }));
  expect_near_all(run1("exp", {}, {&x}), make({2, 3}, [&](const Index& i) { return std::exp(x.at(i)); }));
  expect_near_all(run1("scalar_add", {}, {&x, &c}), make({2, 3}, [&](const Index& i) { return x.at(i) + 0.75; }));
  expect_near_all(run1("scalar_pow", {}, {&pos, &c}), make({2, 3}, [&](const Index& i) { return std::pow(pos.at(i), 0.75); }));
  expect_near_all(run1("clip", {}, {&x, &lo, &hi}), make({2, 3}, [&](const Index& i) { return std::min(std::max(x.at(i), -0.2), 0.3); }));
}

TEST(ModelOps, LayerNormWithEpsilonInput) {
  const T x = random_tensor({3, 5}, 2), g = random_tensor({5}, 3), b = random_tensor({5}, 4), eps = scalar(0.01);
  const T y = run1("layer_norm_eps", {}, {&x, &g, &b, &eps});
  for (int64_t r = 0; r < 3; ++r) {
    double mu = 0, var = 0;
    for (int64_t k = 0; k < 5; ++k) mu += x.at({r, k}) / 5;
    for (int64_t k = 0; k < 5; ++k) var += (x.at({r, k}) - mu) * (x.at({r, k}) - mu) / 5;
    for (int64_t k = 0; k < 5; ++k) {
      EXPECT_NEAR(y.at({r, k}), (x.at({r, k}) - mu) / std::sqrt(var + 0.01) * g.at({k}) + b.at({k}), 1e-12);
    }
  }
}

TEST(ModelOps, OneAxisLayoutOperators) {
  const T x = random_tensor({2, 3, 4}, 5), bias = random_tensor({3}, 6);
  expect_near_all(run1("bias_add_axis", {{"axis", 1}}, {&x, &bias}),
                  make({2, 3, 4}, [&](const Index& i) { return x.at(i) + bias.at({i[1]}); }));
  expect_near_all(run1("swap_axes", {{"axis", 1}}, {&x}), make({2, 4, 3}, [&](const Index& i) { return x.at({i[0], i[2], i[1]}); }));
  expect_near_all(run1("stop_gradient", {}, {&x}), make({2, 3, 4}, [&](const Index& i) { return x.at(i); }));
  expect_near_all(run1("merge_axes", {{"axis", 1}}, {&x}), make({2, 12}, [&](const Index& i) { return x.at({i[0], i[1] / 4, i[1] % 4}); }));
  expect_near_all(run1("split_axis", {{"axis", 2}, {"parts", 2}}, {&x}), make({2, 3, 2, 2}, [&](const Index& i) {
                    return x.at({i[0], i[1], i[2] * 2 + i[3]});
                  }));
  expect_near_all(run1("unsqueeze_axis", {{"axis", 3}}, {&x}), make({2, 3, 4, 1}, [&](const Index& i) {
                    return x.at({i[0], i[1], i[2]});
                  }));
  const T one = random_tensor({2, 1, 4}, 7);
  expect_near_all(run1("squeeze_axis", {{"axis", 1}}, {&one}), make({2, 4}, [&](const Index& i) { return one.at({i[0], 0, i[1]}); }));
  expect_near_all(run1("expand_axis", {{"axis", 1}, {"size", 3}}, {&one}), make({2, 3, 4}, [&](const Index& i) {
                    return one.at({i[0], 0, i[2]});
                  }));
  expect_near_all(run1("slice_axis", {{"axis", 2}, {"start", 1}, {"size", 2}}, {&x}), make({2, 3, 2}, [&](const Index& i) {
                    return x.at({i[0], i[1], i[2] + 1});
                  }));
  expect_near_all(run1("pad_axis", {{"axis", 0}, {"before", 1}, {"after", 2}}, {&x}), make({5, 3, 4}, [&](const Index& i) {
                    return i[0] >= 1 && i[0] < 3 ? x.at({i[0] - 1, i[1], i[2]}) : 0.0;
                  }));
  expect_near_all(run1("reduce_mean_keep", {{"axis", 1}}, {&x}), make({2, 1, 4}, [&](const Index& i) {
                    return (x.at({i[0], 0, i[2]}) + x.at({i[0], 1, i[2]}) + x.at({i[0], 2, i[2]})) / 3;
                  }));
  EXPECT_THROW(run("slice_axis", {{"axis", 2}, {"start", 3}, {"size", 2}}, {&x}), LoomError);
  EXPECT_THROW(run("split_axis", {{"axis", 1}, {"parts", 2}}, {&x}), LoomError);
}

TEST(ModelOps, PoolingAndLookups) {
  const T x = random_tensor({2, 3, 4, 5}, 8);
  expect_near_all(run1("global_avg_pool", {}, {&x}), make({2, 3, 1, 1}, [&](const Index& i) {
                    double s = 0;
                    for (int64_t r = 0; r < 4; ++r)
                      for (int64_t c = 0; c < 5; ++c) s += x.at({i[0], i[1], r, c});
                    return s / 20;
                  }));
  const T table = random_tensor({6, 2, 3}, 9);
  T ids({2, 2});
  ids.data = {5, 0, 3, 3};
  expect_near_all(run1("gather_rows", {}, {&ids, &table}), make({2, 2, 2, 3}, [&](const Index& i) {
                    return table.at({static_cast<int64_t>(ids.at({i[0], i[1]})), i[2], i[3]});
                  }));
}

TEST(ModelOps, AttentionPieces) {
  const int64_t b = 2, s = 3, k = 4, h = 2, d = 3, n = 5;
  const T x = random_tensor({b, s, k}, 10), w = random_tensor({h, k, d}, 11), bias = random_tensor({h, d}, 12);
  const T proj = make({b, h, s, d}, [&](const Index& i) {
    double acc = bias.at({i[1], i[3]});
    for (int64_t p = 0; p < k; ++p) acc += x.at({i[0], i[2], p}) * w.at({i[1], p, i[3]});
    return acc;
  });
  expect_near_all(run1("head_proj", {}, {&x, &w, &bias}), proj);
  expect_near_all(run1("head_proj_nobias", {}, {&x, &w}), make({b, h, s, d}, [&](const Index& i) {
                    return proj.at(i) - bias.at({i[1], i[3]});
                  }));
  const T wo = random_tensor({h, d, n}, 13), bo = random_tensor({n}, 14);
  expect_near_all(run1("head_merge", {}, {&proj, &wo, &bo}), make({b, s, n}, [&](const Index& i) {
                    double acc = bo.at({i[2]});
                    for (int64_t a = 0; a < h; ++a)
                      for (int64_t p = 0; p < d; ++p) acc += proj.at({i[0], a, i[1], p}) * wo.at({a, p, i[2]});
                    return acc;
                  }));
  const T q = random_tensor({b, h, s, d}, 15), kk = random_tensor({b, h, 4, d}, 16);
  const T scores = make({b, h, s, 4}, [&](const Index& i) {
    double acc = 0;
    for (int64_t p = 0; p < d; ++p) acc += q.at({i[0], i[1], i[2], p}) * kk.at({i[0], i[1], i[3], p});
    return acc / std::sqrt(static_cast<double>(d));
  });
  expect_near_all(run1("attention_scores", {}, {&q, &kk}), scores);
  const T square = random_tensor({b, s, s}, 17);
  const T masked = run1("causal_mask", {}, {&square});
  for (int64_t i = 0; i < b; ++i)
    for (int64_t r = 0; r < s; ++r)
      for (int64_t c = 0; c < s; ++c) {
        if (c <= r)
          EXPECT_EQ(masked.at({i, r, c}), square.at({i, r, c}));
        else
          EXPECT_TRUE(std::isinf(masked.at({i, r, c})) && masked.at({i, r, c}) < 0);
      }
  const T rel = random_tensor({s, 4, h}, 18);
  const T sc = random_tensor({b, h, s, 4}, 19);
  expect_near_all(run1("add_relative_bias", {}, {&sc, &rel}), make({b, h, s, 4}, [&](const Index& i) {
                    return sc.at(i) + rel.at({i[2], i[3], i[1]});
                  }));
  const T five = random_tensor({b, 2, h, s, 4}, 20), pair = random_tensor({b, s, 4, h}, 21);
  expect_near_all(run1("add_pair_bias", {}, {&five, &pair}), make({b, 2, h, s, 4}, [&](const Index& i) {
                    return five.at(i) + pair.at({i[0], i[3], i[4], i[2]});
                  }));
  const T mask = random_tensor({2, s, 4}, 22), windows = random_tensor({4, h, s, 4}, 23);
  expect_near_all(run1("add_window_mask", {}, {&windows, &mask}), make({4, h, s, 4}, [&](const Index& i) {
                    return windows.at(i) + mask.at({i[0] % 2, i[2], i[3]});
                  }));
  const T query = random_tensor({b, d}, 24), memory = random_tensor({b, 4, d}, 25);
  expect_near_all(run1("dot_attention", {}, {&query, &memory}), make({b, d}, [&](const Index& i) {
                    std::vector<double> e(4);
                    double total = 0;
                    for (int64_t u = 0; u < 4; ++u) {
                      double dot = 0;
                      for (int64_t p = 0; p < d; ++p) dot += query.at({i[0], p}) * memory.at({i[0], u, p});
                      e[static_cast<std::size_t>(u)] = std::exp(dot);
                      total += e[static_cast<std::size_t>(u)];
                    }
                    double out = 0;
                    for (int64_t u = 0; u < 4; ++u) out += e[static_cast<std::size_t>(u)] / total * memory.at({i[0], u, i[1]});
                    return out;
                  }));
}

TEST(ModelOps, LstmCell) {
  const int64_t b = 2, k = 3, n = 2;
  const T x = random_tensor({b, k}, 30), h = random_tensor({b, n}, 31), c = random_tensor({b, n}, 32), w = random_tensor({k, 4 * n}, 33),
          u = random_tensor({n, 4 * n}, 34), bias = random_tensor({4 * n}, 35);
  const auto out = run("lstm_cell", {}, {&x, &h, &c, &w, &u, &bias});
  for (int64_t i = 0; i < b; ++i) {
    std::vector<double> z(static_cast<std::size_t>(4 * n));
    for (int64_t j = 0; j < 4 * n; ++j) {
      double acc = bias.at({j});
      for (int64_t p = 0; p < k; ++p) acc += x.at({i, p}) * w.at({p, j});
      for (int64_t q = 0; q < n; ++q) acc += h.at({i, q}) * u.at({q, j});
      z[static_cast<std::size_t>(j)] = acc;
    }
    for (int64_t j = 0; j < n; ++j) {
      auto gate = [&](int64_t g) { return z[static_cast<std::size_t>(g * n + j)]; };
      const double cell = sigmoid(gate(1)) * c.at({i, j}) + sigmoid(gate(0)) * std::tanh(gate(2));
      EXPECT_NEAR(out.at(1).at({i, j}), cell, 1e-12);
      EXPECT_NEAR(out.at(0).at({i, j}), sigmoid(gate(3)) * std::tanh(cell), 1e-12);
    }
  }
  const T wrong = random_tensor({k, 3 * n}, 36);
  EXPECT_THROW(run("lstm_cell", {}, {&x, &h, &c, &wrong, &u, &bias}), LoomError);
}

TEST(ModelOps, WindowsAndShifts) {
  const T x = random_tensor({2, 4, 6, 3}, 40);
  // 2 x 3 windows of 2 x 2 per image.
  expect_near_all(run1("window_partition", {{"ws", 2}}, {&x}), make({12, 4, 3}, [&](const Index& i) {
                    const int64_t image = i[0] / 6, window = i[0] % 6;
                    return x.at({image, (window / 3) * 2 + i[1] / 2, (window % 3) * 2 + i[1] % 2, i[2]});
                  }));
  const T w = random_tensor({12, 4, 3}, 41);
  expect_near_all(run1("window_reverse", {{"ws", 2}, {"height", 4}, {"width", 6}}, {&w}), make({2, 4, 6, 3}, [&](const Index& i) {
                    return w.at({i[0] * 6 + (i[1] / 2) * 3 + i[2] / 2, (i[1] % 2) * 2 + i[2] % 2, i[3]});
                  }));
  expect_near_all(run1("cyclic_shift", {{"sh", 1}, {"sw", 4}}, {&x}), make({2, 4, 6, 3}, [&](const Index& i) {
                    return x.at({i[0], (i[1] + 1) % 4, (i[2] + 4) % 6, i[3]});
                  }));
}

TEST(ModelOps, PairRepresentationUpdates) {
  const T a = random_tensor({2, 3, 4, 2}, 50), b = random_tensor({2, 3, 5, 3}, 51);
  expect_near_all(run1("outer_product_mean", {}, {&a, &b}), make({2, 4, 5, 6}, [&](const Index& i) {
                    double acc = 0;
                    for (int64_t t = 0; t < 3; ++t) acc += a.at({i[0], t, i[1], i[3] / 3}) * b.at({i[0], t, i[2], i[3] % 3});
                    return acc / 3;
                  }));
  const T l = random_tensor({2, 4, 4, 3}, 52), r = random_tensor({2, 4, 4, 3}, 53);
  expect_near_all(run1("triangle_mult_out", {}, {&l, &r}), make({2, 4, 4, 3}, [&](const Index& i) {
                    double acc = 0;
                    for (int64_t k = 0; k < 4; ++k) acc += l.at({i[0], i[1], k, i[3]}) * r.at({i[0], i[2], k, i[3]});
                    return acc;
                  }));
  expect_near_all(run1("triangle_mult_in", {}, {&l, &r}), make({2, 4, 4, 3}, [&](const Index& i) {
                    double acc = 0;
                    for (int64_t k = 0; k < 4; ++k) acc += l.at({i[0], k, i[1], i[3]}) * r.at({i[0], k, i[2], i[3]});
                    return acc;
                  }));
}

// Attention-head parallelism comes out of head_proj's comprehension: splitting the weight's heads
// splits the output's head dimension; splitting the contracted features gives partial sums.
TEST(ModelOps, HeadProjectionParallelismIsDerived) {
  auto shape = [](std::vector<int64_t> dims, std::vector<int64_t> D, int64_t V, int64_t R) {
    return pcg::ParallelShape::partitioned(std::move(dims), std::move(D), V, R);
  };
  const auto heads =
      library().infer("head_proj", {}, {shape({2, 3, 4}, {1, 1, 1}, 1, 2), shape({2, 4, 3}, {2, 1, 1}, 1, 1), shape({2, 3}, {2, 1}, 1, 1)});
  EXPECT_EQ(heads.at(0).D, (std::vector<int64_t>{1, 2, 1, 1}));
  const auto reduction = library().infer("head_proj_nobias", {}, {shape({2, 3, 4}, {1, 1, 2}, 1, 1), shape({2, 4, 3}, {1, 2, 1}, 1, 1)});
  EXPECT_EQ(reduction.at(0).V, 2);
  // merge_axes reads its merged index through arithmetic: that dimension cannot be split.
  EXPECT_THROW(library().infer("merge_axes", {{"axis", 0}}, {shape({4, 3}, {2, 1}, 1, 1)}), LoomError);
}

}  // namespace
}  // namespace loom::models::test
