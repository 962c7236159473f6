#include <gtest/gtest.h>

#include <random>

#include "loom/interpreter/graph_eval.hpp"
#include "loom/interpreter/library.hpp"
#include "loom/interpreter/rule_graphs.hpp"
#include "loom/search/memory.hpp"
#include "loom/search/plan_cost.hpp"
#include "loom/search/substitution_search.hpp"
#include "search_support.hpp"

namespace loom::search {
namespace {

using namespace test_support;

// Unity's figure-1 MLP shape at a size the interpreter evaluates quickly: relu(x w1) w2.
pcg::Graph mlp(std::int64_t batch, std::int64_t in, std::int64_t hidden, std::int64_t out) {
  pcg::Graph g;
  const int x = g.add_input("x", pcg::ParallelShape::unpartitioned({batch, in}));
  const int w1 = g.add_input("w1", pcg::ParallelShape::unpartitioned({in, hidden}), true);
  const int w2 = g.add_input("w2", pcg::ParallelShape::unpartitioned({hidden, out}), true);
  const int h = g.add_node(library(), "relu", {}, {{g.add_node(library(), "matmul", {}, {{x, 0}, {w1, 0}}), 0}});
  g.mark_output({g.add_node(library(), "matmul", {}, {{h, 0}, {w2, 0}}), 0});
  return g;
}

TEST(SubstitutionSearch, FindsAFasterPlanThatComputesTheSameValues) {
  const Machine machine = load_machine("summit").with_devices_per_node(2);
  const CostModel model(library(), machine);
  auto cost = [&](const pcg::Graph& g) { return search_cost(g, model); };
  const auto rules = spec::rules_of(library());
  // Large enough that splitting the matmuls pays for the transfers.
  const pcg::Graph big = mlp(1024, 1024, 4096, 1024);
  SearchOptions options;
  options.budget = 40;
  const SearchResult found = search_substitutions(big, rules, library(), cost, options);
  EXPECT_LE(found.explored, options.budget);
  EXPECT_LT(found.best_seconds, found.initial_seconds);
  EXPECT_FALSE(found.sequence.empty());
  EXPECT_DOUBLE_EQ(cost(found.best), found.best_seconds);
  EXPECT_NO_THROW(found.best.validate(library()));
  EXPECT_EQ(first_overfull_device(memory_per_device(with_default_views(found.best, machine), machine), machine), -1);

  // The same search on a small instance: the plan computes what the model computes.
  const pcg::Graph small = mlp(8, 4, 8, 2);
  const SearchResult plan = search_substitutions(
      small, rules, library(), [](const pcg::Graph& g) { return static_cast<double>(100 - g.size()); }, options);
  ASSERT_FALSE(plan.sequence.empty());  // this cost rewards bigger graphs: the search must have rewritten
  const auto [before, after] = outputs_on_random_inputs(small, plan.best, 5);
  ASSERT_EQ(before.size(), after.size());
  for (std::size_t i = 0; i < before[0].data.size(); ++i) EXPECT_NEAR(before[0].data[i], after[0].data[i], 1e-9);
}

TEST(SubstitutionSearch, NoRulesMeansTheStartIsTheBest) {
  const pcg::Graph g = mlp(8, 4, 8, 2);
  const SearchResult r = search_substitutions(g, {}, library(), [](const pcg::Graph&) { return 1.0; });
  EXPECT_EQ(r.best, g);
  EXPECT_TRUE(r.sequence.empty());
  EXPECT_EQ(r.explored, 1u);
}

}  // namespace
}  // namespace loom::search
