#include "loom/gui/spec_editor.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QListWidget>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QSplitter>
#include <QTabWidget>
#include <QTreeWidget>
#include <QVBoxLayout>

#include "loom/gui/code_editor.hpp"
#include "loom/gui/generate_dialog.hpp"
#include "loom/gui/rule_sources.hpp"
#include "loom/gui/spec_highlighter.hpp"
#include "loom/pcg/file_io.hpp"
#include "loom/superopt/generator.hpp"

namespace loom::gui {
namespace {

constexpr int kReloadPauseMs = 400;
const char* const kUntitled = "untitled.loom";

QString qstr(const std::string& s) { return QString::fromStdString(s); }

}  // namespace

SpecEditor::SpecEditor(QWidget* parent)
    : QWidget(parent),
      editor_(new CodeEditor),
      problems_(new QListWidget),
      axioms_(new QTreeWidget),
      bottom_(new QTabWidget),
      progress_(new QProgressBar),
      summary_(new QLabel),
      check_button_(new QPushButton("Check axioms")),
      generate_button_(new QPushButton("Generate rules…")),
      cancel_button_(new QPushButton("Cancel")) {
  new SpecHighlighter(editor_->document());

  auto* toolbar = new QHBoxLayout;
  auto* new_button = new QPushButton("New");
  auto* open_button = new QPushButton("Open…");
  auto* save_button = new QPushButton("Save");
  auto* save_as_button = new QPushButton("Save as…");
  auto* rules_button = new QPushButton("Browse rules");
  rules_button->setToolTip("Open the rule declarations of this file in the rule browser");
  auto* verify_button = new QPushButton("Verify rules");
  verify_button->setToolTip("Prove the rule declarations of this file from the axioms, as `loom verify` does");
  check_button_->setToolTip("Evaluate every axiom on random instances, as `loom check` does");
  generate_button_->setToolTip("Enumerate candidate rules over this library's ops, as `loom generate` does");
  for (QPushButton* b : {new_button, open_button, save_button, save_as_button}) toolbar->addWidget(b);
  toolbar->addSpacing(16);
  for (QPushButton* b : {check_button_, generate_button_, rules_button, verify_button, cancel_button_}) toolbar->addWidget(b);
  toolbar->addStretch();
  cancel_button_->setEnabled(false);

  axioms_->setHeaderLabels({"axiom", "result", "where"});
  axioms_->header()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
  axioms_->setWordWrap(true);
  auto* check_page = new QWidget;
  auto* check_layout = new QVBoxLayout(check_page);
  check_layout->setContentsMargins(0, 0, 0, 0);
  auto* check_status = new QHBoxLayout;
  check_status->addWidget(summary_, 1);
  check_status->addWidget(progress_);
  check_layout->addLayout(check_status);
  check_layout->addWidget(axioms_);
  progress_->setVisible(false);
  bottom_->addTab(problems_, "Problems");
  bottom_->addTab(check_page, "Axiom check");

  auto* splitter = new QSplitter(Qt::Vertical);
  splitter->addWidget(editor_);
  splitter->addWidget(bottom_);
  splitter->setStretchFactor(0, 3);
  splitter->setStretchFactor(1, 1);
  splitter->setSizes({620, 200});
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(toolbar);
  layout->addWidget(splitter);

  reload_timer_.setSingleShot(true);
  reload_timer_.setInterval(kReloadPauseMs);
  connect(&reload_timer_, &QTimer::timeout, this, &SpecEditor::reload_now);
  connect(editor_, &QPlainTextEdit::textChanged, this, [this] { reload_timer_.start(); });
  connect(problems_, &QListWidget::itemActivated, this, [this](QListWidgetItem* item) {
    const int row = problems_->row(item);
    if (row >= 0 && row < static_cast<int>(diagnostics_.size())) {
      const auto& where = diagnostics_[static_cast<std::size_t>(row)].where;
      if (qstr(where.file) == display_name()) editor_->go_to(where.line, where.column);
    }
  });
  connect(new_button, &QPushButton::clicked, this, [this] {
    if (confirm_discard()) new_file();
  });
  connect(open_button, &QPushButton::clicked, this, &SpecEditor::open_dialog);
  connect(save_button, &QPushButton::clicked, this, &SpecEditor::save);
  connect(save_as_button, &QPushButton::clicked, this, &SpecEditor::save_as_dialog);
  connect(check_button_, &QPushButton::clicked, this, &SpecEditor::check_axioms);
  connect(generate_button_, &QPushButton::clicked, this, &SpecEditor::generate_dialog);
  connect(rules_button, &QPushButton::clicked, this, [this] { browse_rules(false); });
  connect(verify_button, &QPushButton::clicked, this, [this] { browse_rules(true); });
  connect(cancel_button_, &QPushButton::clicked, this, [this] { check_job_.cancel(); });
  connect(&check_job_, &BackgroundJob::finished, this, [this] {
    progress_->setVisible(false);
    check_button_->setEnabled(true);
    cancel_button_->setEnabled(false);
    show_outcomes();
    if (!check_job_.error().isEmpty()) emit status_message("the axiom check stopped: " + check_job_.error());
    emit check_finished();
  });
  new_file();
}

QString SpecEditor::display_name() const { return path_.isEmpty() ? QString(kUntitled) : path_; }

std::string SpecEditor::directory() const {
  if (path_.isEmpty()) {
    // An untitled text imports from the base specs (the first directory given to --specs).
    for (const auto& base : base_spec_paths())
      if (std::filesystem::is_directory(base)) return base;
    return spec::Library::default_specs_dir();
  }
  const auto dir = std::filesystem::path(path_.toStdString()).parent_path();
  return dir.empty() ? "." : dir.string();
}

void SpecEditor::new_file() {
  path_.clear();
  set_text("import \"ops/core.loom\";\nimport \"ops/parallel.loom\";\n\n");
  editor_->document()->setModified(false);
  emit file_changed(path_);
}

void SpecEditor::open_file(const QString& path) {
  std::ifstream in(path.toStdString());
  if (!in) throw LoomError(path.toStdString() + ": cannot open file");
  std::stringstream text;
  text << in.rdbuf();
  path_ = path;
  set_text(qstr(text.str()));
  editor_->document()->setModified(false);
  emit file_changed(path_);
}

void SpecEditor::save_file(const QString& path) {
  pcg::write_file_atomically(path.toStdString(), text().toStdString());
  const bool renamed = path != path_;
  path_ = path;
  editor_->document()->setModified(false);
  if (renamed) reload_now();  // diagnostics name the file, imports resolve from its directory
  emit file_changed(path_);
}

void SpecEditor::set_text(const QString& text) {
  editor_->setPlainText(text);
  reload_now();
}

QString SpecEditor::text() const { return editor_->toPlainText(); }

bool SpecEditor::is_modified() const { return editor_->document()->isModified(); }

void SpecEditor::reload_now() {
  reload_timer_.stop();
  show_load(load_spec_text(text().toStdString(), display_name().toStdString(), directory()));
}

void SpecEditor::show_load(SpecLoad load) {
  diagnostics_ = std::move(load.errors);
  if (load.library) library_ = std::move(load.library);
  problems_->clear();
  std::vector<std::pair<int, int>> places;
  for (const Diagnostic& d : diagnostics_) {
    auto* item = new QListWidgetItem(qstr(d.to_string()), problems_);
    item->setForeground(QColor(0xb0, 0x00, 0x20));
    if (qstr(d.where.file) == display_name() && d.where.line > 0) places.emplace_back(d.where.line, d.where.column);
  }
  editor_->mark_problems(places);
  if (diagnostics_.empty()) {
    const auto& lib = *library_;
    new QListWidgetItem(QString("no problems: %1 ops, %2 parallel forms, %3 fused forms, %4 axioms, %5 rules")
                            .arg(lib.ops().size())
                            .arg(lib.parallel_forms().size())
                            .arg(lib.fused_forms().size())
                            .arg(lib.axioms().size())
                            .arg(lib.rules().size()),
                        problems_);
    bottom_->setTabText(0, "Problems");
  } else {
    bottom_->setTabText(0, QString("Problems (%1)").arg(diagnostics_.size()));
    bottom_->setCurrentIndex(0);
  }
  generate_button_->setEnabled(diagnostics_.empty());
  check_button_->setEnabled(diagnostics_.empty() && !check_job_.running());
}

QStringList SpecEditor::problem_lines_shown() const {
  QStringList out;
  for (int i = 0; i < problems_->count(); ++i) out << problems_->item(i)->text();
  return out;
}

void SpecEditor::check_axioms() {
  reload_now();
  if (!diagnostics_.empty() || !library_) {
    emit status_message("fix the problems first: a library with errors is not loaded");
    return;
  }
  auto library = library_;
  outcomes_.clear();
  axioms_->clear();
  bottom_->setCurrentIndex(1);
  progress_->setRange(0, static_cast<int>(library->axioms().size()));
  progress_->setValue(0);
  progress_->setVisible(true);
  summary_->setText(QString("checking %1 axioms…").arg(library->axioms().size()));
  check_button_->setEnabled(false);
  cancel_button_->setEnabled(true);
  check_job_.start([this, library](const std::atomic<bool>& cancelled) {
    auto outcomes = check_axioms_of(*library, cancelled);
    check_job_.post([this, outcomes = std::move(outcomes)]() mutable { outcomes_ = std::move(outcomes); });
  });
}

std::vector<AxiomOutcome> SpecEditor::check_axioms_of(const spec::Library& library, const std::atomic<bool>& cancelled) {
  return gui::check_axioms(library, spec::AxiomCheckOptions{}, cancelled, [this](std::size_t done, std::size_t) {
    check_job_.post([this, done] { progress_->setValue(static_cast<int>(done)); });
  });
}

void SpecEditor::show_outcomes() {
  axioms_->clear();
  std::size_t failed = 0;
  for (const AxiomOutcome& o : outcomes_) {
    auto* item = new QTreeWidgetItem(axioms_, {qstr(o.axiom), o.sound ? "sound" : "UNSOUND", qstr(o.where)});
    item->setForeground(1, o.sound ? QColor(0x1a, 0x7f, 0x37) : QColor(0xb0, 0x00, 0x20));
    if (!o.sound) {
      ++failed;
      auto* detail = new QTreeWidgetItem(item, {"counterexample", "", qstr(o.problem)});
      detail->setToolTip(2, qstr(o.problem));
      detail->setFirstColumnSpanned(false);
      item->setExpanded(true);
    }
  }
  const bool complete = library_ && outcomes_.size() == library_->axioms().size();
  summary_->setText(QString("%1: %2 axioms checked, %3 unsound%4")
                        .arg(failed == 0 && complete ? "ok"
                             : failed                ? "FAILED"
                                                     : "cancelled")
                        .arg(outcomes_.size())
                        .arg(failed)
                        .arg(complete ? "" : " (cancelled)"));
}

std::vector<std::string> SpecEditor::own_ops() const {
  std::vector<std::string> ops;
  if (!library_) return ops;
  for (const auto* op : library_->ops())
    if (qstr(op->loc.file) == display_name()) ops.push_back(op->name);
  return ops;
}

void SpecEditor::generate_dialog() {
  reload_now();
  if (!library_ || !diagnostics_.empty()) return;
  const auto mine = own_ops();
  GenerateDialog dialog(mine.empty() ? superopt::unity_ops() : mine, superopt::unity_parallel_forms(), this);
  if (dialog.exec() != QDialog::Accepted) return;
  try {
    generate_rules(dialog.options());
  } catch (const LoomError& e) {
    QMessageBox::warning(this, "Generate rules", qstr(e.what()));
  }
}

void SpecEditor::generate_rules(const superopt::GeneratorOptions& options) {
  auto library = library_;
  if (!library) return;
  generate_button_->setEnabled(false);
  progress_->setVisible(true);
  progress_->setRange(0, 0);
  emit status_message("generating rules…");
  const QString source = QString("rules generated from %1").arg(display_name());
  generate_job_.start([this, library, options, source](const std::atomic<bool>&) {
    try {
      auto result = superopt::generate(*library, options, [this](const std::string& stage, std::size_t done, std::size_t total) {
        generate_job_.post([this, stage, done, total] {
          progress_->setRange(0, static_cast<int>(total));
          progress_->setValue(static_cast<int>(done));
          emit status_message(QString("generating rules: %1 %2/%3").arg(qstr(stage)).arg(done).arg(total));
        });
      });
      generate_job_.post([this, library, rules = std::move(result.rules), source]() mutable {
        progress_->setVisible(false);
        generate_button_->setEnabled(true);
        emit status_message(QString("%1 rules generated").arg(rules.rules.size()));
        emit rules_ready(proving_library(library), std::move(rules), source, false);
      });
    } catch (const std::exception& e) {
      // Any failure (a malformed option, memory running out) ends the generation, not Studio.
      const QString message = qstr(e.what());
      generate_job_.post([this, message] {
        progress_->setVisible(false);
        generate_button_->setEnabled(true);
        emit status_message("generation failed: " + message);
      });
    }
  });
}

void SpecEditor::browse_rules(bool verify) {
  reload_now();
  if (!library_ || !diagnostics_.empty()) return;
  pcg::RuleLibrary rules;
  try {
    rules = rules_declared_in(*library_, display_name().toStdString());
  } catch (const LoomError& e) {
    emit status_message(qstr(e.what()));
    return;
  }
  if (rules.rules.empty()) {
    emit status_message("this file declares no rules");
    return;
  }
  emit rules_ready(proving_library(library_), std::move(rules), display_name(), verify);
}

std::shared_ptr<const spec::Library> SpecEditor::proving_library(std::shared_ptr<const spec::Library> edited) const {
  // A saved file is proved with the bundled axioms besides its own; an unsaved text with its own only.
  if (path_.isEmpty() || is_modified()) return edited;
  try {
    return base_library_with({path_.toStdString()});
  } catch (const LoomError&) {
    return edited;  // e.g. it redeclares a bundled name
  }
}

bool SpecEditor::confirm_discard() {
  return !is_modified() ||
         QMessageBox::question(this, "Spec editor", display_name() + " has unsaved changes. Discard them?") == QMessageBox::Yes;
}

void SpecEditor::open_dialog() {
  if (!confirm_discard()) return;
  const QString path = QFileDialog::getOpenFileName(this, "Open spec file", QString(), "Loom specs (*.loom);;All files (*)");
  if (path.isEmpty()) return;
  try {
    open_file(path);
  } catch (const LoomError& e) {
    QMessageBox::warning(this, "Open", qstr(e.what()));
  }
}

void SpecEditor::save() {
  if (path_.isEmpty()) return save_as_dialog();
  try {
    save_file(path_);
  } catch (const LoomError& e) {
    QMessageBox::warning(this, "Save", qstr(e.what()));
  }
}

void SpecEditor::save_as_dialog() {
  const QString path = QFileDialog::getSaveFileName(this, "Save spec file", path_, "Loom specs (*.loom)");
  if (path.isEmpty()) return;
  try {
    save_file(path);
  } catch (const LoomError& e) {
    QMessageBox::warning(this, "Save", qstr(e.what()));
  }
}

}  // namespace loom::gui
