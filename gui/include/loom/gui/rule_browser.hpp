#pragma once
// The rule browser: a rule library as a filterable, sortable table; the selected rule's two sides
// drawn side by side with its proof status; verification of the selected or all shown rules off the
// UI thread, with progress and cancel.
#include <memory>

#include <QWidget>

#include "loom/gui/background_job.hpp"
#include "loom/gui/rule_sources.hpp"
#include "loom/gui/rule_table.hpp"

class QComboBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QTableView;

namespace loom::gui {

class GraphView;

class RuleBrowser : public QWidget {
  Q_OBJECT

 public:
  explicit RuleBrowser(QWidget* parent = nullptr);

  // Throws LoomError when the file cannot be read.
  void load_file(const QString& path);
  void set_rules(RuleSource source, const QString& title);
  // Writes the rules (with their verification) as a loom-rules JSON library.
  void save_file(const QString& path) const;

  void set_filter_text(const QString& text);
  void set_category_filter(const QString& category);  // empty: any
  void set_status_filter(const QString& status);      // empty: any
  int visible_rules() const;
  int total_rules() const { return static_cast<int>(source_.rules.rules.size()); }
  // Selects a rule among those shown; false when it is filtered out or absent.
  bool select_rule(const QString& id);
  QString selected_rule() const;

  const GraphView& lhs_view() const { return *lhs_; }
  const GraphView& rhs_view() const { return *rhs_; }
  QString proof_text() const;
  const pcg::Rule* rule(const QString& id) const;

  void verify_selected();
  void verify_shown();
  void cancel_verification() { job_.cancel(); }
  BackgroundJob& verify_job() { return job_; }

 signals:
  void status_message(QString text);
  void verification_finished();
  void file_changed(QString path);

 private:
  void show_rule(int row);
  void start_verification(std::vector<std::size_t> which);
  void open_dialog();
  void save_dialog();
  void update_count();
  bool is_parallel(const std::string& op) const;

  RuleSource source_;
  RuleTableModel* model_;
  RuleFilter* filter_;
  QTableView* table_;
  QLineEdit* text_filter_;
  QComboBox* category_;
  QComboBox* status_;
  QLabel* count_;
  QLabel* title_;
  GraphView* lhs_;
  GraphView* rhs_;
  QPlainTextEdit* proof_;
  QPushButton* verify_selected_;
  QPushButton* verify_all_;
  QPushButton* cancel_;
  QProgressBar* progress_;
  BackgroundJob job_;
  int shown_row_ = -1;  // source row drawn
  int generation_ = 0;  // bumped whenever the rules are replaced
};

}  // namespace loom::gui
