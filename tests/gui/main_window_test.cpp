#include "loom/gui/main_window.hpp"

#include <QDropEvent>
#include <QMimeData>
#include <QUrl>

#include <gtest/gtest.h>

#include "axpy_generation.hpp"

#include "loom/gui/plan_viewer.hpp"
#include "loom/gui/rule_browser.hpp"
#include "loom/gui/spec_editor.hpp"
#include "loom/gui/studio_options.hpp"

namespace loom::gui {
namespace {

const QString kSource = LOOM_SOURCE_DIR;

TEST(MainWindow, OpensFilesByKindAndRemembersThem) {
  RecentFiles().clear();
  MainWindow window;
  window.open_path(kSource + "/specs/rules/unity.loom");
  EXPECT_EQ(window.editor().file_path(), kSource + "/specs/rules/unity.loom");
  EXPECT_EQ(window.rules().total_rules(), 10) << "a spec's rules go to the rule browser";
  window.open_path(kSource + "/tests/data/plan_data_parallel.json");
  EXPECT_EQ(window.current_view(), StudioView::Plan);
  const QStringList recent = RecentFiles().files();
  ASSERT_EQ(recent.size(), 2);
  EXPECT_TRUE(recent[0].endsWith("plan_data_parallel.json"));
  EXPECT_TRUE(recent[1].endsWith("unity.loom"));
}

TEST(MainWindow, OpensDroppedFiles) {
  MainWindow window;
  QMimeData data;
  data.setUrls({QUrl::fromLocalFile(kSource + "/tests/data/plan_data_parallel.json")});
  QDropEvent drop(QPointF(10, 10), Qt::CopyAction, &data, Qt::LeftButton, Qt::NoModifier);
  // Delivered straight to the window, as the drag manager would once the drop is over it.
  static_cast<QObject&>(window).event(&drop);
  EXPECT_EQ(window.current_view(), StudioView::Plan);
  EXPECT_GT(window.plan().memory_rows(), 0);
}

// The whole loop: a new operator with its axioms, checked, rules generated for it, proved and browsed.
TEST(MainWindow, GeneratesAndVerifiesRulesForANewOperator) {
  MainWindow window;
  window.open_path(kSource + "/docs/examples/axpy.loom");
  window.editor().check_axioms();
  ASSERT_TRUE(window.editor().check_job().wait(120000));
  for (const AxiomOutcome& o : window.editor().axiom_outcomes()) EXPECT_TRUE(o.sound) << o.axiom;
  const superopt::GeneratorOptions options = test::axpy_generation();
  window.editor().generate_rules(options);
  ASSERT_TRUE(window.editor().generate_job().wait(300000));
  EXPECT_EQ(window.current_view(), StudioView::Rules);
  const int generated = window.rules().total_rules();
  ASSERT_GT(generated, 0);
  window.rules().verify_shown();
  ASSERT_TRUE(window.rules().verify_job().wait(300000));
  window.rules().set_status_filter("unverified");
  EXPECT_EQ(window.rules().visible_rules(), 0);
  // The bundled axioms are used besides axpy's own: the partition/combine round trips are proved.
  window.rules().set_status_filter("proved");
  EXPECT_GT(window.rules().visible_rules(), 0);
  window.rules().set_filter_text("combine partition");
  EXPECT_GT(window.rules().visible_rules(), 0);
}

TEST(MainWindow, VerifiesTheRulesOfTheEditedFile) {
  MainWindow window;
  window.open_path(kSource + "/specs/rules/unity.loom");
  window.editor().browse_rules(true);
  EXPECT_EQ(window.current_view(), StudioView::Rules);
  ASSERT_TRUE(window.rules().verify_job().wait(300000));
  window.rules().set_status_filter("proved");
  EXPECT_EQ(window.rules().visible_rules(), window.rules().total_rules()) << "every hand-written rule is proved from the bundled axioms";
  EXPECT_EQ(window.rules().total_rules(), 10);
}

TEST(MainWindow, RefusesAJsonFileOfAnotherKind) {
  MainWindow window;
  EXPECT_THROW(window.open_path(kSource + "/specs/machines/p100.json"), LoomError);
}

TEST(StudioOptions, ParsesFilesModelPlanAndScreenshot) {
  QString error;
  const auto o = parse_studio_options(
      {"loom-studio", "a.loom", "--model", "bert_large", "--plan", "p.json", "--screenshot", "out.png", "--view", "plan"}, error);
  ASSERT_TRUE(o.has_value()) << error.toStdString();
  EXPECT_EQ(o->files, QStringList{"a.loom"});
  EXPECT_EQ(o->model, "bert_large");
  EXPECT_EQ(o->plan, "p.json");
  EXPECT_EQ(o->screenshot, "out.png");
  EXPECT_EQ(o->view, StudioView::Plan);
  EXPECT_FALSE(parse_studio_options({"loom-studio", "--view", "sideways"}, error).has_value());
  EXPECT_TRUE(error.contains("sideways"));
}

}  // namespace
}  // namespace loom::gui
