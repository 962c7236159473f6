#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "loom/interpreter/rule_graphs.hpp"
#include "loom/verifier/proof_record.hpp"
#include "loom/verifier/rule_loading.hpp"
#include "loom/verifier/verify.hpp"
#include "verifier_test_support.hpp"

namespace loom::verifier {
namespace {

using pcg::VerificationStatus;

const spec::EquationDecl& declared(const spec::Library& library, const std::string& name) {
  for (const auto* r : library.rules())
    if (r->name == name) return *r;
  throw std::runtime_error("no rule " + name);
}

// The declared rule as a library carries it, proved from `axioms` and bound to its content.
pcg::Rule proved_rule(const spec::Library& library, const AxiomSet& axioms, const std::string& name) {
  const spec::EquationDecl& decl = declared(library, name);
  pcg::Rule rule = rule_of_declaration(library, decl);
  const VerifyReport report = verify(library, axioms, {obligation_from_equation(decl)}, VerifyOptions{});
  rule.verification = report.verdicts.at(0).verification;
  bind_record(*rule.verification, rule, library, axioms);
  return rule;
}

std::string core_library_text() {
  std::ifstream in(testing::data_file("core_library.loom"));
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// One checker hashes many rules over a few forms, each form's definition worked out once: every
// rule's hash is still the one worked out for it alone, whatever rules came before it.
TEST(ProofRecord, ACheckersContentHashIsTheRulesOwnHashInAnyOrder) {
  const spec::Library& library = testing::bundled();
  std::vector<pcg::Rule> rules;
  for (const auto* decl : library.rules()) rules.push_back(rule_of_declaration(library, *decl));
  ASSERT_GT(rules.size(), 3u);
  for (const bool reversed : {false, true}) {
    const ProofChecker checker(library);
    for (std::size_t i = 0; i < rules.size(); ++i) {
      const pcg::Rule& rule = rules[reversed ? rules.size() - 1 - i : i];
      EXPECT_EQ(checker.content_hash(rule), rule_hash(rule, library)) << rule.id;
    }
  }
}

TEST(ProofRecord, BindsTheRuleHashEveryCoreAxiomWithItsNumericCheckAndTheVersion) {
  const pcg::Rule rule = proved_rule(testing::core_library(), testing::core_axioms(), "relu_rows");
  const pcg::Verification& v = *rule.verification;
  ASSERT_EQ(v.status, VerificationStatus::Proved);
  EXPECT_EQ(v.rule_hash, rule_hash(rule, testing::core_library()));
  EXPECT_EQ(v.loom_version, loom_version());
  ASSERT_EQ(v.axioms.size(), v.core.size());
  for (const pcg::AxiomUse& a : v.axioms) {
    EXPECT_EQ(a.hash, axiom_hash(*testing::core_axioms().find(a.name)->decl, testing::core_library()));
    EXPECT_GT(a.checked_instances, 0) << a.name;
  }
  const auto standing = ProofChecker(testing::core_library()).standing(rule);
  ASSERT_TRUE(standing.has_value());
  EXPECT_EQ(standing->status, VerificationStatus::Proved) << standing->reason;
}

TEST(ProofRecord, SurvivesTheLibraryFileFormat) {
  const pcg::Rule rule = proved_rule(testing::core_library(), testing::core_axioms(), "matmul_data_parallel");
  const pcg::Rule read = pcg::rule_from_json(nlohmann::json::parse(pcg::rule_to_json(rule).dump()), testing::core_library());
  EXPECT_EQ(read.verification, rule.verification);
  EXPECT_EQ(ProofChecker(testing::core_library()).standing(read)->status, VerificationStatus::Proved);
}

TEST(ProofRecord, EditedRuleTextIsStaleNeverProved) {
  pcg::Rule rule = proved_rule(testing::core_library(), testing::core_axioms(), "relu_rows");
  rule.text = "rule relu_rows: relu(x) => x";
  const auto standing = ProofChecker(testing::core_library()).standing(rule);
  EXPECT_EQ(standing->status, VerificationStatus::Stale);
  EXPECT_NE(standing->reason.find("the rule has changed since it was proved"), std::string::npos) << standing->reason;
}

TEST(ProofRecord, EditedGraphIsStale) {
  const spec::Library& lib = testing::core_library();
  pcg::Rule rule = proved_rule(lib, testing::core_axioms(), "relu_rows");
  // The same rule, rebuilt with a split of 4 on its right-hand side, under the old record.
  pcg::Graph rhs;
  const int x = rhs.add_input("x", rule.lhs.node(0).output_shapes[0]);
  const int part = rhs.add_node(lib, "partition", {{"dim", 0}, {"degree", 4}}, {{x, 0}});
  const int relu = rhs.add_node(lib, "relu", {}, {{part, 0}});
  rhs.mark_output({rhs.add_node(lib, "combine", {{"dim", 0}, {"degree", 4}}, {{relu, 0}}), 0});
  rule.rhs = rhs;
  EXPECT_EQ(ProofChecker(lib).standing(rule)->status, VerificationStatus::Stale);
}

TEST(ProofRecord, AnAxiomEditedAfterTheProofMakesItStaleNamingTheAxiom) {
  const pcg::Rule rule = proved_rule(testing::core_library(), testing::core_axioms(), "relu_rows");
  std::string text = core_library_text();
  const std::string before = "axiom relu_partition_rows: forall d: int in {2, 4}";
  ASSERT_NE(text.find(before), std::string::npos);
  text.replace(text.find(before), before.size(), "axiom relu_partition_rows: forall d: int in {2, 4, 8}");
  const spec::Library edited = spec::Library::from_text(text, testing::data_file("edited.loom"), LOOM_VERIFIER_TEST_DATA);
  const auto standing = ProofChecker(edited).standing(rule);
  EXPECT_EQ(standing->status, VerificationStatus::Stale);
  EXPECT_NE(standing->reason.find("axiom relu_partition_rows, which the proof used, has changed"), std::string::npos) << standing->reason;
}

TEST(ProofRecord, RecordsThatBindNothingOrComeFromAnotherLoomAreStale) {
  pcg::Rule rule = proved_rule(testing::core_library(), testing::core_axioms(), "relu_rows");
  const ProofChecker checker(testing::core_library());
  pcg::Rule unbound = rule;
  unbound.verification->rule_hash.clear();
  unbound.verification->axioms.clear();
  EXPECT_EQ(checker.standing(unbound)->status, VerificationStatus::Stale);
  pcg::Rule older = rule;
  older.verification->loom_version = "0.0.1";
  EXPECT_NE(checker.standing(older)->reason.find("proved by Loom 0.0.1"), std::string::npos);
  pcg::Rule unbound_axiom = rule;
  unbound_axiom.verification->axioms.pop_back();
  EXPECT_EQ(checker.standing(unbound_axiom)->status, VerificationStatus::Stale);
  pcg::Rule never = rule;
  never.verification.reset();
  EXPECT_FALSE(checker.standing(never).has_value());
  EXPECT_EQ(standing_name(checker.standing(never)), "unverified");
}

TEST(ProofRecord, TheCacheAndTheReaderShareTheAxiomCheck) {
  const std::map<std::string, std::string> now = {{"a", "1"}, {"b", "2"}};
  EXPECT_FALSE(stale_axiom({{"a", "1", 4}}, now).has_value());
  EXPECT_NE(stale_axiom({{"a", "9", 4}}, now)->find("axiom a, which the proof used, has changed"), std::string::npos);
  EXPECT_NE(stale_axiom({{"c", "3", 4}}, now)->find("axiom c, which the proof used, is no longer in the library"), std::string::npos);
}

// A rule library under specs/rules/, read against the bundled specs.
pcg::RuleLibrary shipped_library(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw LoomError(path + ": cannot be read");
  return pcg::rule_library_from_json(nlohmann::json::parse(in), testing::bundled());
}

// specs/rules/NAME.verified.json is `loom verify specs/rules/NAME.loom -o ...`: when a rule or an
// axiom its proof used changes, this fails until the library is made again.
void expect_declarations_proved_and_current(const std::string& name) {
  const spec::Library& library = testing::bundled();
  const std::string path = spec::Library::default_specs_dir() + "/rules/" + name + ".verified.json";
  const pcg::RuleLibrary shipped = shipped_library(path);
  const ProofChecker checker(library);
  std::size_t declared = 0;
  for (const auto* decl : library.rules()) {
    if (decl->loc.file.find("rules/" + name + ".loom") == std::string::npos) continue;
    ++declared;
    const pcg::Rule written = rule_of_declaration(library, *decl);
    auto it = std::find_if(shipped.rules.begin(), shipped.rules.end(), [&](const pcg::Rule& r) { return r.id == decl->name; });
    ASSERT_NE(it, shipped.rules.end()) << decl->name << " is not in " << path;
    EXPECT_EQ(rule_hash(*it, library), rule_hash(written, library)) << decl->name << " differs from its declaration";
    const auto standing = checker.standing(*it);
    ASSERT_TRUE(standing.has_value()) << decl->name;
    EXPECT_EQ(standing->status, VerificationStatus::Proved) << decl->name << ": " << standing->reason;
  }
  EXPECT_EQ(shipped.rules.size(), declared);
  EXPECT_GT(declared, 0u);
}

TEST(BundledLibrary, IsTheHandWrittenRulesProvedAndStillCurrent) { expect_declarations_proved_and_current("unity"); }

TEST(BundledLibrary, TheImportRulesAreProvedAndStillCurrent) { expect_declarations_proved_and_current("onnx"); }

// A library scripts/bundle_rules.sh writes, which `loom optimize` uses by default: every record
// stands under the current axioms (when an axiom a proof used changes, this fails until the script
// runs again), with at least `min_rules` rules of which `min_proved` proved.
void expect_generated_library_current(const std::string& file, std::size_t min_rules, double min_proved) {
  const spec::Library& library = testing::bundled();
  const pcg::RuleLibrary shipped = shipped_library(spec::Library::default_specs_dir() + "/rules/" + file);
  ASSERT_GT(shipped.rules.size(), min_rules);
  const ProofChecker checker(library);
  std::size_t current = 0;
  std::string first_problem;
  std::size_t proved = 0;
  for (const pcg::Rule& rule : shipped.rules) {
    // Each record stands as it was written: a proof still holds, a refutation or an unknown is
    // what the verifier concluded about this very rule (searches leave those out).
    const auto standing = checker.standing(rule);
    if (standing && rule.verification && standing->status == rule.verification->status)
      ++current;
    else if (first_problem.empty())
      first_problem = rule.id + ": " + (standing ? standing->reason : "no record");
    proved += standing && standing->status == VerificationStatus::Proved;
  }
  EXPECT_EQ(current, shipped.rules.size()) << file << ", the first: " << first_problem << " (run scripts/bundle_rules.sh)";
  EXPECT_GE(static_cast<double>(proved), min_proved * static_cast<double>(shipped.rules.size())) << file;
}

TEST(BundledLibrary, TheGeneratedRulesAreProvedAndStillCurrent) { expect_generated_library_current("generated.verified.json", 1000, 0.9); }

TEST(BundledLibrary, TheFeatureMapRulesAreAllProvedAndStillCurrent) {
  expect_generated_library_current("feature_maps.verified.json", 400, 1.0);
}

TEST(SizeSymbols, ASplitPositionNamedByASizeSymbolIsProvedNotRefuted) {
  const spec::Library library = spec::Library::from_text(
      "import \"../../../specs/ops/shape.loom\";\n"
      "rule split_concat_right: forall x: [m, n], y: [m, k]. split<1, n>(concat<1>(x, y)).1 => y;\n"
      "rule split_concat_wrong: forall x: [m, n], y: [m, n]. split<1, n>(concat<1>(x, y)).1 => x;\n",
      testing::data_file("size_symbols.loom"), LOOM_VERIFIER_TEST_DATA);
  const auto obligations = obligations_from_library(library);
  CounterexampleOptions search;
  // The counterexample search binds the size symbol: a true rule has none, a false one has one.
  EXPECT_FALSE(find_counterexample(library, testing::find_obligation(obligations, "split_concat_right"), search).has_value());
  const auto wrong = find_counterexample(library, testing::find_obligation(obligations, "split_concat_wrong"), search);
  ASSERT_TRUE(wrong.has_value());
  EXPECT_EQ(wrong->description.find("unknown name"), std::string::npos) << wrong->description;
  // With the bundled axioms, the true rule is proved.
  const spec::EquationDecl& decl = declared(library, "split_concat_right");
  const VerifyReport report = verify(testing::bundled(), testing::bundled_axioms(), {obligation_from_equation(decl)}, VerifyOptions{});
  EXPECT_EQ(report.verdicts.at(0).verification.status, VerificationStatus::Proved)
      << report.verdicts.at(0).verification.reason << report.verdicts.at(0).verification.counterexample;
}

}  // namespace
}  // namespace loom::verifier
