// The rewrite engine on graphs over the bundled operator library: random sequences of rule
// applications keep the graph well-typed and its values unchanged (checked with the interpreter).
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "loom/interpreter/graph_eval.hpp"
#include "loom/interpreter/rule_graphs.hpp"
#include "loom/pcg/match.hpp"
#include "loom/pcg/rewrite.hpp"
#include "test_support.hpp"

namespace loom::spec {
namespace {

using pcg::Graph;
using pcg::ParallelShape;
using pcg::PortRef;
using pcg::Rule;
using test::bundled;
using test::pshape;

struct Side {
  Graph g;
  int in(const std::string& name, ParallelShape s) { return g.add_input(name, std::move(s)); }
  int op(const std::string& name, std::vector<int> args, pcg::AttrMap attrs = {}) {
    std::vector<PortRef> ports;
    for (int a : args) ports.push_back({a, 0});
    return g.add_node(bundled(), name, std::move(attrs), std::move(ports));
  }
};

// The sides are taken by reference: the outputs are built in the same call's arguments, and the
// order a compiler evaluates them in must not matter.
Rule rule(const std::string& id, Side& lhs, int lhs_out, Side& rhs, int rhs_out) {
  lhs.g.mark_output({lhs_out, 0});
  rhs.g.mark_output({rhs_out, 0});
  Rule r;
  r.id = id;
  r.lhs = std::move(lhs.g);
  r.rhs = std::move(rhs.g);
  return r;
}

pcg::AttrMap part(int dim, int degree = 2) { return {{"dim", dim}, {"degree", degree}}; }
pcg::AttrMap deg(int degree = 2) { return {{"degree", degree}}; }

// Unity's parallelization rules for relu and matmul, and a few algebraic ones.
std::vector<Rule> rules() {
  std::vector<Rule> out;
  const auto m = pshape({8, 8});
  {
    Side l, r;
    int lx = l.in("x", m), rx = r.in("x", m);
    out.push_back(
        rule("relu_rows", l, l.op("relu", {lx}), r, r.op("combine", {r.op("relu", {r.op("partition", {rx}, part(0))})}, part(0))));
  }
  {
    Side l, r;
    int lx = l.in("x", m), lw = l.in("w", m), rx = r.in("x", m), rw = r.in("w", m);
    out.push_back(rule("matmul_data", l, l.op("matmul", {lx, lw}), r,
                       r.op("combine", {r.op("matmul", {r.op("partition", {rx}, part(0)), r.op("replicate", {rw}, deg())})}, part(0))));
  }
  {
    Side l, r;
    int lx = l.in("x", m), lw = l.in("w", m), rx = r.in("x", m), rw = r.in("w", m);
    out.push_back(rule("matmul_model", l, l.op("matmul", {lx, lw}), r,
                       r.op("combine", {r.op("matmul", {r.op("replicate", {rx}, deg()), r.op("partition", {rw}, part(1))})}, part(1))));
  }
  {
    Side l, r;
    int lx = l.in("x", m), lw = l.in("w", m), rx = r.in("x", m), rw = r.in("w", m);
    out.push_back(rule("matmul_reduction", l, l.op("matmul", {lx, lw}), r,
                       r.op("reduce", {r.op("matmul", {r.op("partition", {rx}, part(1)), r.op("partition", {rw}, part(0))})}, deg())));
  }
  {
    Side l, r;
    int ly = l.in("y", pshape({8, 8}, {2, 1}));
    int ry = r.in("y", pshape({8, 8}, {2, 1}));
    out.push_back(rule("partition_combine", l, l.op("partition", {l.op("combine", {ly}, part(0))}, part(0)), r, ry));
  }
  {
    Side l, r;
    int lx = l.in("x", m), ly = l.in("y", m), rx = r.in("x", m), ry = r.in("y", m);
    out.push_back(rule("ewadd_commute", l, l.op("ewadd", {lx, ly}), r, r.op("ewadd", {ry, rx})));
  }
  {
    Side l, r;
    int lx = l.in("x", pshape({8, 8}, {2, 1})), rx = r.in("x", pshape({8, 8}, {2, 1}));
    out.push_back(
        rule("relu_combine", l, l.op("relu", {l.op("combine", {lx}, part(0))}), r, r.op("combine", {r.op("relu", {rx})}, part(0))));
  }
  return out;
}

// A two-layer perceptron with a residual add, on 8x8 tensors.
Graph mlp() {
  Graph g;
  const auto& lib = bundled();
  const int x = g.add_input("x", pshape({8, 8}));
  const int w1 = g.add_input("w1", pshape({8, 8}), true), w2 = g.add_input("w2", pshape({8, 8}), true);
  const int h = g.add_node(lib, "relu", {}, {{g.add_node(lib, "matmul", {}, {{x, 0}, {w1, 0}}), 0}});
  const int y = g.add_node(lib, "matmul", {}, {{h, 0}, {w2, 0}});
  const int s = g.add_node(lib, "ewadd", {}, {{y, 0}, {x, 0}});
  g.mark_output({g.add_node(lib, "relu", {}, {{s, 0}}), 0});
  g.mark_output({h, 0});
  return g;
}

// Random values for the graph's inputs; an input a rule writes as a number holds that number.
std::map<std::string, Tensor<double>> random_inputs(const Graph& g, std::mt19937_64& rng,
                                                    const std::map<std::string, double>& numbers = {}) {
  std::map<std::string, Tensor<double>> values;
  std::uniform_real_distribution<double> uni(-1, 1);
  for (const auto& n : g.nodes()) {
    if (!n.is_graph_input()) continue;
    Tensor<double> t(n.output_shapes[0].dims);
    for (auto& v : t.data) v = numbers.count(n.name) ? numbers.at(n.name) : uni(rng);
    values[n.name] = std::move(t);
  }
  return values;
}

TEST(RewriteSemantics, RandomApplicationSequencesPreserveValues) {
  const auto all_rules = rules();
  const pcg::RuleIndex rule_index(all_rules);
  int applied = 0, declined = 0;
  for (std::uint64_t seed = 1; seed <= 12; ++seed) {
    std::mt19937_64 rng(seed);
    Graph g = mlp();
    const auto inputs = random_inputs(g, rng);
    const auto reference = evaluate_graph<RealDomain>(bundled(), g, inputs);
    for (int step = 0; step < 30 && g.size() < 80; ++step) {
      pcg::GraphIndex index(g);
      std::vector<std::pair<std::size_t, pcg::Match>> options;
      for (std::size_t r : rule_index.candidates(index))
        for (auto& m : pcg::find_matches(index, all_rules[r])) options.emplace_back(r, std::move(m));
      if (options.empty()) break;
      const auto& [r, match] = options[std::uniform_int_distribution<std::size_t>(0, options.size() - 1)(rng)];
      auto outcome = pcg::apply_match(g, all_rules[r], match, bundled());
      if (!outcome.rewrite) {
        ++declined;
        continue;
      }
      g = std::move(outcome.rewrite->graph);
      ++applied;
      ASSERT_NO_THROW(g.validate(bundled())) << "seed " << seed << " step " << step << " rule " << all_rules[r].id;
      const auto now = evaluate_graph<RealDomain>(bundled(), g, inputs);
      ASSERT_EQ(now.size(), reference.size());
      for (std::size_t o = 0; o < now.size(); ++o)
        for (std::size_t i = 0; i < now[o].data.size(); ++i)
          ASSERT_NEAR(now[o].data[i], reference[o].data[i], 1e-9) << "seed " << seed << " step " << step << " rule " << all_rules[r].id;
    }
  }
  EXPECT_GE(applied, 200) << "too few applications to mean anything (" << declined << " declined)";
}

}  // namespace
}  // namespace loom::spec

namespace loom::spec {
namespace {

TEST(RuleDeclarations, BundledRulesBecomeGraphs) {
  const auto all = rules_of(bundled());
  ASSERT_EQ(all.size(), bundled().rules().size());
  for (const auto& r : all) {
    SCOPED_TRACE(r.id);
    EXPECT_NO_THROW(r.lhs.validate(bundled()));
    EXPECT_NO_THROW(r.rhs.validate(bundled()));
    EXPECT_EQ(r.lhs.outputs().size(), r.rhs.outputs().size());
  }
  auto relu_rows = std::find_if(all.begin(), all.end(), [](const pcg::Rule& r) { return r.id == "relu_rows"; });
  ASSERT_NE(relu_rows, all.end());
  EXPECT_EQ(relu_rows->category, pcg::RuleCategory::Parallel);
  EXPECT_EQ(relu_rows->lhs.size(), 2u);  // x and the relu
  EXPECT_EQ(relu_rows->rhs.size(), 4u);  // x, partition, relu, combine
  // Both sides compute the same values at the sizes chosen.
  std::mt19937_64 rng(3);
  for (const auto& r : all) {
    // Where a draw leaves every value undefined on both sides (a layer norm's random epsilon below
    // minus the variance), another is drawn.
    std::size_t compared = 0;
    for (int draw = 0; draw < 20 && compared == 0; ++draw) {
      const auto inputs = random_inputs(r.lhs, rng, r.literals);
      const auto left = evaluate_graph<RealDomain>(bundled(), r.lhs, inputs), right = evaluate_graph<RealDomain>(bundled(), r.rhs, inputs);
      for (std::size_t o = 0; o < left.size(); ++o)
        for (std::size_t i = 0; i < left[o].data.size(); ++i) {
          if (std::isnan(left[o].data[i]) && std::isnan(right[o].data[i])) continue;
          EXPECT_NEAR(left[o].data[i], right[o].data[i], 1e-9) << r.id;
          ++compared;
        }
    }
    EXPECT_GT(compared, 0u) << r.id << ": no value is defined at the inputs drawn";
  }
}

TEST(RuleDeclarations, ARuleThatNeverTypeChecksIsReported) {
  const Library lib =
      Library::from_text("import \"" + Library::default_specs_dir() +
                             "/ops/linalg.loom\";\nrule odd: forall x: [m, k], y: [k + 1, n]. matmul(x, y) => matmul(x, y);\n",
                         "odd.loom", ".", LoadOptions{false});
  try {
    rule_from_declaration(lib, *lib.rules().at(0));
    ADD_FAILURE() << "an ill-typed rule was converted";
  } catch (const LoomError& e) {
    EXPECT_NE(std::string(e.what()).find("odd.loom:2:6: rule odd: cannot be typed: no sizes found"), std::string::npos) << e.what();
  }
}

// Proofs assume both sides of a rule well-typed where it applies (the verifier states every
// operator's requirements), so the side a rewrite builds must meet its operators' requirements:
// `split<0, 6>(concat<0>(x, concat<0>(y, u))).0 => split<0, 6>(concat<0>(x, y)).0` is true only
// where 6 < rows(x) + rows(y). Where the built split would not fit, the match is declined.
TEST(RewriteSemantics, AMatchWhoseBuiltSideBreaksARequirementIsDeclined) {
  const pcg::AttrMap rows{{"axis", 0}};
  const pcg::AttrMap at_6{{"axis", 0}, {"at", 6}};
  Side l, r;
  const int lx = l.in("x", pshape({4, 4})), ly = l.in("y", pshape({4, 4})), lu = l.in("u", pshape({4, 4}));
  const int rx = r.in("x", pshape({4, 4})), ry = r.in("y", pshape({4, 4}));
  const int lhs_out = l.op("split", {l.op("concat", {lx, l.op("concat", {ly, lu}, rows)}, rows)}, at_6);
  const int rhs_out = r.op("split", {r.op("concat", {rx, ry}, rows)}, at_6);
  const Rule prefix = rule("prefix", l, lhs_out, r, rhs_out);
  auto outcome_at = [&](std::int64_t x_rows, std::int64_t y_rows) {
    Side g;
    const int x = g.in("x", pshape({x_rows, 4})), y = g.in("y", pshape({y_rows, 4})), u = g.in("u", pshape({4, 4}));
    g.g.mark_output({g.op("split", {g.op("concat", {x, g.op("concat", {y, u}, rows)}, rows)}, at_6), 0});
    const pcg::GraphIndex index(g.g);
    const auto matches = pcg::find_matches(index, prefix);
    EXPECT_EQ(matches.size(), 1u);
    return matches.empty() ? pcg::RewriteOutcome{} : pcg::apply_match(g.g, prefix, matches.front(), bundled());
  };
  const auto fits = outcome_at(4, 4);
  EXPECT_TRUE(fits.rewrite.has_value()) << fits.declined;
  const auto does_not_fit = outcome_at(2, 2);
  EXPECT_FALSE(does_not_fit.rewrite.has_value());
  EXPECT_NE(does_not_fit.declined.find("requirement"), std::string::npos) << does_not_fit.declined;
}

}  // namespace
}  // namespace loom::spec
