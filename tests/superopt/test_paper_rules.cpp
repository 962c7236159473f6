// The substitutions the Unity paper shows are found by the generator from the spec library.
#include "support.hpp"

namespace loom::superopt::test {
namespace {

TEST(PaperRules, MatmulCommutesWithReduce) {
  // Section 4: Matmul(Reduce(d, x), y) = Reduce(d, Matmul(x, Replicate(d, y))).
  auto r = generate(bundled(), small_run({"matmul"}, {"reduce", "replicate"}, 3, "z: [4, 6] {V: 2}, w: [6, 10]"));
  const pcg::Rule* rule = find_rule(r.rules, "matmul(reduce<2>(z), w)", "reduce<2>(matmul(z, replicate<2>(w)))");
  ASSERT_NE(rule, nullptr) << list_rules(r.rules);
  EXPECT_EQ(rule->category, pcg::RuleCategory::Parallel);
  EXPECT_EQ(rule->text.substr(rule->text.find(": ") + 2),
            "forall z: [m, n] {V: 2}, w: [n, k]. matmul(reduce<2>(z), w) => reduce<2>(matmul(z, replicate<2>(w)));");
}

TEST(PaperRules, ReluAcceptsPartitionOnItsRows) {
  // Figure 11a.
  auto r = generate(bundled(), small_run({"relu"}, {"partition", "combine"}, 3, "x: [4, 6]"));
  const pcg::Rule* rule = find_rule(r.rules, "relu(x)", "combine<0, 2>(relu(partition<0, 2>(x)))");
  ASSERT_NE(rule, nullptr) << list_rules(r.rules);
  EXPECT_EQ(rule->category, pcg::RuleCategory::Parallel);
  EXPECT_EQ(rule->constraints, std::vector<std::string>{"m % 2 == 0"});
  EXPECT_NE(find_rule(r.rules, "relu(x)", "combine<1, 2>(relu(partition<1, 2>(x)))"), nullptr);
}

TEST(PaperRules, PartitionFollowedByCombineCancels) {
  auto r = generate(bundled(), small_run({}, {"partition", "combine"}, 2, "x: [4, 6], t: [4, 6] {D: [1, 2]}"));
  EXPECT_NE(find_rule(r.rules, "combine<0, 2>(partition<0, 2>(x))", "x"), nullptr) << list_rules(r.rules);
  EXPECT_NE(find_rule(r.rules, "combine<1, 2>(partition<1, 2>(x))", "x"), nullptr);
  EXPECT_NE(find_rule(r.rules, "partition<1, 2>(combine<1, 2>(t))", "t"), nullptr);
  // A bare variable is never the side a rule rewrites.
  for (const auto& rule : r.rules.rules) EXPECT_GT(rule.lhs.size(), rule.variables().size()) << rule.text;
}

TEST(PaperRules, AddOfReductionsAsOneReduction) {
  // Figure 11b's idea in the RVD model: the two inputs as partial sums of one distributed
  // tensor, so that one reduction (an all-reduce once replicated) replaces two. Literally,
  // `add => reduce(concat)` does not type in this model: reduce consumes V, and concatenating
  // tensors never produces partial sums.
  auto o = small_run({"ewadd", "concat"}, {"reduce"}, 3, "u: [4, 6] {V: 2}, v: [4, 6] {V: 2}");
  o.attr_domains["axis"] = {0};
  auto r = generate(bundled(), o);
  const pcg::Rule* add = find_rule(r.rules, "reduce<2>(ewadd(u, v))", "ewadd(reduce<2>(u), reduce<2>(v))");
  ASSERT_NE(add, nullptr) << list_rules(r.rules);
  EXPECT_EQ(add->category, pcg::RuleCategory::Parallel);
  EXPECT_NE(find_rule(r.rules, "reduce<2>(concat<0>(u, v))", "concat<0>(reduce<2>(u), reduce<2>(v))"), nullptr);
}

TEST(PaperRules, MegatronLinearLayerStrategies) {
  // Figure 10's building blocks for the MLP: column (model), row/reduction and data parallelism.
  auto r = generate(bundled(), small_run({"matmul"}, {"partition", "combine", "replicate", "reduce"}, 4, "x: [4, 6], w: [6, 10]"));
  EXPECT_NE(find_rule(r.rules, "matmul(x, w)", "combine<1, 2>(matmul(replicate<2>(x), partition<1, 2>(w)))"), nullptr)
      << list_rules(r.rules);
  EXPECT_NE(find_rule(r.rules, "matmul(x, w)", "reduce<2>(matmul(partition<1, 2>(x), partition<0, 2>(w)))"), nullptr);
  EXPECT_NE(find_rule(r.rules, "matmul(x, w)", "combine<0, 2>(matmul(partition<0, 2>(x), replicate<2>(w)))"), nullptr);
}

TEST(PaperRules, MegatronRowParallelLayerTakesSplitActivations) {
  // Megatron's second linear layer consumes the first one's column-split output without a gather.
  auto r = generate(bundled(), small_run({"matmul"}, {"partition", "combine", "reduce"}, 3, "t: [4, 6] {D: [1, 2]}, w: [6, 10]"));
  const pcg::Rule* rule = find_rule(r.rules, "matmul(combine<1, 2>(t), w)", "reduce<2>(matmul(t, partition<0, 2>(w)))");
  ASSERT_NE(rule, nullptr) << list_rules(r.rules);
  EXPECT_EQ(rule->category, pcg::RuleCategory::Parallel);
}

TEST(PaperRules, MegatronAttentionHeadParallelism) {
  // Figure 10: the batched matmuls of attention split along the head dimension.
  auto o = small_run({"batch_matmul"}, {"partition", "combine"}, 4, "q: [4, 4, 6], k: [4, 6, 4]");
  o.attr_domains["dim"] = {0};  // the head dimension
  auto r = generate(bundled(), o);
  EXPECT_NE(find_rule(r.rules, "batch_matmul(q, k)", "combine<0, 2>(batch_matmul(partition<0, 2>(q), partition<0, 2>(k)))"), nullptr)
      << list_rules(r.rules);
}

}  // namespace
}  // namespace loom::superopt::test
