// loom-studio: the Qt6 workbench for specs, rules, proofs and plans.
#include <cstring>
#include <iostream>

#include <QApplication>
#include <QStatusBar>

#include "loom/gui/main_window.hpp"
#include "loom/gui/plan_viewer.hpp"
#include "loom/gui/rule_sources.hpp"
#include "loom/gui/screenshot.hpp"
#include "loom/gui/studio_application.hpp"
#include "loom/gui/studio_options.hpp"
#include "loom/pcg/diagnostic.hpp"

int main(int argc, char** argv) {
  // The screenshot mode, --help and --version need no display.
  for (int i = 1; i < argc; ++i) {
    const bool headless = std::strncmp(argv[i], "--screenshot", 12) == 0 || std::strcmp(argv[i], "--help") == 0 ||
                          std::strcmp(argv[i], "-h") == 0 || std::strcmp(argv[i], "--version") == 0 || std::strcmp(argv[i], "-v") == 0;
    if (headless && qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  }
  loom::gui::StudioApplication app(argc, argv);
  QApplication::setOrganizationName("Loom");
  QApplication::setApplicationName("Loom Studio");
  QApplication::setApplicationVersion("0.1.0");

  QString error;
  const auto options = loom::gui::parse_studio_options(QApplication::arguments(), error);
  if (!options) {
    std::cerr << "loom-studio: " << error.toStdString() << "\n";
    return 2;
  }
  const bool headless = !options->screenshot.isEmpty();
  try {
    std::vector<std::string> specs;
    for (const QString& path : options->specs) specs.push_back(path.toStdString());
    loom::gui::use_base_specs(specs);
  } catch (const loom::LoomError& e) {
    std::cerr << "loom-studio: " << e.what() << "\n";
    return 2;
  }
  loom::gui::MainWindow window;
  app.on_error([&window](const QString& error) { window.statusBar()->showMessage("error: " + error, 15000); });
  bool opened = true;
  auto report = [&](const std::string& message) {
    std::cerr << "loom-studio: " << message << "\n";
    opened = false;
  };
  for (const QString& file : options->files) {
    try {
      window.open_path(file);
    } catch (const loom::LoomError& e) {
      report(e.what());
    }
  }
  try {
    if (!options->plan.isEmpty())
      window.open_plan(options->plan, options->model);
    else if (!options->model.isEmpty()) {
      window.plan().load_model(options->model);
      window.show_view(loom::gui::StudioView::Plan);
    }
  } catch (const loom::LoomError& e) {
    report(e.what());
  }
  if (options->view) window.show_view(*options->view);

  if (!opened && !headless) window.statusBar()->showMessage("some files could not be opened: see the messages on the terminal");
  if (headless) {
    if (!opened) return 1;
    if (!loom::gui::save_screenshot(window, options->view.value_or(window.current_view()), options->screenshot, error)) {
      std::cerr << "loom-studio: " << error.toStdString() << "\n";
      return 1;
    }
    return 0;
  }
  window.show();
  return QApplication::exec();
}
