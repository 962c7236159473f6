// Rules with several outputs are proved output by output, from their declarations: a rule whose
// attributes stay open holds at every size, which its graphs (typed at one) cannot show.
#include <gtest/gtest.h>

#include <algorithm>

#include "loom/interpreter/rule_graphs.hpp"
#include "loom/verifier/rule_loading.hpp"
#include "loom/verifier/term_text.hpp"
#include "loom/verifier/verify.hpp"
#include "verifier_test_support.hpp"

namespace loom::verifier {
namespace {

const spec::EquationDecl& declared(const std::string& name) {
  for (const auto* r : testing::bundled().rules())
    if (r->name == name) return *r;
  throw std::runtime_error("no rule " + name);
}

const std::vector<std::string> kMerges = {"merge_matmuls", "merge_head_projs", "merge_head_projs_nobias", "merge_convs"};

TEST(MultiOutputRuleProofs, EachOutputIsAGoalAndEveryMergeIsProved) {
  std::vector<Obligation> obligations;
  for (const auto& name : kMerges) obligations.push_back(obligation_from_equation(declared(name)));
  for (const auto& ob : obligations) EXPECT_EQ(ob.goals.size(), 2u) << ob.name;
  EXPECT_EQ(term_to_string(*obligations[0].goals[1].rhs), "split<1, n>(matmul(x, concat<1>(a, b))).1");
  VerifyOptions options;
  options.timeout_ms = 60000;
  const VerifyReport report = verify(testing::bundled(), testing::bundled_axioms(), obligations, options);
  for (std::size_t i = 0; i < obligations.size(); ++i)
    EXPECT_EQ(report.verdicts[i].verification.status, pcg::VerificationStatus::Proved)
        << obligations[i].name << ": " << report.verdicts[i].verification.reason << report.verdicts[i].verification.counterexample;
}

TEST(MultiOutputRuleProofs, AFalseMergeIsRefuted) {
  // The outputs swapped: the first part of the split is the product with `a`, not with `b`.
  const spec::Library library = spec::Library::from_text(
      "import \"" + spec::Library::default_specs_dir() + "/ops/linalg.loom\";\nimport \"" + spec::Library::default_specs_dir() +
      "/ops/shape.loom\";\n"
      "rule swapped: forall x: [m, k], a: [k, n], b: [k, n].\n"
      "  (matmul(x, a), matmul(x, b)) => (split<1, n>(matmul(x, concat<1>(a, b))).1, split<1, n>(matmul(x, concat<1>(a, b))).0);\n");
  ASSERT_EQ(library.rules().size(), 1u);
  VerifyOptions options;
  options.timeout_ms = 60000;
  const VerifyReport report =
      verify(testing::bundled(), testing::bundled_axioms(), {obligation_from_equation(*library.rules()[0])}, options);
  EXPECT_EQ(report.verdicts[0].verification.status, pcg::VerificationStatus::Refuted) << report.verdicts[0].verification.reason;
}

TEST(MultiOutputRuleProofs, ARuleWithOpenAttributesIsProvedFromItsDeclarationText) {
  const pcg::Rule rule = rule_of_declaration(testing::bundled(), declared("merge_matmuls"));
  ASSERT_FALSE(rule.open_attributes.empty());
  const Obligation ob = obligation_from_rule(rule, testing::bundled(), "rules[0]", "lib.json");
  EXPECT_EQ(ob.goals.size(), 2u);
  EXPECT_EQ(ob.where(), "lib.json: rules[0]");
  EXPECT_EQ(ob.key, obligation_from_equation(declared("merge_matmuls")).key);

  // A record whose open attribute names another dimension is not what its text declares.
  pcg::Rule tampered = rule;
  tampered.symbols[0].dim = 0;
  try {
    obligation_from_rule(tampered, testing::bundled(), "rules[0]", "lib.json");
    FAIL() << "a rule that differs from its declaration was accepted";
  } catch (const LoomError& e) {
    EXPECT_NE(std::string(e.what()).find("lib.json: rules[0]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("not what its declaration types to"), std::string::npos) << e.what();
  }
}

TEST(MultiOutputRuleProofs, SidesWithDifferentNumbersOfOutputsAreRefusedAtTheRule) {
  try {
    spec::Library::from_text("import \"" + spec::Library::default_specs_dir() +
                             "/ops/core.loom\";\n"
                             "rule uneven: (relu(x), relu(y)) => relu(x);\n");
    FAIL() << "the library loaded";
  } catch (const LoomError& e) {
    EXPECT_NE(std::string(e.what()).find("2:"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("the left-hand side gives 2 outputs, the right-hand side 1"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace loom::verifier
