#include "loom/gui/studio_application.hpp"

#include <exception>
#include <iostream>
#include <new>

namespace loom::gui {

StudioApplication::StudioApplication(int& argc, char** argv) : QApplication(argc, argv) {}

void StudioApplication::on_error(std::function<void(const QString&)> report) { report_ = std::move(report); }

bool StudioApplication::notify(QObject* receiver, QEvent* event) {
  QString error;
  try {
    return QApplication::notify(receiver, event);
  } catch (const std::bad_alloc&) {
    error = "out of memory";
  } catch (const std::exception& e) {
    error = QString::fromStdString(e.what());
  }
  std::cerr << "loom-studio: " << error.toStdString() << "\n";
  if (report_) report_(error);
  return false;
}

}  // namespace loom::gui
