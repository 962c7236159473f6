#include <gtest/gtest.h>

#include "loom/verifier/axiom_report.hpp"
#include "loom/verifier/rule_loading.hpp"
#include "loom/verifier/verify.hpp"
#include "verifier_test_support.hpp"

namespace loom::verifier {
namespace {

using pcg::VerificationStatus;

std::vector<Obligation> mixed_rules() {
  auto rules = obligations_from_library(testing::core_library());
  const auto wrong = spec::Library::from_text(
      "import \"ops/core.loom\";\nrule swap_relu_sigmoid: forall x: [m, n]. relu(sigmoid(x)) => sigmoid(relu(x));\n", "<wrong>",
      spec::Library::default_specs_dir());
  rules.push_back(obligations_from_library(wrong).at(0));
  return rules;
}

TEST(Verify, TwoJobsAgreeWithOneAndReportProgress) {
  const auto rules = mixed_rules();
  VerifyOptions one;
  one.timeout_ms = 2000;
  std::vector<VerifyProgress> seen;
  VerifyOptions two = one;
  two.jobs = 2;
  two.progress = [&](const VerifyProgress& p) { seen.push_back(p); };
  const auto a = verify(testing::core_library(), testing::core_axioms(), rules, one);
  const auto b = verify(testing::core_library(), testing::core_axioms(), rules, two);
  ASSERT_EQ(a.verdicts.size(), rules.size());
  for (std::size_t i = 0; i < rules.size(); ++i) {
    EXPECT_EQ(a.verdicts[i].verification.status, b.verdicts[i].verification.status) << rules[i].name;
    EXPECT_EQ(a.verdicts[i].verification.core, b.verdicts[i].verification.core) << rules[i].name;
  }
  EXPECT_EQ(b.count(VerificationStatus::Proved), 3u);
  EXPECT_EQ(b.count(VerificationStatus::Refuted), 1u);
  ASSERT_EQ(seen.size(), rules.size());
  EXPECT_EQ(seen.back().done, rules.size());
  EXPECT_EQ(seen.back().proved, 3u);
  EXPECT_EQ(seen.back().refuted, 1u);
  EXPECT_GT(b.seconds, 0.0);
}

TEST(AxiomReport, CountsUsesFindsUnusedAxiomsAndEssentialOnes) {
  const auto rules = obligations_from_library(testing::core_library());
  VerifyOptions options;
  const auto report = verify(testing::core_library(), testing::core_axioms(), rules, options);
  const auto usage = axiom_report(testing::core_library(), testing::core_axioms(), rules, report, options);
  std::map<std::string, AxiomUsage> by_name;
  for (const auto& a : usage.axioms) by_name[a.axiom] = a;
  ASSERT_EQ(by_name.size(), 6u);
  EXPECT_EQ(by_name["combine_partition_rows"].proofs, 2u);
  EXPECT_EQ(by_name["relu_partition_rows"].proofs, 1u);
  EXPECT_EQ(by_name["matmul_reduction_partition"].needed_by, (std::vector<std::string>{"matmul_reduction_parallel"}));
  EXPECT_EQ(by_name["combine_partition_rows"].needed_by, (std::vector<std::string>{"relu_rows", "matmul_data_parallel"}));
  EXPECT_EQ(usage.unused(), (std::vector<std::string>{"ewmul_comm", "transpose_involution"}));
}

TEST(AxiomReport, AnAxiomWithAnAlternativeIsNotEssential) {
  // relu_rows has two proofs in the bundled library (through relu_partition_rows or
  // relu_combine): dropping one of them leaves it provable.
  const auto& lib = testing::bundled();
  const auto rules = obligations_from_library(lib);
  const auto& relu_rows = testing::find_obligation(rules, "relu_rows");
  VerifyOptions options;
  const auto report = verify(lib, testing::bundled_axioms(), {relu_rows}, options);
  ASSERT_EQ(report.verdicts.at(0).verification.status, VerificationStatus::Proved);
  const auto usage = axiom_report(lib, testing::bundled_axioms(), {relu_rows}, report, options);
  for (const auto& a : usage.axioms) {
    if (a.proofs > 0 && a.axiom.rfind("relu_", 0) == 0) {
      EXPECT_TRUE(a.needed_by.empty()) << a.axiom;
    }
  }
}

}  // namespace
}  // namespace loom::verifier
