// Rules with two outputs: with two_outputs, the generator enumerates graphs with two outputs and
// keeps the merges among their pairs, such as two products of one input against one product by
// concatenated weights and a split.
#include "support.hpp"

#include <set>

#include "loom/superopt/enumerate.hpp"
#include "loom/superopt/prune.hpp"

namespace loom::superopt::test {
namespace {

const char* const kMerge =
    "(matmul(x, w), matmul(x, v)) => (split<1, k>(matmul(x, concat<1>(w, v))).0, split<1, k>(matmul(x, concat<1>(w, v))).1)";

GeneratorOptions merge_run(bool two_outputs) {
  auto o = small_run({"matmul", "concat", "split"}, {}, 3, "x: [4, 6], w: [6, 8], v: [6, 8]");
  o.prune_implied = true;
  o.two_outputs = two_outputs;
  return o;
}

std::vector<const pcg::Rule*> two_output_rules(const pcg::RuleLibrary& rules) {
  std::vector<const pcg::Rule*> out;
  for (const auto& r : rules.rules)
    if (r.lhs.outputs().size() == 2) out.push_back(&r);
  return out;
}

TEST(TwoOutputs, TheMatmulMergeIsGeneratedOnceAndHoldsInDoublePrecision) {
  const auto r = generate(bundled(), merge_run(true));
  std::size_t found = 0;
  for (const auto& rule : r.rules.rules) {
    if (equation(rule) != kMerge) continue;
    ++found;
    ASSERT_EQ(rule.lhs.outputs().size(), 2u);
    ASSERT_EQ(rule.rhs.outputs().size(), 2u);
    auto matmuls = [](const pcg::Graph& g) {
      return std::count_if(g.nodes().begin(), g.nodes().end(), [](const pcg::Node& n) { return n.op == "matmul"; });
    };
    EXPECT_EQ(matmuls(rule.lhs), 2);
    EXPECT_EQ(matmuls(rule.rhs), 1) << "the product by the concatenated weights is one node for both outputs";
    for (std::uint64_t seed = 1; seed <= 3; ++seed) EXPECT_EQ(disagreement(bundled(), rule, seed), "");
  }
  EXPECT_EQ(found, 1u) << list_rules(r.rules, 600);
  EXPECT_EQ(r.summary["settings"]["two_outputs"], true);
}

TEST(TwoOutputs, EveryGeneratedRuleWithTwoOutputsIsAMergeThatHolds) {
  const auto r = generate(bundled(), merge_run(true));
  const auto pairs = two_output_rules(r.rules);
  ASSERT_FALSE(pairs.empty());
  for (const pcg::Rule* rule : pairs) {
    EXPECT_EQ(disagreement(bundled(), *rule, 7), "");
    // A merge: the two outputs of one side are computed apart by one operator each, and the other
    // side applies that operator fewer times.
    const pcg::Graph& apart = rule->lhs.size() <= rule->rhs.size() ? rule->lhs : rule->rhs;
    const pcg::Graph& merged = &apart == &rule->lhs ? rule->rhs : rule->lhs;
    const pcg::Node& first = apart.node(apart.outputs()[0].node);
    const pcg::Node& second = apart.node(apart.outputs()[1].node);
    EXPECT_EQ(second.op, first.op) << rule->text;
    EXPECT_EQ(second.attrs, first.attrs) << rule->text;
    EXPECT_NE(first.id, second.id) << rule->text;
    auto count = [&](const pcg::Graph& g) {
      return std::count_if(g.nodes().begin(), g.nodes().end(),
                           [&](const pcg::Node& n) { return n.op == first.op && n.attrs == first.attrs; });
    };
    EXPECT_LT(count(merged), count(apart)) << rule->text;
  }
}

TEST(TwoOutputs, GraphsOfOneOutputAreEnumeratedAlike) {
  std::map<bool, std::multiset<std::pair<std::uint64_t, Key128>>> singles;
  for (bool two : {false, true}) {
    const GeneratorOptions o = merge_run(two);
    const OpSet ops = OpSet::build(bundled(), o, o.inputs);
    const Enumeration e = enumerate_graphs(bundled(), ops, o.inputs, o);
    for (std::size_t i = 0; i < e.views.size(); ++i)
      if (!e.views[i].has_two_outputs()) singles[two].insert({e.fingerprints[i], view_key(e.views[i])});
  }
  EXPECT_EQ(singles[false].size(), singles[true].size());
  EXPECT_TRUE(singles[false] == singles[true]);
}

// The candidates of one output that survive pruning are the same either way. (Which of them pass
// the numeric check may differ slightly: its random instances are drawn per candidate position.)
TEST(TwoOutputs, PairsOfOneOutputArePrunedAlike) {
  std::map<bool, std::set<std::pair<Key128, Key128>>> kept;
  for (bool two : {false, true}) {
    const GeneratorOptions o = merge_run(two);
    const OpSet ops = OpSet::build(bundled(), o, o.inputs);
    const Enumeration e = enumerate_graphs(bundled(), ops, o.inputs, o);
    PruneStats stats;
    for (const CandidatePair& p : prune_candidates(bundled(), ops, o.inputs, e, o, stats))
      if (!e.views[p.lhs].has_two_outputs()) kept[two].insert({view_key(e.views[p.lhs]), view_key(e.views[p.rhs])});
  }
  EXPECT_EQ(kept[false].size(), kept[true].size());
  EXPECT_TRUE(kept[false] == kept[true]);
}

// The merge of attention projections that specs/rules/unity.loom writes by hand comes out of the
// generator over head projections, concatenations and splits.
TEST(TwoOutputs, TheHandWrittenHeadProjectionMergeIsGenerated) {
  auto o = small_run({"head_proj_nobias", "concat", "split"}, {}, 3, "x: [2, 4, 6], w: [3, 6, 5], v: [3, 6, 5]");
  o.prune_implied = true;
  o.two_outputs = true;
  const auto r = generate(bundled(), o);
  EXPECT_NE(find_rule(r.rules, "(head_proj_nobias(x, w), head_proj_nobias(x, v))",
                      "(split<1, j>(head_proj_nobias(x, concat<0>(w, v))).0, split<1, j>(head_proj_nobias(x, concat<0>(w, v))).1)"),
            nullptr)
      << list_rules(r.rules, 50);
}

TEST(TwoOutputs, OffByDefault) {
  const auto r = generate(bundled(), merge_run(false));
  EXPECT_FALSE(r.rules.rules.empty());
  EXPECT_TRUE(two_output_rules(r.rules).empty());
  EXPECT_EQ(r.summary["settings"]["two_outputs"], false);
}

}  // namespace
}  // namespace loom::superopt::test
