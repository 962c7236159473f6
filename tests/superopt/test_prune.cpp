// TASO's pruning of redundant candidates, and its counts.
#include "support.hpp"

#include <set>

namespace loom::superopt::test {
namespace {

std::set<std::string> equations(const pcg::RuleLibrary& rules) {
  std::set<std::string> out;
  for (const auto& r : rules.rules) out.insert(equation(r));
  return out;
}

std::string swap_names(std::string text, char a, char b) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    const bool alone = (i == 0 || !std::isalnum(static_cast<unsigned char>(text[i - 1]))) &&
                       (i + 1 == text.size() || !std::isalnum(static_cast<unsigned char>(text[i + 1])));
    if (alone && text[i] == a)
      text[i] = b;
    else if (alone && text[i] == b)
      text[i] = a;
  }
  return text;
}

TEST(Prune, PairsSharingACommonSubgraphAreDropped) {
  auto o = small_run({"relu"}, {"partition", "combine"}, 3, "x: [4, 6]");
  o.attr_domains["dim"] = {0};
  auto r = generate(bundled(), o);
  // At the output: the same op applied to equivalent tensors follows from those tensors' rule.
  EXPECT_EQ(find_rule(r.rules, "relu(x)", "relu(combine<0, 2>(partition<0, 2>(x)))"), nullptr);
  // At the inputs: the same op on the same inputs on both sides.
  EXPECT_EQ(find_rule(r.rules, "relu(x)", "combine<0, 2>(partition<0, 2>(relu(x)))"), nullptr);
  // The smaller rules they follow from are kept.
  EXPECT_NE(find_rule(r.rules, "combine<0, 2>(partition<0, 2>(x))", "x"), nullptr);
  EXPECT_GT(r.summary["pruning"][2]["removed"].get<int>(), 0);
  EXPECT_EQ(r.summary["pruning"][2]["step"], "common subgraph");
}

TEST(Prune, InputRenamingKeepsOneOfEachSymmetricPair) {
  auto r = generate(bundled(), small_run({"relu", "ewadd"}, {"partition", "combine"}, 2, "x: [4, 6], y: [4, 6]"));
  const auto all = equations(r.rules);
  EXPECT_TRUE(all.count("ewadd(x, y) => ewadd(y, x)") || all.count("ewadd(y, x) => ewadd(x, y)"));
  EXPECT_TRUE(all.count("combine<0, 2>(partition<0, 2>(x)) => x"));
  EXPECT_FALSE(all.count("combine<0, 2>(partition<0, 2>(y)) => y"));
  for (const auto& e : all) {
    const std::string swapped = swap_names(e, 'x', 'y');
    if (swapped != e) {
      EXPECT_FALSE(all.count(swapped)) << e << " and " << swapped;
    }
  }
  EXPECT_GT(r.summary["pruning"][1]["removed"].get<int>(), 0);
}

TEST(Prune, SidesWithUnusedComputationAreDropped) {
  auto o = small_run({"ewadd", "concat", "split"}, {}, 3, "x: [4, 6], y: [4, 6]");
  o.free_attr_values = {4};
  o.attr_domains["axis"] = {0};
  auto r = generate(bundled(), o);
  // The discarded half of a split makes any computation there irrelevant.
  for (const auto& rule : r.rules.rules) EXPECT_EQ(equation(rule).find("(concat<0>(ewadd(x, y), x)).1"), std::string::npos) << rule.text;
  EXPECT_NE(find_rule(r.rules, "split<0, m>(concat<0>(x, y)).1", "y"), nullptr) << list_rules(r.rules);
  EXPECT_GT(r.summary["pruning"][0]["removed"].get<int>(), 0);
  EXPECT_EQ(r.summary["pruning"][0]["step"], "unused computation");
}

TEST(Prune, CountsChainFromCandidatesToChecked) {
  auto o = small_run({"relu", "ewadd", "matmul"}, {"partition", "combine", "replicate", "reduce"}, 2, "x: [4, 6], y: [4, 6], w: [6, 10]");
  o.prune_implied = true;
  auto r = generate(bundled(), o);
  std::size_t remaining = r.summary["candidates"];
  for (const auto& step : r.summary["pruning"]) {
    EXPECT_EQ(step["before"].get<std::size_t>(), remaining);
    remaining -= step["removed"].get<std::size_t>();
    EXPECT_EQ(step["after"].get<std::size_t>(), remaining);
  }
  EXPECT_EQ(r.summary["after_pruning"].get<std::size_t>(), remaining);
  EXPECT_EQ(r.summary["numeric_check"]["checked"].get<std::size_t>(), remaining);
  const auto& by = r.summary["by_category"];
  EXPECT_EQ(by["algebraic"].get<std::size_t>() + by["parallel"].get<std::size_t>() + by["hybrid"].get<std::size_t>(), r.rules.rules.size());
}

TEST(Prune, ImpliedPairsAreASubsetThatStillHolds) {
  auto o = small_run({"relu", "concat", "split"}, {"partition", "combine"}, 3, "x: [4, 6]");
  o.free_attr_values = {4};
  auto plain = generate(bundled(), o);
  o.prune_implied = true;
  auto pruned = generate(bundled(), o);
  const auto all = equations(plain.rules), kept = equations(pruned.rules);
  EXPECT_LT(kept.size(), all.size());
  EXPECT_GT(pruned.summary["pruning"][3]["removed"].get<int>(), 0);
  for (const auto& e : kept) EXPECT_TRUE(all.count(e)) << e;
  // Figure 11a's rule follows from these two, which are never implied.
  EXPECT_NE(find_rule(plain.rules, "relu(x)", "combine<0, 2>(relu(partition<0, 2>(x)))"), nullptr);
  EXPECT_NE(find_rule(pruned.rules, "relu(partition<0, 2>(x))", "partition<0, 2>(relu(x))"), nullptr) << list_rules(pruned.rules);
  EXPECT_NE(find_rule(pruned.rules, "combine<0, 2>(partition<0, 2>(x))", "x"), nullptr);
  for (std::size_t i = 0; i < pruned.rules.rules.size(); ++i) EXPECT_EQ(disagreement(bundled(), pruned.rules.rules[i], i), "");
}

TEST(Prune, ResultsDoNotDependOnTheNumberOfThreads) {
  auto o = small_run({"relu", "ewadd", "matmul", "split"}, {"partition", "combine", "replicate", "reduce"}, 2,
                     "x: [4, 6], y: [4, 6], w: [6, 10], z: [4, 6] {V: 2}");
  o.jobs = 1;
  auto one = generate(bundled(), o);
  o.jobs = 3;
  auto three = generate(bundled(), o);
  ASSERT_EQ(one.rules.rules.size(), three.rules.rules.size());
  for (std::size_t i = 0; i < one.rules.rules.size(); ++i) {
    EXPECT_EQ(one.rules.rules[i].text, three.rules.rules[i].text);
    EXPECT_EQ(pcg::rule_to_json(one.rules.rules[i]), pcg::rule_to_json(three.rules.rules[i]));
  }
  EXPECT_EQ(one.summary["graphs"], three.summary["graphs"]);
}

}  // namespace
}  // namespace loom::superopt::test
