// Numbers in axioms and rules stand for rank-0 constants: the interpreter checks an axiom written
// with them, Z3 proves a rule from such axioms and refuses one written with another number, the
// rule's graphs and JSON keep which inputs are numbers, and the checker refuses a number that a
// rewrite would have to make.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>

#include "loom/interpreter/axiom_check.hpp"
#include "loom/interpreter/library.hpp"
#include "loom/interpreter/parser.hpp"
#include "loom/interpreter/rule_graphs.hpp"
#include "loom/pcg/diagnostic.hpp"
#include "loom/pcg/match.hpp"
#include "loom/pcg/rule.hpp"
#include "loom/verifier/rule_loading.hpp"
#include "loom/verifier/verify.hpp"
#include "verifier_test_support.hpp"

namespace loom::verifier {
namespace {

const spec::Library& numbers() {
  static const spec::Library library = spec::Library::load({spec::Library::default_specs_dir(), testing::data_file("numbers.loom")});
  return library;
}

const spec::EquationDecl& declared(const std::vector<const spec::EquationDecl*>& all, const std::string& name) {
  auto it = std::find_if(all.begin(), all.end(), [&](const spec::EquationDecl* d) { return d->name == name; });
  if (it == all.end()) throw std::runtime_error("no declaration " + name);
  return **it;
}

TEST(Numbers, TheInterpreterChecksAnAxiomAtItsNumbers) {
  const auto right = spec::check_axiom(numbers(), declared(numbers().axioms(), "gelu_erf_form"));
  EXPECT_TRUE(right.sound) << right.problem;
  EXPECT_GT(right.instances, 0);
  const auto wrong = spec::check_axiom(numbers(), declared(numbers().axioms(), "gelu_with_wrong_half"));
  EXPECT_FALSE(wrong.sound);
}

TEST(Numbers, ARuleIsProvedAtTheAxiomsNumbersOnly) {
  const spec::Library& bundled = testing::bundled();
  const auto rules = obligations_from_library(numbers(), {testing::data_file("numbers.loom")});
  VerifyOptions options;
  options.timeout_ms = 5000;
  // Proved from the bundled axioms alone (the false axiom of numbers.loom is not among them).
  const auto proved = verify(bundled, testing::bundled_axioms(), {testing::find_obligation(rules, "gelu_commuted")}, options);
  const auto& p = proved.verdicts.at(0).verification;
  EXPECT_EQ(p.status, pcg::VerificationStatus::Proved) << p.reason;
  EXPECT_NE(std::find(p.core.begin(), p.core.end(), "gelu_erf_form"), p.core.end());
  const auto refused = verify(bundled, testing::bundled_axioms(), {testing::find_obligation(rules, "gelu_wrong_half")}, options);
  EXPECT_NE(refused.verdicts.at(0).verification.status, pcg::VerificationStatus::Proved);
}

TEST(Numbers, ARulesGraphsAndJsonKeepWhichInputsAreNumbers) {
  const pcg::Rule rule = spec::rule_from_declaration(numbers(), declared(numbers().rules(), "gelu_commuted"));
  ASSERT_EQ(rule.literals.size(), 3u);
  EXPECT_EQ(rule.literals.at(spec::literal_name(0.5)), 0.5);
  EXPECT_EQ(rule.literals.at(spec::literal_name(1)), 1.0);
  EXPECT_EQ(rule.literals.at(spec::literal_name(0.7071067811865476)), 0.7071067811865476);
  const pcg::Rule back = pcg::rule_from_json(pcg::rule_to_json(rule), numbers());
  EXPECT_EQ(back.literals, rule.literals);
  // A number is no variable of the proof: only x is quantified.
  const Obligation ob = obligation_from_rule(rule, numbers());
  EXPECT_EQ(goal_variables(ob), std::vector<std::string>{"x"});
  for (const auto& b : ob.quantifier.binders) EXPECT_FALSE(rule.literals.count(b.name)) << b.name;
}

TEST(Numbers, ANumberARewriteWouldHaveToMakeIsRefusedAtItsPlace) {
  const spec::Module parsed = spec::parse_module("import \"" + spec::Library::default_specs_dir() +
                                                     "/ops/core.loom\";\n"
                                                     "rule makes_a_constant: relu(x) => scalar_mul(relu(x), 1);\n"
                                                     "rule bare: relu(x) => 2;\n",
                                                 "made.loom");
  std::vector<std::string> messages;
  for (const auto* decl : {&parsed.rules.at(0), &parsed.rules.at(1)})
    for (const auto& d : spec::check_rule_declaration(testing::bundled(), *decl)) messages.push_back(d.to_string());
  const auto has = [&](const std::string& text) {
    return std::any_of(messages.begin(), messages.end(), [&](const std::string& m) { return m.find(text) != std::string::npos; });
  };
  EXPECT_TRUE(has("made.loom:2:")) << ::testing::PrintToString(messages);
  EXPECT_TRUE(has("the number 1 is written on the right-hand side only")) << ::testing::PrintToString(messages);
  EXPECT_TRUE(has("must compute something, not be a bare number")) << ::testing::PrintToString(messages);
}

TEST(Numbers, AJsonNumberMustBeNamedByItsValue) {
  const pcg::Rule rule = spec::rule_from_declaration(numbers(), declared(numbers().rules(), "gelu_commuted"));
  nlohmann::json json = pcg::rule_to_json(rule);
  json["literals"][pcg::literal_name(0.5)] = 0.7;  // proved for 0.5, but would match 0.7
  try {
    pcg::rule_from_json(json, numbers());
    FAIL() << "a number whose input names another value was read";
  } catch (const LoomError& e) {
    EXPECT_NE(std::string(e.what()).find("literals.#0.5"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("is named #0.7"), std::string::npos) << e.what();
  }
}

TEST(Numbers, ANumberMatchesOnlyAConstantOfItsValueWhereConstantsAreKnown) {
  const pcg::Rule rule = spec::rule_from_declaration(numbers(), declared(numbers().rules(), "gelu_commuted"));
  // The rule's own left-hand side, its numbers held by constants of a model.
  const pcg::Graph& g = rule.lhs;
  std::map<std::string, double> held = rule.literals;
  const auto lookup = [&](const pcg::Node& n) -> std::optional<double> {
    auto it = held.find(n.name);
    return it == held.end() ? std::nullopt : std::optional<double>(it->second);
  };
  EXPECT_TRUE(pcg::find_matches(pcg::GraphIndex(g), rule).empty()) << "without known constants, numbers match nothing";
  EXPECT_EQ(pcg::find_matches(pcg::GraphIndex(g, lookup), rule).size(), 1u);
  held[pcg::literal_name(0.5)] = 0.5 * (1 + 5e-7);
  EXPECT_EQ(pcg::find_matches(pcg::GraphIndex(g, lookup), rule).size(), 1u) << "a float32 rounding of the number matches";
  held[pcg::literal_name(0.5)] = 0.5 * (1 + 2e-6);
  EXPECT_TRUE(pcg::find_matches(pcg::GraphIndex(g, lookup), rule).empty());
  EXPECT_TRUE(pcg::matches_literal(0, 0));
  EXPECT_FALSE(pcg::matches_literal(1e-300, 0));
  EXPECT_FALSE(pcg::matches_literal(2e-12, 1e-12));
  EXPECT_TRUE(pcg::matches_literal(-0.5 * (1 - 5e-7), -0.5));
}

TEST(Numbers, AFusedFormWritingANumberIsRefused) {
  const spec::Module parsed = spec::parse_module("fused halve(x) = scalar_mul(x, 0.5);\n", "fused.loom");
  ASSERT_EQ(parsed.fused.size(), 1u);
  // The checker runs on a library: the bundled specs with this fused form.
  namespace fs = std::filesystem;
  const fs::path file = fs::temp_directory_path() / ("loom_fused_number_" + std::to_string(::getpid()) + ".loom");
  std::ofstream(file) << "import \"" << spec::Library::default_specs_dir() << "/ops/core.loom\";\nfused halve(x) = scalar_mul(x, -0.5);\n";
  try {
    spec::Library::load({file.string()});
    ADD_FAILURE() << "a fused form with a number loaded";
  } catch (const LoomError& e) {
    EXPECT_NE(std::string(e.what()).find("fused form halve writes the number -0.5"), std::string::npos) << e.what();
  }
  fs::remove(file);
}

}  // namespace
}  // namespace loom::verifier
