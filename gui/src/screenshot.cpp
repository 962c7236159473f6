#include "loom/gui/screenshot.hpp"

#include <QApplication>
#include <QPixmap>

#include "loom/gui/rule_browser.hpp"
#include "loom/gui/spec_editor.hpp"

namespace loom::gui {

bool save_screenshot(MainWindow& window, StudioView view, const QString& path, QString& error) {
  window.show_view(view);
  window.show();
  QApplication::processEvents();
  if (view == StudioView::Editor && window.editor().diagnostics().empty()) {
    window.editor().check_axioms();
    window.editor().check_job().wait();
  }
  window.rules().verify_job().wait();
  QApplication::processEvents();
  const QPixmap image = window.grab();
  if (image.isNull()) {
    error = "could not render the window";
    return false;
  }
  if (!image.save(path, "PNG")) {
    error = path + ": cannot write the image";
    return false;
  }
  return true;
}

}  // namespace loom::gui
