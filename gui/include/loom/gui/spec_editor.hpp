#pragma once
// The spec editor: a .loom file with highlighting, its load errors shown as you type (debounced),
// the axiom check, and rule generation over the library the text defines.
#include <memory>
#include <vector>

#include <QTimer>
#include <QWidget>

#include "loom/gui/background_job.hpp"
#include "loom/gui/spec_checks.hpp"
#include "loom/pcg/rule.hpp"
#include "loom/superopt/options.hpp"

class QLabel;
class QListWidget;
class QProgressBar;
class QPushButton;
class QTabWidget;
class QTreeWidget;

namespace loom::gui {

class CodeEditor;

class SpecEditor : public QWidget {
  Q_OBJECT

 public:
  explicit SpecEditor(QWidget* parent = nullptr);

  // Throws LoomError when the file cannot be read or written.
  void open_file(const QString& path);
  void save_file(const QString& path);
  void new_file();
  void set_text(const QString& text);
  QString text() const;
  QString file_path() const { return path_; }
  // The name diagnostics use for the text: its path, or "untitled.loom".
  QString display_name() const;
  bool is_modified() const;

  // Loads the text now instead of after the typing pause.
  void reload_now();
  const std::vector<Diagnostic>& diagnostics() const { return diagnostics_; }
  QStringList problem_lines_shown() const;  // the problems list as displayed
  std::shared_ptr<const spec::Library> library() const { return library_; }

  // The axiom check, off the UI thread; check_finished() when done.
  void check_axioms();
  BackgroundJob& check_job() { return check_job_; }
  const std::vector<AxiomOutcome>& axiom_outcomes() const { return outcomes_; }
  // Generation with the given settings, off the UI thread; rules_ready() when done.
  void generate_rules(const superopt::GeneratorOptions& options);
  BackgroundJob& generate_job() { return generate_job_; }
  // The rule declarations of the edited file, as rules (rules_ready()); with `verify`, to be proved at once.
  void browse_rules(bool verify = false);

 signals:
  void rules_ready(std::shared_ptr<const spec::Library> library, pcg::RuleLibrary rules, QString source, bool verify);
  void check_finished();
  void file_changed(QString path);
  void status_message(QString text);

 private:
  bool confirm_discard();  // asks before unsaved changes are dropped
  void open_dialog();
  void save();
  void save_as_dialog();
  void generate_dialog();
  void show_load(SpecLoad load);
  void show_outcomes();
  std::vector<AxiomOutcome> check_axioms_of(const spec::Library& library, const std::atomic<bool>& cancelled);
  std::vector<std::string> own_ops() const;
  // The library the browser proves the rules with.
  std::shared_ptr<const spec::Library> proving_library(std::shared_ptr<const spec::Library> edited) const;
  std::string directory() const;

  CodeEditor* editor_;
  QListWidget* problems_;
  QTreeWidget* axioms_;
  QTabWidget* bottom_;
  QProgressBar* progress_;
  QLabel* summary_;
  QPushButton* check_button_;
  QPushButton* generate_button_;
  QPushButton* cancel_button_;
  QTimer reload_timer_;
  QString path_;
  std::vector<Diagnostic> diagnostics_;
  std::shared_ptr<const spec::Library> library_;
  std::vector<AxiomOutcome> outcomes_;
  BackgroundJob check_job_;
  BackgroundJob generate_job_;
};

}  // namespace loom::gui
