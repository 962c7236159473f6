#include "loom/gui/spec_editor.hpp"

#include <QCoreApplication>
#include <QElapsedTimer>

#include <gtest/gtest.h>

#include "axpy_generation.hpp"

#include "loom/gui/code_editor.hpp"

namespace loom::gui {
namespace {

const char* const kSource = LOOM_SOURCE_DIR;

TEST(SpecEditor, ReportsAPlantedSyntaxErrorAtItsLine) {
  SpecEditor editor;
  editor.set_text(
      "import \"ops/core.loom\";\n"
      "\n"
      "op twice(x: [m, n]) -> [m, n] {\n"
      "  out[i, j] = x[i, j] + ;\n"
      "}\n");
  ASSERT_FALSE(editor.diagnostics().empty());
  EXPECT_EQ(editor.diagnostics().front().where.line, 4);
  EXPECT_EQ(editor.diagnostics().front().where.file, "untitled.loom");
  const QStringList shown = editor.problem_lines_shown();
  ASSERT_FALSE(shown.isEmpty());
  EXPECT_TRUE(shown.front().startsWith("untitled.loom:4:")) << shown.front().toStdString();
  EXPECT_EQ(editor.library() != nullptr, true) << "the last good library is kept";
  const auto* code = editor.findChild<CodeEditor*>();
  ASSERT_NE(code, nullptr);
  EXPECT_EQ(code->problem_lines(), std::set<int>{4});
}

TEST(SpecEditor, ReloadsAfterAPauseInTyping) {
  SpecEditor editor;
  auto* code = editor.findChild<CodeEditor*>();
  ASSERT_NE(code, nullptr);
  code->setPlainText("import \"ops/core.loom\";\nop broken(x: [m]) -> [m] { out[i] = ; }\n");
  EXPECT_TRUE(editor.diagnostics().empty()) << "not before the pause";
  QElapsedTimer timer;
  timer.start();
  while (editor.diagnostics().empty() && timer.elapsed() < 5000) QCoreApplication::processEvents(QEventLoop::AllEvents, 50);
  ASSERT_FALSE(editor.diagnostics().empty());
  EXPECT_EQ(editor.diagnostics().front().where.line, 2);
}

TEST(SpecEditor, ErrorsClearOnceTheTextIsFixed) {
  SpecEditor editor;
  editor.set_text("import \"ops/core.loom\";\nop twice(x: [m, n]) -> [m, n] { out[i, j] = x[i, j] + ; }\n");
  ASSERT_FALSE(editor.diagnostics().empty());
  editor.set_text("import \"ops/core.loom\";\nop twice(x: [m, n]) -> [m, n] { out[i, j] = x[i, j] + x[i, j]; }\n");
  EXPECT_TRUE(editor.diagnostics().empty());
  ASSERT_NE(editor.library(), nullptr);
  EXPECT_NE(editor.library()->find_op("twice"), nullptr);
}

TEST(SpecEditor, ReportsAnUndefinedNameWithItsLocation) {
  SpecEditor editor;
  editor.set_text("import \"ops/core.loom\";\n\naxiom a: forall x: [m, n]. relu(x) == frobnicate(x);\n");
  ASSERT_FALSE(editor.diagnostics().empty());
  EXPECT_EQ(editor.diagnostics().front().where.line, 3);
}

TEST(SpecEditor, ReportsARuleThatCannotBeTypedAtTheRuleNamingTheSide) {
  SpecEditor editor;
  editor.set_text(
      "import \"ops/core.loom\";\nimport \"ops/parallel.loom\";\n"
      "rule copies: forall x: [m, n]. relu(x) => reduce<2>(replicate<2>(relu(x)));\n");
  ASSERT_FALSE(editor.diagnostics().empty());
  EXPECT_EQ(editor.diagnostics().front().where.line, 3);
  EXPECT_NE(editor.diagnostics().front().message.find("rule copies: cannot be typed"), std::string::npos)
      << editor.diagnostics().front().message;
  EXPECT_NE(editor.diagnostics().front().message.find("the right-hand side"), std::string::npos) << editor.diagnostics().front().message;
  editor.set_text(
      "import \"ops/core.loom\";\nimport \"ops/shape.loom\";\n"
      "rule shrink: forall x: [m, n]. relu(x) => split<1, 2>(relu(x)).0;\n");
  ASSERT_FALSE(editor.diagnostics().empty());
  EXPECT_NE(editor.diagnostics().front().message.find("rule shrink: the sides differ in shape"), std::string::npos)
      << editor.diagnostics().front().message;
}

TEST(SpecEditor, CheckListsEachAxiomWithTheCounterexampleOfAFailure) {
  SpecEditor editor;
  editor.open_file(QString(kSource) + "/tests/data/cli_unsound_relu.loom");
  ASSERT_TRUE(editor.diagnostics().empty());
  editor.check_axioms();
  ASSERT_TRUE(editor.check_job().wait(120000));
  const auto& outcomes = editor.axiom_outcomes();
  ASSERT_EQ(outcomes.size(), editor.library()->axioms().size());
  int unsound = 0;
  for (const AxiomOutcome& o : outcomes)
    if (!o.sound) {
      ++unsound;
      EXPECT_EQ(o.axiom, "relu_distributes_over_add");
      EXPECT_NE(o.problem.find("differs"), std::string::npos) << o.problem;
    }
  EXPECT_EQ(unsound, 1);
}

// Sizes too large to draw are reported in the axiom list, as `loom check` reports them; nothing is
// allocated, the editor survives and the text stays as written.
TEST(SpecEditor, AnAxiomTooLargeToCheckIsReportedAndTheTextKept) {
  SpecEditor editor;
  editor.open_file(QString(kSource) + "/tests/data/cli_huge_binder.loom");
  ASSERT_TRUE(editor.diagnostics().empty());
  const QString text = editor.text();
  editor.check_axioms();
  ASSERT_TRUE(editor.check_job().wait(120000));
  EXPECT_TRUE(editor.check_job().error().isEmpty()) << editor.check_job().error().toStdString();
  bool reported = false;
  for (const AxiomOutcome& o : editor.axiom_outcomes())
    if (o.axiom == "too_big") {
      reported = true;
      EXPECT_FALSE(o.sound);
      EXPECT_NE(o.problem.find("holds more than the 4194304 elements"), std::string::npos) << o.problem;
    }
  EXPECT_TRUE(reported);
  EXPECT_EQ(editor.text(), text);
}

TEST(SpecEditor, GeneratesRulesForANewOperator) {
  SpecEditor editor;
  editor.open_file(QString(kSource) + "/docs/examples/axpy.loom");
  ASSERT_TRUE(editor.diagnostics().empty());
  std::optional<pcg::RuleLibrary> received;
  QObject::connect(&editor, &SpecEditor::rules_ready,
                   [&](std::shared_ptr<const spec::Library> library, pcg::RuleLibrary rules, QString, bool) {
                     EXPECT_NE(library->find_op("axpy"), nullptr);
                     received = std::move(rules);
                   });
  const superopt::GeneratorOptions options = test::axpy_generation();
  editor.generate_rules(options);
  ASSERT_TRUE(editor.generate_job().wait(300000));
  ASSERT_TRUE(received.has_value());
  ASSERT_FALSE(received->rules.empty());
  bool uses_axpy = false;
  for (const pcg::Rule& r : received->rules) uses_axpy |= r.text.find("axpy") != std::string::npos;
  EXPECT_TRUE(uses_axpy);
}

}  // namespace
}  // namespace loom::gui
