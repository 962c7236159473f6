// The rewrite engine on every zoo model: random sequences of rule applications keep the graph
// well-typed and, on small instances, computing the same values (checked with the interpreter).
#include <gtest/gtest.h>

#include <random>

#include "loom/interpreter/graph_eval.hpp"
#include "loom/interpreter/rule_graphs.hpp"
#include "loom/models/registry.hpp"
#include "loom/models/values.hpp"
#include "loom/pcg/match.hpp"
#include "loom/pcg/rewrite.hpp"
#include "support.hpp"

namespace loom::models::test {
namespace {

// The bundled hand-written rules and a few more parallelizations of the zoo's common operators.
const std::vector<pcg::Rule>& rules() {
  static const std::vector<pcg::Rule> all = [] {
    const std::string dir = spec::Library::default_specs_dir();
    std::string text;
    for (const char* f : {"ops/core.loom", "ops/linalg.loom", "ops/shape.loom", "ops/parallel.loom", "ops/models.loom", "rules/unity.loom"})
      text += "import \"" + dir + "/" + f + "\";\n";
    text += R"(
rule ewadd_rows: ewadd(x, y) => combine<0, 2>(ewadd(partition<0, 2>(x), partition<0, 2>(y)));
rule ewmul_rows: ewmul(x, y) => combine<0, 2>(ewmul(partition<0, 2>(x), partition<0, 2>(y)));
rule ewadd_commute: ewadd(x, y) => ewadd(y, x);
rule sigmoid_rows: sigmoid(x) => combine<0, 2>(sigmoid(partition<0, 2>(x)));
rule tanh_rows: tanh(x) => combine<0, 2>(tanh(partition<0, 2>(x)));
rule gelu_rows: gelu(x) => combine<0, 2>(gelu(partition<0, 2>(x)));
rule linear_rows: forall x: [b, k], w: [k, n], c: [n].
  linear(x, w, c) => combine<0, 2>(linear(partition<0, 2>(x), replicate<2>(w), replicate<2>(c)));
rule linear_cols: forall x: [b, k], w: [k, n], c: [n].
  linear(x, w, c) => combine<1, 2>(linear(replicate<2>(x), partition<1, 2>(w), partition<0, 2>(c)));
rule softmax_rows: forall x: [b, n]. softmax(x) => combine<0, 2>(softmax(partition<0, 2>(x)));
rule split_combine: forall x: [m, n] {D: [2, 1]}. partition<0, 2>(combine<0, 2>(x)) => x;
)";
    static const spec::Library lib = spec::Library::from_text(text, "zoo_rules.loom");
    return spec::rules_of(lib);
  }();
  return all;
}

class ZooRewrites : public ::testing::TestWithParam<std::string> {};

std::vector<std::string> names() {
  std::vector<std::string> out;
  for (const auto& m : model_zoo()) out.push_back(m.name);
  return out;
}

INSTANTIATE_TEST_SUITE_P(Zoo, ZooRewrites, ::testing::ValuesIn(names()));

TEST_P(ZooRewrites, RandomApplicationsKeepTypesAndValues) {
  const pcg::RuleIndex rule_index(rules());
  ParamValues sizes = tiny_sizes().at(GetParam());
  if (sizes.count("batch")) sizes["batch"] = 2;  // so the row-splitting rules have rows to split
  pcg::Graph g = build_model(library(), GetParam(), sizes);
  const NamedValues inputs = random_values(library(), g, 11);
  const auto reference = spec::evaluate_graph<spec::RealDomain>(library(), g, inputs);
  std::mt19937_64 rng(std::hash<std::string>{}(GetParam()));
  int applied = 0;
  for (int step = 0; step < 16; ++step) {
    const pcg::GraphIndex index(g);
    std::vector<std::pair<std::size_t, pcg::Match>> options;
    for (std::size_t r : rule_index.candidates(index))
      for (auto& m : pcg::find_matches(index, rules()[r])) options.emplace_back(r, std::move(m));
    if (options.empty()) break;
    const auto& [r, match] = options[std::uniform_int_distribution<std::size_t>(0, options.size() - 1)(rng)];
    auto outcome = pcg::apply_match(g, rules()[r], match, library());
    if (!outcome.rewrite) continue;
    // No consumer is lost: every output of the graph is still there.
    ASSERT_EQ(outcome.rewrite->graph.outputs().size(), g.outputs().size());
    g = std::move(outcome.rewrite->graph);
    ++applied;
    ASSERT_NO_THROW(g.validate(library())) << GetParam() << " after " << rules()[r].id;
  }
  const auto now = spec::evaluate_graph<spec::RealDomain>(library(), g, inputs);
  ASSERT_EQ(now.size(), reference.size());
  for (std::size_t o = 0; o < now.size(); ++o)
    for (std::size_t i = 0; i < now[o].data.size(); ++i)
      ASSERT_NEAR(now[o].data[i], reference[o].data[i], 1e-9 * (1 + std::abs(reference[o].data[i]))) << GetParam() << " output " << o;
  RecordProperty("applied", applied);
  EXPECT_GT(applied, 0) << GetParam() << ": no rule applied, the test checked nothing";
}

}  // namespace
}  // namespace loom::models::test
