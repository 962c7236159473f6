#include <gtest/gtest.h>

#include "loom/interpreter/parser.hpp"
#include "loom/interpreter/rule_graphs.hpp"
#include "loom/verifier/prover.hpp"
#include "loom/verifier/rule_loading.hpp"
#include "loom/verifier/term_text.hpp"
#include "loom/verifier/verify.hpp"
#include "verifier_test_support.hpp"

namespace loom::verifier {
namespace {

using pcg::ParallelShape;
using pcg::PortRef;

const spec::Library& lib() { return testing::bundled(); }

// split<1, 3>(concat<1>(x, y)).0 => x, for x: [m, 3] and y: [m, k] (typed at [2, 3] and [2, 4]).
pcg::Rule split_of_concat_rule(std::int64_t at) {
  pcg::Rule rule;
  rule.id = "split_of_concat";
  const int x = rule.lhs.add_input("x", ParallelShape::unpartitioned({2, 3}));
  const int y = rule.lhs.add_input("y", ParallelShape::unpartitioned({2, 4}));
  const int c = rule.lhs.add_node(lib(), "concat", {{"axis", 1}}, {{x, 0}, {y, 0}});
  const int s = rule.lhs.add_node(lib(), "split", {{"axis", 1}, {"at", at}}, {{c, 0}});
  rule.lhs.mark_output({s, 0});
  const int rx = rule.rhs.add_input("x", ParallelShape::unpartitioned({2, 3}));
  rule.rhs.mark_output({rx, 0});
  rule.declared.variables["x"].front = {pcg::DeclaredDim::named("m"), pcg::DeclaredDim::number(3)};
  rule.declared.variables["y"].front = {pcg::DeclaredDim::named("m"), pcg::DeclaredDim::named("k")};
  return rule;
}

TEST(RuleLoading, GraphsBecomeTermsOverSharedInputs) {
  pcg::Rule rule;
  rule.id = "shared";
  const int x = rule.lhs.add_input("x", ParallelShape::unpartitioned({4, 6}));
  const int r = rule.lhs.add_node(lib(), "relu", {}, {{x, 0}});
  const int sum = rule.lhs.add_node(lib(), "ewadd", {}, {{r, 0}, {r, 0}});  // relu(x) used twice
  rule.lhs.mark_output({sum, 0});
  const int rx = rule.rhs.add_input("x", ParallelShape::unpartitioned({4, 6}));
  const int p = rule.rhs.add_node(lib(), "partition", {{"dim", 0}, {"degree", 2}}, {{rx, 0}});
  const int c = rule.rhs.add_node(lib(), "combine", {{"dim", 0}, {"degree", 2}}, {{p, 0}});
  rule.rhs.mark_output({c, 0});
  rule.declared.variables["x"].front = {pcg::DeclaredDim::named("m"), pcg::DeclaredDim::named("n")};

  const Obligation ob = obligation_from_rule(rule, lib(), "rules[0]", "lib.json");
  ASSERT_EQ(ob.goals.size(), 1u);
  EXPECT_EQ(term_to_string(*ob.goals[0].lhs), "ewadd(relu(x), relu(x))");
  EXPECT_EQ(term_to_string(*ob.goals[0].rhs), "combine<0, 2>(partition<0, 2>(x))");
  EXPECT_EQ(ob.goals[0].lhs->args[0], ob.goals[0].lhs->args[1]);  // the shared subterm is one term
  ASSERT_EQ(ob.quantifier.binders.size(), 1u);
  // Stated over the shape the rule declares, not the [4, 6] its graphs were typed at.
  EXPECT_EQ(ob.key, "forall x: [m, n]. ewadd(relu(x), relu(x)) => combine<0, 2>(partition<0, 2>(x))");
  EXPECT_EQ(ob.where(), "lib.json: rules[0]");
  // A variable it declares no shape for is quantified over every shape.
  rule.declared = {};
  EXPECT_EQ(obligation_from_rule(rule, lib()).key, "ewadd(relu(x), relu(x)) => combine<0, 2>(partition<0, 2>(x))");
}

TEST(RuleLoading, InputDegreesBecomeBinderAnnotations) {
  pcg::Rule rule;
  rule.id = "partial_sums";
  ParallelShape z = ParallelShape::unpartitioned({4, 6});
  z.V = 2;
  const int in = rule.lhs.add_input("z", z);
  const int red = rule.lhs.add_node(lib(), "reduce", {{"degree", 2}}, {{in, 0}});
  rule.lhs.mark_output({red, 0});
  const int rin = rule.rhs.add_input("z", z);
  const int all = rule.rhs.add_node(lib(), "reduce", {{"degree", 2}}, {{rin, 0}});
  rule.rhs.mark_output({all, 0});
  rule.declared.variables["z"].front = {pcg::DeclaredDim::named("m"), pcg::DeclaredDim::named("n")};
  const Obligation ob = obligation_from_rule(rule, lib());
  EXPECT_EQ(ob.key, "forall z: [m, n] {V: 2}. reduce<2>(z) => reduce<2>(z)");
}

TEST(RuleLoading, MultiOutputOpsAreProjected) {
  const Obligation ob = obligation_from_rule(split_of_concat_rule(3), lib());
  EXPECT_EQ(term_to_string(*ob.goals[0].lhs), "split<1, 3>(concat<1>(x, y)).0");
}

TEST(RuleLoading, DeclaredSizesLetZ3UseSizeAttributes) {
  // split_concat_first: split<1, n1>(concat<1>(x, y)).first == x, where n1 is x's column count.
  Prover prover(lib(), testing::bundled_axioms());
  const auto proof = prover.prove(obligation_from_rule(split_of_concat_rule(3), lib()), 10000);
  ASSERT_TRUE(proof.proved) << proof.reason;
}

TEST(RuleLoading, SplitAtTheWrongPlaceIsRefuted) {
  const auto report = verify(lib(), testing::bundled_axioms(), {obligation_from_rule(split_of_concat_rule(2), lib())}, {});
  const auto& v = report.verdicts.at(0).verification;
  EXPECT_EQ(v.status, pcg::VerificationStatus::Refuted);
  EXPECT_NE(v.counterexample.find("parallel shape"), std::string::npos) << v.counterexample;
}

TEST(RuleLoading, LoomRulesAreFilteredByFile) {
  const auto lib = spec::Library::load({spec::Library::default_specs_dir(), testing::data_file("planted_false.loom")});
  EXPECT_EQ(obligations_from_library(lib, {testing::data_file("planted_false.loom")}).size(), 2u);
  EXPECT_EQ(obligations_from_library(lib).size(), lib.rules().size());
  const auto ob = obligations_from_library(lib, {testing::data_file("planted_false.loom")}).at(0);
  EXPECT_EQ(ob.text, "rule relu_of_sum: forall x: [m, n]. relu(reduce_sum(x)) => reduce_sum(relu(x))");
  EXPECT_NE(ob.where().find("planted_false.loom:5:"), std::string::npos) << ob.where();
}

// A rule library's rule is proved over the shapes it declares, which is what a match may give its
// variables: proved at its example sizes alone, this rule would be applied where it is false.
TEST(RuleLoading, ARuleIsProvedOverItsDeclaredShapesNotItsExampleSizes) {
  const spec::Module module = spec::parse_module(
      "rule first_four: forall x: [4, 6], y: [4, 6]. split<1, 4>(concat<1>(x, y)).0 => split<1, 4>(concat<1>(concat<1>(x, x), y)).0;",
      "<test>");
  pcg::Rule rule = spec::rule_from_declaration(lib(), module.rules.at(0));
  const VerifyOptions options;
  const auto status = [&](const pcg::Rule& r) {
    return verify(lib(), testing::bundled_axioms(), {obligation_from_rule(r, lib())}, options).verdicts.at(0).verification;
  };
  EXPECT_EQ(status(rule).status, pcg::VerificationStatus::Proved) << status(rule).reason;  // six columns: the first four are x's
  // As `loom generate` writes it: the rows a symbol the split's 4 holds fixed, the columns open.
  for (const char* v : {"x", "y"}) rule.declared.variables[v].front = {pcg::DeclaredDim::named("m"), pcg::DeclaredDim::named("n")};
  rule.declared.fixed = {{"m", 4}};
  const pcg::Verification wider = status(rule);
  EXPECT_EQ(wider.status, pcg::VerificationStatus::Refuted) << wider.reason;  // with three columns the fourth is y's or x's
  EXPECT_NE(wider.counterexample.find("x = [4, "), std::string::npos) << wider.counterexample;
}

}  // namespace
}  // namespace loom::verifier
