#include <gtest/gtest.h>

#include "loom/interpreter/int_eval.hpp"
#include "loom/verifier/axiom_set.hpp"
#include "loom/verifier/rule_loading.hpp"
#include "loom/verifier/verify.hpp"
#include "verifier_test_support.hpp"

namespace loom::verifier {
namespace {

TEST(AxiomSet, LibraryWithAnUnsoundAxiomIsRefusedNamingIt) {
  const auto lib = spec::Library::load({testing::data_file("unsound_axiom.loom")});
  try {
    prepare_axioms(lib);
    FAIL() << "an unsound axiom was accepted";
  } catch (const LoomError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("axiom relu_additive is unsound"), std::string::npos) << message;
    EXPECT_NE(message.find("unsound_axiom.loom:4:7"), std::string::npos) << message;
    EXPECT_NE(message.find("differs"), std::string::npos) << message;  // the breaking instance
  }
}

TEST(AxiomSet, EveryBundledAxiomIsPrepared) { EXPECT_EQ(testing::bundled_axioms().axioms.size(), testing::bundled().axioms().size()); }

TEST(AxiomSet, DivisibilityByADegreeIsDroppedAsTyping) {
  const auto* a = testing::bundled_axioms().find("combine_partition_rows");
  ASSERT_NE(a, nullptr);
  EXPECT_TRUE(a->conditions.empty());
  ASSERT_EQ(a->typing_conditions.size(), 1u);
  EXPECT_EQ(spec::expr_to_string(*a->typing_conditions[0]), "((m % d) == 0)");
}

TEST(AxiomSet, IntegerConditionsReachZ3) {
  const auto* a = testing::bundled_axioms().find("relu_pool_max");
  ASSERT_NE(a, nullptr);
  std::vector<std::string> kept;
  for (const auto& c : a->conditions) kept.push_back(spec::expr_to_string(*c));
  EXPECT_EQ(kept, (std::vector<std::string>{"(p < kh)", "(p < kw)"}));
}

TEST(AxiomSet, SizeConditionThatChangesValuesIsKept) {
  // split<a, k>(concat<a>(x, y)).0 == split<a, k>(x).0 needs k inside x; without the condition
  // Z3 could equate prefixes of concatenations with different second operands.
  const auto* a = testing::bundled_axioms().find("split_concat_prefix_first");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->conditions.size(), 1u);
  EXPECT_TRUE(a->typing_conditions.empty());

  const auto lib = spec::Library::load({testing::data_file("semantic_condition.loom")});
  const auto set = prepare_axioms(lib);
  ASSERT_EQ(set.axioms.size(), 1u);
  EXPECT_EQ(set.axioms[0].conditions.size(), 1u);
  EXPECT_TRUE(set.axioms[0].typing_conditions.empty());
}

TEST(AxiomSet, FingerprintFollowsTheStatement) {
  const auto one = spec::Library::from_text("import \"ops/core.loom\";\naxiom c: forall x: [*s], y: [*s]. ewadd(x, y) == ewadd(y, x);\n",
                                            "<a>", spec::Library::default_specs_dir());
  const auto same =
      spec::Library::from_text("import \"ops/core.loom\";\n\n// moved\naxiom c: forall x: [*s], y: [*s]. ewadd(x, y) == ewadd(y, x);\n",
                               "<b>", spec::Library::default_specs_dir());
  const auto other = spec::Library::from_text("import \"ops/core.loom\";\naxiom c: forall x: [*s], y: [*s]. ewmul(x, y) == ewmul(y, x);\n",
                                              "<c>", spec::Library::default_specs_dir());
  EXPECT_EQ(prepare_axioms(one).axioms[0].fingerprint, prepare_axioms(same).axioms[0].fingerprint);
  EXPECT_NE(prepare_axioms(one).axioms[0].fingerprint, prepare_axioms(other).axioms[0].fingerprint);
}

TEST(AxiomSet, KeptSizeConditionBlocksAFalseProof) {
  // Both sides split at 4 a concatenation of x (3 columns) with different second operands: only
  // the dropped condition k < 3 would let Z3 rewrite both to split<1, 4>(x).0.
  const auto lib = spec::Library::from_text(
      "import \"ops/shape.loom\";\n"
      "axiom prefix: forall k: int > 0, x: [m, n1], y: [m, n2] where k < n1.\n"
      "  split<1, k>(concat<1>(x, y)).0 == split<1, k>(x).0;\n"
      "rule wrong: forall x: [2, 3], y: [2, 4], z: [2, 4]. split<1, 4>(concat<1>(x, y)).0 => split<1, 4>(concat<1>(x, z)).0;\n"
      "rule right: forall x: [2, 3], y: [2, 4], z: [2, 4]. split<1, 2>(concat<1>(x, y)).0 => split<1, 2>(concat<1>(x, z)).0;\n",
      "<prefix>", spec::Library::default_specs_dir());
  const auto set = prepare_axioms(lib);
  ASSERT_EQ(set.axioms.at(0).conditions.size(), 1u);
  VerifyOptions options;
  options.timeout_ms = 2000;
  const auto rules = obligations_from_library(lib);
  const auto report = verify(lib, set, rules, options);
  EXPECT_EQ(report.verdicts.at(0).verification.status, pcg::VerificationStatus::Refuted);
  EXPECT_EQ(report.verdicts.at(1).verification.status, pcg::VerificationStatus::Proved);
}

}  // namespace
}  // namespace loom::verifier
