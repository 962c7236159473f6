#pragma once
// Loom Studio's window: the spec editor, the rule browser and the plan viewer as tabs; files open
// from the menu, the command line, the recent-files list or by dropping them on the window.
#include <QMainWindow>

#include "loom/gui/recent_files.hpp"

class QMenu;
class QTabWidget;

namespace loom::gui {

class PlanViewer;
class RuleBrowser;
class SpecEditor;

enum class StudioView { Editor, Rules, Plan };

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  explicit MainWindow(QWidget* parent = nullptr);

  // Opens by kind: .loom in the editor (and its rules, if any, in the browser), a loom-rules JSON
  // in the browser, a loom-plan JSON in the plan viewer. Throws LoomError naming the file.
  void open_path(const QString& path);
  void open_plan(const QString& plan_path, const QString& model);
  void show_view(StudioView view);
  StudioView current_view() const;

  SpecEditor& editor() { return *editor_; }
  RuleBrowser& rules() { return *rules_; }
  PlanViewer& plan() { return *plan_; }

 protected:
  void dragEnterEvent(QDragEnterEvent* event) override;
  void dropEvent(QDropEvent* event) override;
  void closeEvent(QCloseEvent* event) override;

 private:
  void build_menus();
  void open_dialog();
  void open_reporting_errors(const QString& path);
  void remember(const QString& path);
  void refresh_recent_menu();

  QTabWidget* tabs_;
  SpecEditor* editor_;
  RuleBrowser* rules_;
  PlanViewer* plan_;
  QMenu* recent_menu_ = nullptr;
  RecentFiles recent_;
};

}  // namespace loom::gui
