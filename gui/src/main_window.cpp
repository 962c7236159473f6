#include "loom/gui/main_window.hpp"

#include <fstream>

#include <QApplication>
#include <QCloseEvent>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QInputDialog>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QStatusBar>
#include <QTabWidget>

#include <nlohmann/json.hpp>

#include "loom/gui/plan_viewer.hpp"
#include "loom/gui/rule_browser.hpp"
#include "loom/gui/spec_editor.hpp"
#include "loom/pcg/diagnostic.hpp"
#include "loom/pcg/rule.hpp"

namespace loom::gui {
namespace {

// The "format" a JSON file declares (loom-rules, loom-plan, ...); throws LoomError when it is not JSON.
std::string json_format(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw LoomError(path + ": cannot open file");
  try {
    const nlohmann::json j = nlohmann::json::parse(in);
    return j.is_object() && j.contains("format") && j["format"].is_string() ? j["format"].get<std::string>() : "";
  } catch (const nlohmann::json::parse_error& e) {
    throw LoomError(path + ": not valid JSON: " + e.what());
  }
}

}  // namespace

MainWindow::MainWindow(QWidget* parent)
    : QMainWindow(parent), tabs_(new QTabWidget), editor_(new SpecEditor), rules_(new RuleBrowser), plan_(new PlanViewer) {
  setWindowTitle("Loom Studio");
  setAcceptDrops(true);
  tabs_->addTab(editor_, "Spec editor");
  tabs_->addTab(rules_, "Rules");
  tabs_->addTab(plan_, "Plan");
  setCentralWidget(tabs_);
  build_menus();
  resize(1400, 900);

  auto status = [this](const QString& text) { statusBar()->showMessage(text, 10000); };
  connect(editor_, &SpecEditor::status_message, this, status);
  connect(rules_, &RuleBrowser::status_message, this, status);
  connect(plan_, &PlanViewer::status_message, this, status);
  connect(editor_, &SpecEditor::rules_ready, this,
          [this](std::shared_ptr<const spec::Library> library, pcg::RuleLibrary rules, QString source, bool verify) {
            rules_->set_rules({std::move(library), std::move(rules)}, source);
            show_view(StudioView::Rules);
            if (verify) rules_->verify_shown();
          });
  connect(editor_, &SpecEditor::file_changed, this, [this](const QString& path) {
    tabs_->setTabText(0, path.isEmpty() ? "Spec editor" : "Spec editor — " + QFileInfo(path).fileName());
    remember(path);
  });
  connect(rules_, &RuleBrowser::file_changed, this, &MainWindow::remember);
  connect(plan_, &PlanViewer::file_changed, this, &MainWindow::remember);
}

void MainWindow::build_menus() {
  QMenu* file = menuBar()->addMenu("&File");
  file->addAction("&New spec", QKeySequence::New, this, [this] {
    editor_->new_file();
    show_view(StudioView::Editor);
  });
  file->addAction("&Open…", QKeySequence::Open, this, &MainWindow::open_dialog);
  file->addAction("Open &plan with model…", this, [this] {
    const QString plan = QFileDialog::getOpenFileName(this, "Open plan", QString(), "Plans (*.json)");
    if (plan.isEmpty()) return;
    bool ok = false;
    const QString model =
        QInputDialog::getText(this, "Model", "Zoo model, FILE.loom:NAME or .onnx file (empty: the plan's own)", QLineEdit::Normal, {}, &ok);
    if (!ok) return;
    try {
      open_plan(plan, model.trimmed());
    } catch (const LoomError& e) {
      QMessageBox::warning(this, "Open plan", QString::fromStdString(e.what()));
    }
  });
  recent_menu_ = file->addMenu("Open &recent");
  refresh_recent_menu();
  file->addSeparator();
  file->addAction("&Quit", QKeySequence::Quit, this, &QWidget::close);
  QMenu* view = menuBar()->addMenu("&View");
  view->addAction("Spec &editor", QKeySequence("Ctrl+1"), this, [this] { show_view(StudioView::Editor); });
  view->addAction("&Rules", QKeySequence("Ctrl+2"), this, [this] { show_view(StudioView::Rules); });
  view->addAction("&Plan", QKeySequence("Ctrl+3"), this, [this] { show_view(StudioView::Plan); });
}

void MainWindow::open_path(const QString& path) {
  const std::string file = path.toStdString();
  if (path.endsWith(".loom")) {
    editor_->open_file(path);
    show_view(StudioView::Editor);
    if (editor_->diagnostics().empty() && editor_->library() && !editor_->library()->rules().empty()) editor_->browse_rules(false);
    if (editor_->diagnostics().empty()) show_view(StudioView::Editor);
    return;
  }
  const std::string format = json_format(file);
  if (format == pcg::kRuleFormat) {
    rules_->load_file(path);
    show_view(StudioView::Rules);
  } else if (format == "loom-plan") {
    open_plan(path, {});
  } else {
    throw LoomError(file + ": neither a spec (.loom), a rule library (loom-rules) nor a plan (loom-plan)");
  }
}

void MainWindow::open_plan(const QString& plan_path, const QString& model) {
  plan_->load(plan_path, model);
  show_view(StudioView::Plan);
}

void MainWindow::show_view(StudioView view) { tabs_->setCurrentIndex(static_cast<int>(view)); }

StudioView MainWindow::current_view() const { return static_cast<StudioView>(tabs_->currentIndex()); }

void MainWindow::open_dialog() {
  const QStringList paths = QFileDialog::getOpenFileNames(this, "Open", QString(),
                                                          "Loom files (*.loom *.json);;Specs (*.loom);;Rule libraries and plans (*.json)");
  for (const QString& p : paths) open_reporting_errors(p);
}

void MainWindow::open_reporting_errors(const QString& path) {
  try {
    open_path(path);
  } catch (const LoomError& e) {
    QMessageBox::warning(this, "Open", QString::fromStdString(e.what()));
  }
}

void MainWindow::remember(const QString& path) {
  if (path.isEmpty()) return;
  recent_.add(path);
  refresh_recent_menu();
}

void MainWindow::refresh_recent_menu() {
  if (!recent_menu_) return;
  recent_menu_->clear();
  const QStringList files = recent_.files();
  for (const QString& f : files) recent_menu_->addAction(f, this, [this, f] { open_reporting_errors(f); });
  if (files.isEmpty()) recent_menu_->addAction("(none)")->setEnabled(false);
  recent_menu_->addSeparator();
  recent_menu_->addAction("Clear list", this, [this] {
    recent_.clear();
    refresh_recent_menu();
  });
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
  if (event->mimeData()->hasUrls()) event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event) {
  for (const QUrl& url : event->mimeData()->urls())
    if (url.isLocalFile()) open_reporting_errors(url.toLocalFile());
  event->acceptProposedAction();
}

void MainWindow::closeEvent(QCloseEvent* event) {
  if (editor_->is_modified() &&
      QMessageBox::question(this, "Loom Studio", "The spec has unsaved changes. Quit anyway?") != QMessageBox::Yes) {
    event->ignore();
    return;
  }
  event->accept();
}

}  // namespace loom::gui
