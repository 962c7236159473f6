#include "loom/gui/rule_browser.hpp"

#include <QDir>
#include <QTemporaryDir>

#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "loom/gui/graph_view.hpp"

namespace loom::gui {
namespace {

const QString kUnityRules = QString(LOOM_SOURCE_DIR) + "/specs/rules/unity.loom";

TEST(RuleBrowser, LoadsARuleFileAndFiltersIt) {
  RuleBrowser browser;
  browser.load_file(kUnityRules);
  EXPECT_EQ(browser.total_rules(), 10);
  EXPECT_EQ(browser.visible_rules(), 10);
  browser.set_filter_text("matmul");
  EXPECT_EQ(browser.visible_rules(), 5);  // three parallelizations, the fusion and the merge
  browser.set_filter_text("matmul relu");
  EXPECT_EQ(browser.visible_rules(), 1);
  browser.set_filter_text("");
  browser.set_category_filter("algebraic");
  EXPECT_EQ(browser.visible_rules(), 5);  // fuse_matmul_relu and the four merges
  browser.set_category_filter("parallel");
  EXPECT_EQ(browser.visible_rules(), 5);
  browser.set_category_filter({});
  browser.set_status_filter("proved");
  EXPECT_EQ(browser.visible_rules(), 0) << "nothing is verified yet";
  browser.set_status_filter("unverified");
  EXPECT_EQ(browser.visible_rules(), 10);
}

TEST(RuleBrowser, DrawsTheSelectedRulesSidesSideBySide) {
  RuleBrowser browser;
  browser.load_file(kUnityRules);
  ASSERT_TRUE(browser.select_rule("relu_rows"));
  EXPECT_EQ(browser.selected_rule(), "relu_rows");
  EXPECT_EQ(browser.lhs_view().drawn_nodes(), 2);  // x, relu
  EXPECT_EQ(browser.rhs_view().drawn_nodes(), 4);  // x, partition, relu, combine
  ASSERT_TRUE(browser.select_rule("matmul_data_parallel"));
  EXPECT_EQ(browser.lhs_view().drawn_nodes(), 3);  // x, w, matmul
  EXPECT_EQ(browser.rhs_view().drawn_nodes(), 6);  // x, w, partition, replicate, matmul, combine
  EXPECT_EQ(browser.rhs_view().drawn_edges(), 6);  // five reads and the output
  EXPECT_TRUE(browser.proof_text().contains("not verified yet"));
  // Two outputs on each side: one product and its split share what both outputs read.
  ASSERT_TRUE(browser.select_rule("merge_matmuls"));
  EXPECT_EQ(browser.lhs_view().drawn_nodes(), 5);  // x, a, b, two matmuls
  EXPECT_EQ(browser.rhs_view().drawn_nodes(), 6);  // x, a, b, concat, matmul, split
  browser.set_filter_text("relu");
  EXPECT_FALSE(browser.select_rule("matmul_model_parallel")) << "filtered out";
}

TEST(RuleBrowser, VerifiesTheSelectedRuleOffTheUiThread) {
  RuleBrowser browser;
  browser.load_file(kUnityRules);
  ASSERT_TRUE(browser.select_rule("relu_rows"));
  browser.verify_selected();
  EXPECT_TRUE(browser.verify_job().running() || browser.verify_job().wait(0));
  ASSERT_TRUE(browser.verify_job().wait(300000));
  const pcg::Rule* rule = browser.rule("relu_rows");
  ASSERT_NE(rule, nullptr);
  ASSERT_TRUE(rule->verification.has_value());
  EXPECT_EQ(rule->verification->status, pcg::VerificationStatus::Proved);
  EXPECT_TRUE(browser.proof_text().contains("PROVED")) << browser.proof_text().toStdString();
  browser.set_status_filter("proved");
  EXPECT_EQ(browser.visible_rules(), 1);

  // The annotated library saves as loom-rules JSON and reads back with its verification.
  QTemporaryDir dir;
  const QString path = dir.filePath("rules.json");
  browser.save_file(path);
  RuleBrowser reloaded;
  reloaded.load_file(path);
  EXPECT_EQ(reloaded.total_rules(), 10);
  reloaded.set_status_filter("proved");
  EXPECT_EQ(reloaded.visible_rules(), 1);
}

TEST(RuleBrowser, ShowsARecordThatNoLongerMatchesItsRuleAsStale) {
  const std::string bundled = std::string(LOOM_SOURCE_DIR) + "/specs/rules/unity.verified.json";
  RuleBrowser browser;
  browser.load_file(QString::fromStdString(bundled));
  browser.set_status_filter("proved");
  EXPECT_EQ(browser.visible_rules(), 10);

  std::ifstream in(bundled);
  nlohmann::json library = nlohmann::json::parse(in);
  library["rules"][0]["text"] = "rule relu_rows: relu(x) => x";
  QTemporaryDir dir;
  const std::string tampered = dir.filePath("tampered.json").toStdString();
  std::ofstream(tampered) << library.dump();
  RuleBrowser reloaded;
  reloaded.load_file(QString::fromStdString(tampered));
  reloaded.set_status_filter("stale");
  EXPECT_EQ(reloaded.visible_rules(), 1);
  ASSERT_TRUE(reloaded.select_rule("relu_rows"));
  EXPECT_TRUE(reloaded.proof_text().contains("STALE")) << reloaded.proof_text().toStdString();
  EXPECT_TRUE(reloaded.proof_text().contains("the rule has changed since it was proved")) << reloaded.proof_text().toStdString();
}

TEST(RuleBrowser, CancelledVerificationStopsEarly) {
  RuleBrowser browser;
  browser.load_file(kUnityRules);
  browser.verify_shown();
  browser.cancel_verification();
  ASSERT_TRUE(browser.verify_job().wait(300000));
  int verified = 0;
  for (const char* id :
       {"relu_rows", "matmul_data_parallel", "matmul_model_parallel", "matmul_reduction_parallel", "fuse_allreduce", "fuse_matmul_relu"})
    verified += browser.rule(id)->verification.has_value();
  EXPECT_LT(verified, 6);
}

TEST(RuleBrowser, RejectsAFileThatIsNoRuleLibrary) {
  RuleBrowser browser;
  QTemporaryDir dir;
  const QString path = dir.filePath("bad.json");
  QFile f(path);
  ASSERT_TRUE(f.open(QIODevice::WriteOnly));
  f.write("{\"format\": \"loom-rules\", \"version\": 1, \"rules\": [{\"id\": 3}]}");
  f.close();
  EXPECT_THROW(browser.load_file(path), LoomError);
  EXPECT_EQ(browser.total_rules(), 0);
}

}  // namespace
}  // namespace loom::gui
