#pragma once
// Loom Studio's application object: an exception that escapes an event handler (a slot, a paint,
// a timer) is reported instead of ending the program with the user's unsaved text.
#include <functional>

#include <QApplication>
#include <QString>

namespace loom::gui {

class StudioApplication : public QApplication {
 public:
  StudioApplication(int& argc, char** argv);

  // Where escaped exceptions are reported (besides stderr), e.g. the main window's status bar.
  void on_error(std::function<void(const QString&)> report);

  bool notify(QObject* receiver, QEvent* event) override;

 private:
  std::function<void(const QString&)> report_;
};

}  // namespace loom::gui
