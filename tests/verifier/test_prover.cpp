#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "loom/verifier/prover.hpp"
#include "loom/verifier/rule_loading.hpp"
#include "loom/verifier/verify.hpp"
#include "verifier_test_support.hpp"

namespace loom::verifier {
namespace {

using testing::core_axioms;
using testing::core_library;
using testing::find_obligation;

bool contains(const std::vector<std::string>& list, const std::string& item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

TEST(Prover, KnownTrueRulesAreProvedWithTheirAxioms) {
  Prover prover(core_library(), core_axioms());
  const auto rules = obligations_from_library(core_library());
  ASSERT_EQ(rules.size(), 3u);
  const std::map<std::string, std::vector<std::string>> expected = {
      {"relu_rows", {"relu_partition_rows", "combine_partition_rows"}},
      {"matmul_data_parallel", {"matmul_row_partition", "combine_partition_rows"}},
      {"matmul_reduction_parallel", {"matmul_reduction_partition"}}};
  for (const auto& [rule, axioms] : expected) {
    const auto r = prover.prove(find_obligation(rules, rule), 10000);
    ASSERT_TRUE(r.proved) << rule << ": " << r.reason;
    for (const auto& a : axioms) EXPECT_TRUE(contains(r.core, a)) << rule << " without " << a;
    // The distractors play no part in any of these proofs.
    EXPECT_FALSE(contains(r.core, "ewmul_comm")) << rule;
    EXPECT_FALSE(contains(r.core, "transpose_involution")) << rule;
  }
}

TEST(Prover, BundledRulesAreProvedFromTheBundledAxioms) {
  const auto& lib = testing::bundled();
  Prover prover(lib, testing::bundled_axioms());
  for (const auto& ob : obligations_from_library(lib)) {
    const auto r = prover.prove(ob, 10000);
    EXPECT_TRUE(r.proved) << ob.name << ": " << r.reason;
    for (const auto& used : r.core) EXPECT_NE(testing::bundled_axioms().find(used), nullptr) << used;
  }
}

// Proves each rule of `rules` (spec text after the imports of the operators it uses) from the
// bundled axioms: a rule named false_... must stay unproved, every other one must be proved.
void expect_proofs_from_bundled_axioms(const std::string& rules, const std::string& where) {
  const spec::Library lib =
      spec::Library::from_text("import \"ops/core.loom\";\nimport \"ops/shape.loom\";\nimport \"ops/parallel.loom\";\n" + rules, where,
                               spec::Library::default_specs_dir());
  Prover prover(lib, testing::bundled_axioms());
  const auto obligations = obligations_from_library(lib);
  std::size_t written = 0;
  for (std::size_t at = rules.find("rule "); at != std::string::npos; at = rules.find("rule ", at + 1)) ++written;
  ASSERT_EQ(obligations.size(), written);
  for (const auto& ob : obligations) {
    const auto r = prover.prove(ob, 10000);
    if (ob.name.starts_with("false_")) {
      EXPECT_FALSE(r.proved) << ob.name;
    } else {
      EXPECT_TRUE(r.proved) << ob.name << ": " << r.reason;
    }
  }
}

// Over symbolic sizes a proof needs the dimensions of results: an elementwise product keeps its
// inputs' dimensions through its rank pack, and a split's first part is `at` wide whatever the
// packs around the split axis hold.
TEST(Prover, ShapeFactsFollowRankPacksThroughOperators) {
  expect_proofs_from_bundled_axioms(
      "rule through_ewmul: forall x: [m, 6], y: [m, 6]. ewmul(x, y) => split<1, 6>(concat<1>(ewmul(y, x), x)).0;\n"
      "rule split_of_split: forall w: [m, n] where 4 < m. split<0, 4>(concat<0>(w, w)).0 => "
      "split<0, 4>(concat<0>(split<0, 4>(w).0, split<0, 4>(w).0)).0;\n",
      "<packs>");
}

// A rule applies only where both sides are well-typed, so the requirements of its operators hold:
// a split at 6 of a concatenation leaves 6 < m + k, whichever operand the split falls in. A
// parallelization form keeps its input's sizes, so the split's condition carries through `reduce`.
// The false variant (another operand after x) stays unproved.
TEST(Prover, OperatorRequirementsAndParallelFormsStateSizes) {
  expect_proofs_from_bundled_axioms(
      "rule prefix_by_typing: forall x: [m, n], y: [k, n], u: [j, n]. "
      "split<0, 6>(concat<0>(x, y)).0 => split<0, 6>(concat<0>(x, concat<0>(y, u))).0;\n"
      "rule through_reduce: forall z: [m, n] {V: 2}, x: [m, k] where 4 < n. "
      "reduce<2>(split<1, 4>(z).0) => split<1, 4>(concat<1>(reduce<2>(z), x)).0;\n"
      "rule false_prefix: forall x: [m, n], y: [k, n], u: [k, n]. "
      "split<0, 6>(concat<0>(x, y)).0 => split<0, 6>(concat<0>(x, concat<0>(u, y))).0;\n"
      // 4 < n is all the split's requirement says; bound to the 2 or the 3 beside n, it would
      // contradict itself and prove anything.
      "rule false_axis_binding: forall x: [2, n, 3]. split<1, 4>(x).0 => split<1, 4>(relu(x)).0;\n",
      "<requirements>");
}

// The bundled axioms split feature maps (rank 4) along any axis, as they concatenate them: splits
// along the inner axes pass through concatenations and elementwise operators. The false variant
// stays unproved.
TEST(Prover, FeatureMapsSplitAlongEveryAxis) {
  expect_proofs_from_bundled_axioms(
      "rule prefix_on_axis_3: forall x: [m, n, k, j], y: [m, n, k, l], u: [m, n, k, q]. "
      "split<3, 6>(concat<3>(x, y)).0 => split<3, 6>(concat<3>(x, concat<3>(y, u))).0;\n"
      "rule across_axes: forall x: [m, n, k, j], y: [m, n, l, j] where 2 < j. "
      "split<3, 2>(concat<2>(relu(x), ewmul(y, y))).1 => concat<2>(relu(split<3, 2>(x).1), ewmul(split<3, 2>(y).1, split<3, 2>(y).1));\n"
      "rule false_on_axis_3: forall x: [m, n, k, j], y: [m, n, k, l], u: [m, n, k, l]. "
      "split<3, 6>(concat<3>(x, y)).0 => split<3, 6>(concat<3>(x, concat<3>(u, y))).0;\n",
      "<feature maps>");
}

// GELU passes through splits and concatenations along any axis, at any rank.
TEST(Prover, GeluPassesThroughSplitsAndConcatenations) {
  expect_proofs_from_bundled_axioms(
      "rule vector_half: forall g: [m], c: [m]. gelu(g) => split<0, m>(gelu(concat<0>(c, g))).1;\n"
      "rule inner_axis: forall x: [m, n, k] where 2 < k. gelu(split<2, 2>(x).1) => split<2, 2>(gelu(x)).1;\n"
      "rule false_vector_half: forall g: [m], c: [m]. gelu(g) => split<0, m>(gelu(concat<0>(g, c))).1;\n",
      "<gelu>");
}

// Softmax and layer norm reduce over the last axis only, and the scores, batched products and head
// projections are computed row by row and column by column: at rank 3 they pass through splits and
// concatenations along the other axes; a rank-1 layer norm is linear in its scale and shift. Along
// the reduced axis the same steps are false and stay unproved.
TEST(Prover, RowWiseAttentionOperatorsPassThroughSplitsAndConcatenations) {
  expect_proofs_from_bundled_axioms(
      "import \"ops/models.loom\";\nimport \"ops/linalg.loom\";\n"
      "rule softmax_rows: forall x: [m, n, k]. softmax(x) => split<0, m>(softmax(concat<0>(x, x))).0;\n"
      "rule layer_norm_rows: forall x: [m, n, k], g: [k]. layer_norm(x, g, g) => split<1, n>(layer_norm(concat<1>(x, x), g, g)).1;\n"
      "rule scores_queries: forall w: [m, n, k], v: [m, n, k]. "
      "attention_scores(w, v) => split<1, n>(attention_scores(concat<1>(v, w), v)).1;\n"
      "rule projection_features: forall x: [m, n, k], w: [m, k, j], v: [m, k, j]. "
      "head_proj_nobias(x, w) => split<3, j>(head_proj_nobias(x, concat<2>(v, w))).1;\n"
      "rule product_columns: forall a: int > 0, x: [m, n, k], w: [m, k, j] where a < j. "
      "split<2, a>(batch_matmul(x, w)).1 => batch_matmul(x, split<2, a>(w).1);\n"
      "rule layer_norm_scales: forall g: [m], c: [m]. layer_norm(g, ewadd(c, c), c) => layer_norm(g, c, layer_norm(g, c, c));\n"
      "rule scores_features_swapped: forall w: [m, n, k], v: [m, n, j]. "
      "attention_scores(concat<2>(w, v), concat<2>(v, w)) => attention_scores(concat<2>(v, w), concat<2>(w, v));\n"
      "rule product_inner_swapped: forall x: [m, n, k], v: [m, n, j], w: [m, k, n], u: [m, j, n]. "
      "batch_matmul(concat<2>(x, v), concat<1>(w, u)) => batch_matmul(concat<2>(v, x), concat<1>(u, w));\n"
      "rule false_scores_features_mismatched: forall w: [m, n, k], v: [m, n, k]. "
      "attention_scores(concat<2>(w, v), concat<2>(w, v)) => attention_scores(concat<2>(v, w), concat<2>(w, v));\n"
      "rule false_softmax_last_axis: forall x: [m, n, k]. softmax(x) => split<2, k>(softmax(concat<2>(x, x))).0;\n"
      "rule false_scores_queries: forall w: [m, n, k], v: [m, n, k]. "
      "attention_scores(w, v) => split<1, n>(attention_scores(concat<1>(w, v), v)).1;\n",
      "<attention>");
}

// A convolution passes through a split of its batch or of its output channels (the generator's
// rules with a split that cuts what a concatenation joined); it sums its input channels in any order
// both operands list them (from the axioms of concatenated channels and of fused activations), and
// concatenated input channels add up.
TEST(Prover, ConvolutionsPassThroughSplitsOfTheBatchAndTheOutputChannels) {
  expect_proofs_from_bundled_axioms(
      "import \"ops/conv.loom\";\n"
      "rule batch: forall w: [m, m, n, n], v: [m, m, n, n]. "
      "conv2d<1, 1, 1, 1, 0>(w, v) => split<0, m>(conv2d<1, 1, 1, 1, 0>(concat<0>(v, w), v)).1;\n"
      "rule output_channels: forall w: [m, m, n, n], v: [m, m, n, n]. "
      "conv2d<1, 1, 1, 1, 1>(w, v) => split<1, m>(conv2d<1, 1, 1, 1, 1>(w, concat<0>(w, v))).1;\n"
      "rule split_kernels: forall a: int > 0, x: [m, k, n, n], w: [j, k, 3, 3] where a < j. "
      "split<1, a>(conv2d<1, 1, 1, 1, 2>(x, w)).0 => conv2d<1, 1, 1, 1, 2>(x, split<0, a>(w).0);\n"
      "rule input_channels_swapped: forall x: [m, k, n, n], z: [m, j, n, n], w: [m, k, 3, 3], v: [m, j, 3, 3]. "
      "conv2d<1, 1, 1, 1, 1>(concat<1>(x, z), concat<1>(w, v)) => conv2d<1, 1, 1, 1, 1>(concat<1>(z, x), concat<1>(v, w));\n"
      "rule false_input_channels: forall w: [m, m, n, n], v: [m, m, n, n]. "
      "conv2d<1, 1, 1, 1, 0>(w, v) => conv2d<1, 1, 1, 1, 0>(concat<1>(w, w), concat<1>(v, v));\n",
      "<convolution>");
}

TEST(Prover, RuleWhoseOnlyAxiomIsRemovedIsNotProved) {
  Prover prover(core_library(), core_axioms());
  const auto rules = obligations_from_library(core_library());
  const auto& rule = find_obligation(rules, "matmul_reduction_parallel");
  const auto without = prover.prove(rule, 10000, {"matmul_reduction_partition"});
  EXPECT_FALSE(without.proved);
  EXPECT_FALSE(without.reason.empty());
  // The same prover still proves it with the axiom back: leaving one out is per proof.
  EXPECT_TRUE(prover.prove(rule, 10000).proved);
}

TEST(Prover, RemovedAxiomGivesUnknownNeverProvedNorRefuted) {
  VerifyOptions options;
  options.without = {"relu_partition_rows"};
  const auto rules = obligations_from_library(core_library());
  const auto report = verify(core_library(), core_axioms(), {find_obligation(rules, "relu_rows")}, options);
  ASSERT_EQ(report.verdicts.size(), 1u);
  const auto& v = report.verdicts[0].verification;
  EXPECT_EQ(v.status, pcg::VerificationStatus::Unknown);
  EXPECT_TRUE(v.core.empty());
  EXPECT_NE(v.reason.find("no counterexample"), std::string::npos) << v.reason;
}

// Ten pigeons in nine holes: the side condition is unsatisfiable, so the (otherwise false) rule
// holds vacuously, but refuting the pigeonhole principle takes Z3 many seconds.
std::string pigeonhole_rule() {
  std::string binders, distinct;
  for (int i = 0; i < 10; ++i) {
    binders += "p" + std::to_string(i) + ": int in {1, 2, 3, 4, 5, 6, 7, 8, 9}, ";
    for (int j = i + 1; j < 10; ++j)
      distinct += std::string(distinct.empty() ? "" : " && ") + "p" + std::to_string(i) + " != p" + std::to_string(j);
  }
  return "import \"ops/core.loom\";\nrule pigeons: forall " + binders + "x: [m, n] where " + distinct + ". relu(x) => sigmoid(x);\n";
}

TEST(Prover, TimeoutIsReportedAsUnknown) {
  // The rule's condition never holds, so loading it for users would refuse it: the prover is tested alone.
  const auto lib = spec::Library::from_text(pigeonhole_rule(), "<pigeons>", spec::Library::default_specs_dir(), spec::LoadOptions{false});
  const auto axioms = prepare_axioms(lib);
  const auto rules = obligations_from_library(lib);
  ASSERT_EQ(rules.size(), 1u);
  Prover prover(lib, axioms);
  const auto r = prover.prove(rules[0], 300);
  EXPECT_FALSE(r.proved);
  EXPECT_TRUE(r.timed_out) << r.reason;
  EXPECT_GE(r.seconds, 0.25);

  VerifyOptions options;
  options.timeout_ms = 300;
  const auto report = verify(lib, axioms, rules, options);
  const auto& v = report.verdicts.at(0).verification;
  EXPECT_EQ(v.status, pcg::VerificationStatus::Unknown);
  EXPECT_NE(v.reason.find("timeout after 300 ms"), std::string::npos) << v.reason;
  EXPECT_GE(v.seconds, 0.25);
}

TEST(Prover, FusedFormsAreTheirDefinitions) {
  const auto lib = spec::Library::from_text(
      "import \"ops/parallel.loom\";\n"
      "rule fuse: forall x: [m, n] {V: 2}. replicate<2>(reduce<2>(x)) => allreduce<2>(x);\n",
      "<fused>", spec::Library::default_specs_dir());
  const auto axioms = prepare_axioms(lib);
  Prover prover(lib, axioms);
  const auto r = prover.prove(obligations_from_library(lib).at(0), 10000);
  EXPECT_TRUE(r.proved) << r.reason;
  EXPECT_TRUE(r.core.empty());
}

TEST(Prover, AxiomsWithoutATriggerAreReportedUnusable) {
  // Both sides of the fused-form definitions expand to the same term.
  Prover prover(testing::bundled(), testing::bundled_axioms());
  const auto unusable = prover.unusable_axioms();
  const bool has_allreduce = std::any_of(unusable.begin(), unusable.end(), [](const auto& u) { return u.first == "allreduce_def"; });
  EXPECT_TRUE(has_allreduce);
  EXPECT_LT(unusable.size(), 10u);
}

}  // namespace
}  // namespace loom::verifier

namespace loom::verifier {
namespace {

TEST(Prover, MinimalCoresNeedEveryAxiomInThem) {
  const auto& lib = testing::bundled();
  const auto& axioms = testing::bundled_axioms();
  Prover prover(lib, axioms);
  const auto rules = obligations_from_library(lib);
  const auto& rule = testing::find_obligation(rules, "matmul_data_parallel");
  const auto r = prover.prove(rule, 10000, {}, true);
  ASSERT_TRUE(r.proved) << r.reason;
  ASSERT_FALSE(r.core.empty());
  // With only the core's axioms the rule is proved; without any one of them it is not.
  std::set<std::string> others;
  for (const auto& a : axioms.axioms)
    if (std::find(r.core.begin(), r.core.end(), a.name()) == r.core.end()) others.insert(a.name());
  EXPECT_TRUE(prover.prove(rule, 10000, others).proved);
  for (const auto& used : r.core) {
    auto without = others;
    without.insert(used);
    EXPECT_FALSE(prover.prove(rule, 10000, without).proved) << used << " is not needed";
  }
}

}  // namespace
}  // namespace loom::verifier
