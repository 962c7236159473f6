// A proved equality holds both ways: the search applies a rule right to left too, and the step
// says so, in the plan and when it is replayed.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <unordered_set>

#include "loom/interpreter/graph_eval.hpp"
#include "loom/pcg/graph_hash.hpp"
#include "loom/pcg/match.hpp"
#include "loom/pcg/rewrite.hpp"
#include "loom/search/machine_mapping.hpp"
#include "loom/search/replay.hpp"
#include "loom/search/substitution_search.hpp"
#include "search_support.hpp"

namespace loom::search {
namespace {

using namespace test_support;

// The rules of a .loom text, written smaller side first as `loom generate` writes them.
std::vector<pcg::Rule> rules_of_text(const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / ("loom_both_ways_" + std::to_string(::getpid()) + ".loom");
  const std::string ops = spec::Library::default_specs_dir() + "/ops/";
  std::ofstream(path) << "import \"" << ops << "core.loom\";\nimport \"" << ops << "linalg.loom\";\nimport \"" << ops
                      << "shape.loom\";\nimport \"" << ops << "parallel.loom\";\n"
                      << text;
  auto rules = spec::load_rule_file(library(), {spec::Library::default_specs_dir()}, path.string());
  std::filesystem::remove(path);
  return rules;
}

// ewadd(matmul(x, w), matmul(x, v)): two products of one input.
pcg::Graph two_products(std::int64_t m, std::int64_t n, std::int64_t k) {
  pcg::Graph g;
  const int x = g.add_input("x", shape({m, n}));
  const int w = g.add_input("w", shape({n, k}), true);
  const int v = g.add_input("v", shape({n, k}), true);
  const int a = g.add_node(library(), "matmul", {}, {{x, 0}, {w, 0}});
  const int b = g.add_node(library(), "matmul", {}, {{x, 0}, {v, 0}});
  g.mark_output({g.add_node(library(), "ewadd", {}, {{a, 0}, {b, 0}}), 0});
  return g;
}

std::size_t count_op(const pcg::Graph& g, const std::string& op) {
  std::size_t n = 0;
  for (const pcg::Node& node : g.nodes()) n += node.op == op;
  return n;
}

TEST(RulesBothWays, TheReverseSwapsTheSidesAndKeepsTheIdAndProof) {
  auto rules = rules_of_text("rule merge: matmul(x, ewadd(w, v)) => ewadd(matmul(x, w), matmul(x, v));\n");
  ASSERT_EQ(rules.size(), 1u);
  rules[0].verification = pcg::Verification{};
  rules[0].verification->status = pcg::VerificationStatus::Proved;
  const std::optional<pcg::Rule> back = pcg::reverse_of(rules[0]);
  ASSERT_TRUE(back);
  EXPECT_TRUE(back->reversed);
  EXPECT_EQ(back->id, "merge");
  EXPECT_EQ(back->lhs, rules[0].rhs);
  EXPECT_EQ(back->rhs, rules[0].lhs);
  EXPECT_EQ(back->verification, rules[0].verification);
  const std::optional<pcg::Rule> again = pcg::reverse_of(*back);
  ASSERT_TRUE(again);
  EXPECT_FALSE(again->reversed);
  EXPECT_EQ(again->lhs, rules[0].lhs);
  EXPECT_EQ(pcg::both_ways(rules).size(), 2u);
}

TEST(RulesBothWays, NoReverseWhereTheRightHandSideCannotBeAPattern) {
  // A bare variable would match anything; a variable the right-hand side drops cannot be bound.
  const auto rules = rules_of_text(
      "rule cancel: forall x: [m, n] where m % 2 == 0. combine<0, 2>(partition<0, 2>(x)) => x;\n"
      "rule drop: forall x: [m, n], y: [m, n]. relu(x) => split<0, m>(relu(concat<0>(x, y))).0;\n"
      "rule keep: forall x: [m, n], y: [m, n]. split<0, m>(relu(concat<0>(x, y))).0 => relu(x);\n");
  ASSERT_EQ(rules.size(), 3u);
  EXPECT_FALSE(pcg::reverse_of(rules[0]));
  EXPECT_TRUE(pcg::reverse_of(rules[1]));   // its right-hand side binds x and y
  EXPECT_FALSE(pcg::reverse_of(rules[2]));  // relu(x) leaves y unbound
  EXPECT_EQ(pcg::both_ways(rules).size(), 4u);
}

TEST(RulesBothWays, TheSearchAppliesARuleRightToLeftAndTheStepReplays) {
  // Written as the generator writes it, the rule only grows a graph; right to left it merges the
  // two products into one, which the cost below (nodes) rewards.
  const auto rules = rules_of_text("rule merge: matmul(x, ewadd(w, v)) => ewadd(matmul(x, w), matmul(x, v));\n");
  const pcg::Graph start = two_products(4, 6, 10);
  auto nodes = [](const pcg::Graph& g) { return static_cast<double>(g.size()); };
  const SearchResult forward_only = search_substitutions(start, rules, library(), nodes);
  EXPECT_TRUE(forward_only.sequence.empty());

  const SearchResult found = search_substitutions(start, pcg::both_ways(rules), library(), nodes);
  ASSERT_EQ(found.sequence.size(), 1u);
  EXPECT_EQ(found.sequence[0].rule, "merge");
  EXPECT_TRUE(found.sequence[0].reversed);
  EXPECT_EQ(count_op(found.best, "matmul"), 1u);
  EXPECT_LT(found.best_seconds, found.initial_seconds);

  // The merged graph computes what the start computes.
  const auto [before, after] = outputs_on_random_inputs(start, found.best, 11);
  ASSERT_EQ(before[0].data.size(), after[0].data.size());
  for (std::size_t i = 0; i < before[0].data.size(); ++i) EXPECT_NEAR(before[0].data[i], after[0].data[i], 1e-12);

  // A plan holds the rule as the library has it; the step's direction survives the file and
  // the replay reaches the same graph.
  Plan plan;
  plan.machine = load_machine("summit");
  plan.graph = found.best;
  plan.source = start;
  plan.substitutions = found.sequence;
  plan.rules = rules_used(rules, found.sequence);
  ASSERT_EQ(plan.rules.size(), 1u);
  EXPECT_FALSE(plan.rules[0].reversed);
  const Plan read = plan_from_json(plan_to_json(plan), library());
  ASSERT_EQ(read.substitutions.size(), 1u);
  EXPECT_TRUE(read.substitutions[0].reversed);
  const std::vector<ReplayStep> steps = replay_plan(read, library());
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].after, found.best);

  // Read as applied left to right, the recorded match does not replay.
  Plan forward = read;
  forward.substitutions[0].reversed = false;
  EXPECT_THROW(replay_plan(forward, library()), LoomError);
}

TEST(RulesBothWays, CostedWhenTheirTurnComesRewritesFindWhatAnExhaustiveSearchFinds) {
  // Every graph the rules reach, both ways, costed by the machine mapping: the least of them is
  // what the best-first search returns when its budget covers them and alpha prunes nothing.
  const auto rules =
      pcg::both_ways(rules_of_text("rule merge: matmul(x, ewadd(w, v)) => ewadd(matmul(x, w), matmul(x, v));\n"
                                   "rule swap: ewadd(x, y) => ewadd(y, x);\n"
                                   "rule fuse: relu(matmul(x, w)) => matmul_relu(x, w);\n"));
  const pcg::Graph start = [&] {
    pcg::Graph g;
    const int x = g.add_input("x", shape({64, 256}));
    const int w = g.add_input("w", shape({256, 512}), true);
    const int v = g.add_input("v", shape({256, 512}), true);
    const int u = g.add_input("u", shape({512, 128}), true);
    const int a = g.add_node(library(), "matmul", {}, {{x, 0}, {w, 0}});
    const int b = g.add_node(library(), "matmul", {}, {{x, 0}, {v, 0}});
    const int sum = g.add_node(library(), "ewadd", {}, {{a, 0}, {b, 0}});
    const int h = g.add_node(library(), "relu", {}, {{g.add_node(library(), "matmul", {}, {{sum, 0}, {u, 0}}), 0}});
    g.mark_output({h, 0});
    return g;
  }();
  const Machine machine = load_machine("summit").with_devices_per_node(2);
  const CostModel model(library(), machine);
  MachineMapper mapper(library(), model);
  auto cost = [&](const pcg::Graph& g) { return mapper.map(g).estimate; };

  std::vector<pcg::Graph> reached{start};
  std::unordered_set<std::uint64_t> seen{pcg::graph_hash(start)};
  double least = cost(start);
  for (std::size_t i = 0; i < reached.size(); ++i) {
    const pcg::Graph current = reached[i];  // `reached` grows below
    const pcg::GraphIndex index(current);
    for (const pcg::Rule& rule : rules)
      for (const pcg::Match& m : pcg::find_matches(index, rule)) {
        pcg::RewriteOutcome outcome = pcg::apply_match(current, rule, m, library());
        if (!outcome.rewrite || !seen.insert(pcg::graph_hash(outcome.rewrite->graph)).second) continue;
        least = std::min(least, cost(outcome.rewrite->graph));
        reached.push_back(std::move(outcome.rewrite->graph));
      }
  }
  ASSERT_GT(reached.size(), 4u);
  ASSERT_LT(least, cost(start));

  SearchOptions options;
  options.alpha = std::numeric_limits<double>::infinity();
  options.budget = reached.size();
  options.node_seconds = [&model](const pcg::Graph& g, const pcg::Node& n) { return model.local_seconds(g, n); };
  const SearchResult found = search_substitutions(start, rules, library(), cost, options);
  EXPECT_DOUBLE_EQ(found.best_seconds, least);
  EXPECT_EQ(found.rewrites, reached.size());
  EXPECT_DOUBLE_EQ(cost(found.best), found.best_seconds);

  // With the default alpha and a budget of a few graphs, the estimates lead it to the same plan.
  options.alpha = 1.05;
  options.budget = 4;
  const SearchResult bounded = search_substitutions(start, rules, library(), cost, options);
  EXPECT_LE(bounded.generated, options.budget + 1);
  EXPECT_DOUBLE_EQ(bounded.best_seconds, least);
}

}  // namespace
}  // namespace loom::search
