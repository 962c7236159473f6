#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "error_text.hpp"
#include "fake_catalog.hpp"
#include "loom/pcg/rule.hpp"

namespace loom::pcg {
namespace {

using nlohmann::json;
using test_support::contains;
using test_support::error_of;
using test_support::FakeCatalog;

bool is_parallel_op(const std::string& op) { return op == "split"; }

// relu of a half => the half of a relu: a toy rule over the fake catalog's operators.
Rule sample_rule(const OpCatalog& catalog) {
  Rule rule;
  rule.id = "r1";
  const int lx = rule.lhs.add_input("x", ParallelShape::unpartitioned({4, 6}));
  const int lhalves = rule.lhs.add_node(catalog, "split", {{"axis", 0}}, {{lx, 0}});
  rule.lhs.mark_output({rule.lhs.add_node(catalog, "relu", {}, {{lhalves, 0}}), 0});
  const int rx = rule.rhs.add_input("x", ParallelShape::unpartitioned({4, 6}));
  const int relu = rule.rhs.add_node(catalog, "relu", {}, {{rx, 0}});
  rule.rhs.mark_output({rule.rhs.add_node(catalog, "split", {{"axis", 0}}, {{relu, 0}}), 0});
  rule.category = classify_rule(rule.lhs, rule.rhs, is_parallel_op);
  rule.text = "rule r1: relu(split<0>(x).0) => split<0>(relu(x)).0;";
  rule.constraints = {"m % 2 == 0"};
  rule.provenance = {{"source", "test"}};
  return rule;
}

TEST(Rule, LibraryRoundTripIsExact) {
  FakeCatalog catalog;
  RuleLibrary lib;
  lib.specs = {"specs/ops/core.loom"};
  lib.rules.push_back(sample_rule(catalog));
  Rule verified = sample_rule(catalog);
  verified.id = "r2";
  verified.declared.variables["x"].front = {DeclaredDim::named("m"), DeclaredDim::number(6)};
  verified.declared.fixed["a"] = 3;
  verified.verification = Verification{
      VerificationStatus::Proved, {"a1", "a2"}, "", "", 0.25, "0123456789abcdef", {{"a1", "1111", 4}, {"a2", "2222", 4}}, "0.1.0"};
  lib.rules.push_back(verified);
  const json j = rule_library_to_json(lib);
  EXPECT_EQ(j["format"], kRuleFormat);
  EXPECT_EQ(j["rules"][0]["variables"], json::array({"x"}));
  RuleLibrary back = rule_library_from_json(json::parse(j.dump()), catalog);
  ASSERT_EQ(back.rules.size(), 2u);
  EXPECT_EQ(back.specs, lib.specs);
  EXPECT_EQ(back.rules[0].lhs, lib.rules[0].lhs);
  EXPECT_EQ(back.rules[0].rhs, lib.rules[0].rhs);
  EXPECT_EQ(back.rules[0].text, lib.rules[0].text);
  EXPECT_EQ(back.rules[0].constraints, lib.rules[0].constraints);
  EXPECT_EQ(back.rules[0].provenance, lib.rules[0].provenance);
  EXPECT_FALSE(back.rules[0].verification.has_value());
  EXPECT_TRUE(back.rules[0].declared.empty());
  EXPECT_EQ(back.rules[1].declared, verified.declared);
  ASSERT_TRUE(back.rules[1].verification.has_value());
  EXPECT_EQ(*back.rules[1].verification, *verified.verification);
}

TEST(Rule, ClassifiesByTheOperatorsItUses) {
  FakeCatalog catalog;
  Graph relu_only;
  relu_only.mark_output(
      {relu_only.add_node(catalog, "relu", {}, {{relu_only.add_input("x", ParallelShape::unpartitioned({4, 6})), 0}}), 0});
  EXPECT_EQ(classify_rule(relu_only, relu_only, is_parallel_op), RuleCategory::Algebraic);
  Rule r = sample_rule(catalog);
  EXPECT_EQ(r.category, RuleCategory::Parallel);  // the compute ops (one relu) are the same on both sides
  Graph two_relus;
  const int x = two_relus.add_input("x", ParallelShape::unpartitioned({4, 6}));
  const int h = two_relus.add_node(catalog, "split", {{"axis", 0}}, {{x, 0}});
  two_relus.mark_output({two_relus.add_node(catalog, "relu", {}, {{two_relus.add_node(catalog, "relu", {}, {{h, 0}}), 0}}), 0});
  EXPECT_EQ(classify_rule(r.lhs, two_relus, is_parallel_op), RuleCategory::Hybrid);
}

TEST(Rule, ErrorsNameTheJsonPath) {
  FakeCatalog catalog;
  RuleLibrary lib;
  lib.rules.push_back(sample_rule(catalog));
  json j = rule_library_to_json(lib);

  json bad_category = j;
  bad_category["rules"][0]["category"] = "magic";
  EXPECT_TRUE(
      contains(error_of([&] { rule_library_from_json(bad_category, catalog); }), "rules[0].category: unknown rule category \"magic\""));

  json bad_node = j;
  bad_node["rules"][0]["rhs"]["nodes"][1]["op"] = "frobnicate";
  EXPECT_TRUE(contains(error_of([&] { rule_library_from_json(bad_node, catalog); }), "rules[0].rhs: nodes[1].op: unknown operator"));

  json stray_input = j;
  stray_input["rules"][0]["rhs"]["nodes"][0]["name"] = "y";
  EXPECT_TRUE(
      contains(error_of([&] { rule_library_from_json(stray_input, catalog); }), "input \"y\" is not an input of the left-hand side"));

  json no_outputs = j;
  no_outputs["rules"][0]["rhs"]["outputs"] = json::array();
  EXPECT_TRUE(contains(error_of([&] { rule_library_from_json(no_outputs, catalog); }), "same, non-zero number of outputs"));

  json bad_status = j;
  bad_status["rules"][0]["verification"] = {{"status", "probably"}};
  EXPECT_TRUE(contains(error_of([&] { rule_library_from_json(bad_status, catalog); }),
                       "rules[0].verification.status: unknown verification status"));

  json other_shape = j;  // the right-hand side gives the whole relu, not its half
  other_shape["rules"][0]["rhs"]["outputs"][0] = {{"node", 1}, {"port", 0}};
  EXPECT_TRUE(contains(error_of([&] { rule_library_from_json(other_shape, catalog); }),
                       "rules[0]: rule r1: the sides differ in shape: the left-hand side gives [2, 6], the right-hand side [4, 6]"));

  json undeclared_variable = j;
  undeclared_variable["rules"][0]["declared"] = {{"variables", {{"y", {"m", "n"}}}}};
  EXPECT_TRUE(contains(error_of([&] { rule_library_from_json(undeclared_variable, catalog); }),
                       "rules[0].declared: \"y\" is declared a shape but is not a variable of the left-hand side"));

  json not_its_own_shape = j;  // the graphs hold x at [4, 6]
  not_its_own_shape["rules"][0]["declared"] = {{"variables", {{"x", {"n", "n"}}}}};
  EXPECT_TRUE(contains(error_of([&] { rule_library_from_json(not_its_own_shape, catalog); }),
                       "rules[0].declared: the rule's graphs do not have the shapes it declares: x is typed [4, 6], declared [n, n]"));

  json two_packs = j;
  two_packs["rules"][0]["declared"] = {{"variables", {{"x", {"*", "n", "*"}}}}};
  EXPECT_TRUE(contains(error_of([&] { rule_library_from_json(two_packs, catalog); }),
                       "rules[0].declared.variables.x[2]: a shape has at most one rank pack"));

  json wrong_format = j;
  wrong_format["format"] = "loom-pcg";
  EXPECT_TRUE(contains(error_of([&] { rule_library_from_json(wrong_format, catalog); }), "format: expected \"loom-rules\""));
}

// A match keeps to the shapes the rule's statement gives its variables: the proof covers those only.
class DeclaredSizes : public ::testing::Test {
 protected:
  std::optional<std::map<std::string, std::int64_t>> sizes_at(const DeclaredShapes& declared, std::vector<std::int64_t> x_dims,
                                                              std::vector<std::int64_t> k_dims) {
    Graph g;
    const int x = g.add_input("x", ParallelShape::unpartitioned(std::move(x_dims)));
    const int k = g.add_input("k", ParallelShape::unpartitioned(std::move(k_dims)));
    return declared_sizes(declared, g, {{"x", {x, 0}}, {"k", {k, 0}}});
  }
};

TEST_F(DeclaredSizes, OneSymbolTakesOneSize) {
  DeclaredShapes declared;
  declared.variables["k"].front = {DeclaredDim::named("n"), DeclaredDim::named("n"), DeclaredDim::named("l"), DeclaredDim::named("l")};
  declared.variables["x"].front = {DeclaredDim::named("b"), DeclaredDim::named("n")};
  EXPECT_FALSE(sizes_at(declared, {8, 192}, {32, 192, 1, 1}));  // a kernel of other in and out channels
  EXPECT_FALSE(sizes_at(declared, {8, 32}, {32, 32, 3, 1}));
  EXPECT_FALSE(sizes_at(declared, {8, 16}, {32, 32, 1, 1}));  // n taken twice across variables
  const auto sizes = sizes_at(declared, {8, 32}, {32, 32, 3, 3});
  ASSERT_TRUE(sizes);
  EXPECT_EQ(*sizes, (std::map<std::string, std::int64_t>{{"b", 8}, {"l", 3}, {"n", 32}}));
}

TEST_F(DeclaredSizes, NumbersRanksPacksAndFixedSymbols) {
  DeclaredShapes declared;
  declared.variables["x"].front = {DeclaredDim::number(1), DeclaredDim::named("n")};
  declared.variables["k"].rank_pack = true;
  declared.variables["k"].back = {DeclaredDim::named("n"), DeclaredDim::named("q")};
  EXPECT_TRUE(sizes_at(declared, {1, 5}, {5, 9}));
  EXPECT_TRUE(sizes_at(declared, {1, 5}, {2, 3, 5, 9}));  // the pack takes any rank
  EXPECT_FALSE(sizes_at(declared, {2, 5}, {5, 9}));       // the number
  EXPECT_FALSE(sizes_at(declared, {1, 5}, {4, 9}));       // the symbol after the pack
  EXPECT_FALSE(sizes_at(declared, {1, 5}, {5}));          // fewer dimensions than written
  EXPECT_FALSE(sizes_at(declared, {1, 5, 1}, {5, 9}));    // another rank without a pack
  declared.fixed["n"] = 7;                                // an attribute holds n at 7
  EXPECT_FALSE(sizes_at(declared, {1, 5}, {5, 9}));
  EXPECT_TRUE(sizes_at(declared, {1, 7}, {7, 9}));
  EXPECT_EQ(to_string(declared.variables["k"]), "[*, n, q]");
}

}  // namespace
}  // namespace loom::pcg
