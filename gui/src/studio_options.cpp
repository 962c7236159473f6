#include "loom/gui/studio_options.hpp"

#include <QCommandLineParser>

namespace loom::gui {

std::optional<StudioView> view_from_name(const QString& name) {
  if (name == "editor") return StudioView::Editor;
  if (name == "rules") return StudioView::Rules;
  if (name == "plan") return StudioView::Plan;
  return std::nullopt;
}

std::optional<StudioOptions> parse_studio_options(const QStringList& arguments, QString& error) {
  QCommandLineParser parser;
  parser.setApplicationDescription(
      "Loom Studio: edit and check specs, generate, verify and browse rewrite rules, and replay parallelization plans.\n"
      "Files open by kind: .loom specs in the editor (their rules also in the rule browser), rule libraries\n"
      "(loom-rules JSON) in the rule browser, plans (loom-plan JSON) in the plan viewer.");
  parser.addHelpOption();
  parser.addVersionOption();
  parser.addPositionalArgument("files", "spec files (.loom), rule libraries or plans (.json)", "[files...]");
  const QCommandLineOption model({"m", "model"},
                                 "the model a plan was made for: a zoo name (mlp, bert_large, ...), a model of the spec language "
                                 "(FILE.loom:NAME) or an .onnx file; alone, shows the model",
                                 "model");
  const QCommandLineOption plan({"p", "plan"}, "a plan to replay (loom optimize --out)", "plan.json");
  const QCommandLineOption screenshot("screenshot", "render the window offscreen to a PNG and exit (non-zero on failure)", "out.png");
  const QCommandLineOption view("view", "the view to show: editor, rules or plan", "view");
  const QCommandLineOption specs("specs",
                                 "spec files or directories that models, plans and rules are read with, in place of the "
                                 "bundled specs/ (as every loom command's --specs); may be given more than once",
                                 "path");
  parser.addOptions({model, plan, screenshot, view, specs});
  parser.process(arguments);  // --help, --version and unknown options exit here

  StudioOptions out;
  out.files = parser.positionalArguments();
  out.model = parser.value(model);
  out.plan = parser.value(plan);
  out.screenshot = parser.value(screenshot);
  out.specs = parser.values(specs);
  if (parser.isSet(view)) {
    out.view = view_from_name(parser.value(view));
    if (!out.view) {
      error = "--view: expected editor, rules or plan, got '" + parser.value(view) + "'";
      return std::nullopt;
    }
  }
  return out;
}

}  // namespace loom::gui
