#include "loom/gui/rule_browser.hpp"

#include <QComboBox>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>

#include "loom/gui/graph_view.hpp"
#include "loom/gui/rule_verification.hpp"
#include "loom/gui/titled.hpp"
#include "loom/pcg/file_io.hpp"
#include "loom/verifier/result_cache.hpp"

namespace loom::gui {
namespace {

QString qstr(const std::string& s) { return QString::fromStdString(s); }

QString proof_description(const pcg::Rule& rule) {
  QString text = qstr(rule.text.empty() ? rule.id : rule.text) + "\n";
  if (!rule.constraints.empty()) {
    QStringList c;
    for (const auto& s : rule.constraints) c << qstr(s);
    text += "side conditions: " + c.join(", ") + "\n";
  }
  text += "category: " + qstr(pcg::category_name(rule.category)) + "\n\n";
  if (!rule.verification) return text + "not verified yet: use Verify";
  const pcg::Verification& v = *rule.verification;
  QStringList core;
  for (const auto& a : v.core) core << qstr(a);
  switch (v.status) {
    case pcg::VerificationStatus::Proved:
      text += "PROVED using " + (core.isEmpty() ? QString("no axioms") : QString("axioms: ") + core.join(", "));
      break;
    case pcg::VerificationStatus::Refuted:
      text += "REFUTED: the interpreter evaluates the two sides differently\n" + qstr(v.counterexample);
      break;
    case pcg::VerificationStatus::Unknown: text += "UNKNOWN: " + qstr(v.reason); break;
    case pcg::VerificationStatus::Stale: text += "STALE (the proof no longer holds for this rule; use Verify): " + qstr(v.reason); break;
  }
  if (!v.rule_hash.empty()) text += "\nrule hash " + qstr(v.rule_hash) + ", proved by Loom " + qstr(v.loom_version);
  for (const pcg::AxiomUse& a : v.axioms)
    text += QString("\n  %1: hash %2, sound on %3 random instances").arg(qstr(a.name), qstr(a.hash)).arg(a.checked_instances);
  return text + QString("\n(%1 s)").arg(v.seconds, 0, 'f', 2);
}

}  // namespace

RuleBrowser::RuleBrowser(QWidget* parent)
    : QWidget(parent),
      model_(new RuleTableModel(this)),
      filter_(new RuleFilter(this)),
      table_(new QTableView),
      text_filter_(new QLineEdit),
      category_(new QComboBox),
      status_(new QComboBox),
      count_(new QLabel),
      title_(new QLabel("no rule library loaded")),
      lhs_(new GraphView),
      rhs_(new GraphView),
      proof_(new QPlainTextEdit),
      verify_selected_(new QPushButton("Verify selected")),
      verify_all_(new QPushButton("Verify shown")),
      cancel_(new QPushButton("Cancel")),
      progress_(new QProgressBar) {
  filter_->setSourceModel(model_);
  filter_->setSortRole(Qt::DisplayRole);
  table_->setModel(filter_);
  table_->setSortingEnabled(true);
  table_->sortByColumn(-1, Qt::AscendingOrder);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->verticalHeader()->setVisible(false);
  table_->verticalHeader()->setDefaultSectionSize(table_->fontMetrics().height() + 6);
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->setAlternatingRowColors(true);
  table_->setWordWrap(false);

  text_filter_->setPlaceholderText("filter: operators or rule id, e.g. matmul relu");
  text_filter_->setClearButtonEnabled(true);
  category_->addItems({"any category", "algebraic", "parallel", "hybrid"});
  status_->addItems({"any status", "proved", "refuted", "unknown", "stale", "unverified"});
  auto* open = new QPushButton("Open…");
  auto* save = new QPushButton("Save as…");
  auto* top = new QHBoxLayout;
  top->addWidget(open);
  top->addWidget(save);
  top->addWidget(text_filter_, 1);
  top->addWidget(category_);
  top->addWidget(status_);
  top->addWidget(count_);

  proof_->setReadOnly(true);
  proof_->setLineWrapMode(QPlainTextEdit::WidgetWidth);
  auto* sides = new QSplitter(Qt::Horizontal);
  sides->addWidget(titled("left-hand side", lhs_));
  sides->addWidget(titled("right-hand side", rhs_));
  sides->addWidget(titled("proof", proof_));
  sides->setStretchFactor(0, 2);
  sides->setStretchFactor(1, 2);
  sides->setStretchFactor(2, 1);
  auto* main = new QSplitter(Qt::Vertical);
  main->addWidget(table_);
  main->addWidget(sides);
  main->setStretchFactor(0, 1);
  main->setStretchFactor(1, 2);

  auto* bottom = new QHBoxLayout;
  bottom->addWidget(verify_selected_);
  bottom->addWidget(verify_all_);
  bottom->addWidget(progress_, 1);
  bottom->addWidget(cancel_);
  progress_->setFormat("");
  progress_->setValue(0);
  cancel_->setEnabled(false);
  verify_selected_->setToolTip("Prove the selected rule from the axioms with Z3, as `loom verify` does");
  verify_all_->setToolTip("Prove every rule the filter shows");

  auto* layout = new QVBoxLayout(this);
  layout->addWidget(title_);
  layout->addLayout(top);
  layout->addWidget(main, 1);
  layout->addLayout(bottom);

  connect(text_filter_, &QLineEdit::textChanged, this, &RuleBrowser::set_filter_text);
  connect(category_, &QComboBox::currentIndexChanged, this, [this](int i) {
    filter_->set_category(i == 0 ? QString() : category_->itemText(i));
    update_count();
  });
  connect(status_, &QComboBox::currentIndexChanged, this, [this](int i) {
    filter_->set_status(i == 0 ? QString() : status_->itemText(i));
    update_count();
  });
  connect(table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
          [this](const QModelIndex& current) { show_rule(current.isValid() ? filter_->mapToSource(current).row() : -1); });
  connect(open, &QPushButton::clicked, this, &RuleBrowser::open_dialog);
  connect(save, &QPushButton::clicked, this, &RuleBrowser::save_dialog);
  connect(verify_selected_, &QPushButton::clicked, this, &RuleBrowser::verify_selected);
  connect(verify_all_, &QPushButton::clicked, this, &RuleBrowser::verify_shown);
  connect(cancel_, &QPushButton::clicked, this, [this] {
    job_.cancel();
    emit status_message("cancelling after the rules being proved now…");
  });
  connect(&job_, &BackgroundJob::finished, this, [this] {
    verify_selected_->setEnabled(true);
    verify_all_->setEnabled(true);
    cancel_->setEnabled(false);
    if (shown_row_ >= 0 && source_.rules.rules[static_cast<std::size_t>(shown_row_)].verification)
      proof_->setPlainText(proof_description(source_.rules.rules[static_cast<std::size_t>(shown_row_)]));
    if (!job_.error().isEmpty()) emit status_message("verification stopped: " + job_.error());
    emit verification_finished();
  });
  show_rule(-1);
  update_count();
}

void RuleBrowser::load_file(const QString& path) {
  set_rules(load_rule_source(path.toStdString()), path);
  emit file_changed(path);
}

void RuleBrowser::set_rules(RuleSource source, const QString& title) {
  job_.cancel();
  job_.wait();
  ++generation_;
  source_ = std::move(source);
  model_->set_rules(&source_.rules.rules);
  title_->setText(QString("<b>%1</b> — %2 rules").arg(title.toHtmlEscaped()).arg(source_.rules.rules.size()));
  update_count();
  shown_row_ = -1;
  if (filter_->rowCount() > 0)
    table_->setCurrentIndex(filter_->index(0, 0));
  else
    show_rule(-1);
  table_->resizeColumnsToContents();
  if (table_->columnWidth(kRuleOps) > 260) table_->setColumnWidth(kRuleOps, 260);
}

void RuleBrowser::save_file(const QString& path) const {
  pcg::write_file_atomically(path.toStdString(), pcg::rule_library_to_json(source_.rules).dump(2) + "\n");
}

void RuleBrowser::set_filter_text(const QString& text) {
  if (text_filter_->text() != text) text_filter_->setText(text);  // comes back here through textChanged
  filter_->set_text(text);
  update_count();
}

void RuleBrowser::set_category_filter(const QString& category) {
  const int i = category.isEmpty() ? 0 : category_->findText(category);
  category_->setCurrentIndex(std::max(0, i));
}

void RuleBrowser::set_status_filter(const QString& status) {
  const int i = status.isEmpty() ? 0 : status_->findText(status);
  status_->setCurrentIndex(std::max(0, i));
}

int RuleBrowser::visible_rules() const { return filter_->rowCount(); }

void RuleBrowser::update_count() { count_->setText(QString("%1 of %2 shown").arg(filter_->rowCount()).arg(source_.rules.rules.size())); }

bool RuleBrowser::select_rule(const QString& id) {
  for (int row = 0; row < filter_->rowCount(); ++row) {
    const QModelIndex index = filter_->index(row, kRuleId);
    if (filter_->data(index).toString() == id) {
      table_->setCurrentIndex(index);
      return true;
    }
  }
  return false;
}

QString RuleBrowser::selected_rule() const {
  return shown_row_ < 0 ? QString() : qstr(source_.rules.rules[static_cast<std::size_t>(shown_row_)].id);
}

const pcg::Rule* RuleBrowser::rule(const QString& id) const {
  for (const pcg::Rule& r : source_.rules.rules)
    if (qstr(r.id) == id) return &r;
  return nullptr;
}

QString RuleBrowser::proof_text() const { return proof_->toPlainText(); }

bool RuleBrowser::is_parallel(const std::string& op) const {
  return source_.library && (source_.library->find_parallel(op) || source_.library->find_fused(op));
}

void RuleBrowser::show_rule(int row) {
  shown_row_ = row;
  if (row < 0 || row >= static_cast<int>(source_.rules.rules.size())) {
    shown_row_ = -1;
    lhs_->show_message("select a rule");
    rhs_->show_message("");
    proof_->clear();
    return;
  }
  const pcg::Rule& r = source_.rules.rules[static_cast<std::size_t>(row)];
  GraphStyle style;
  style.is_parallel = [this](const std::string& op) { return is_parallel(op); };
  try {
    lhs_->show_graph(r.lhs, style);
    rhs_->show_graph(r.rhs, style);
  } catch (const LoomError& e) {
    lhs_->show_message(qstr(e.what()));
  }
  proof_->setPlainText(proof_description(r));
}

void RuleBrowser::verify_selected() {
  if (shown_row_ >= 0) start_verification({static_cast<std::size_t>(shown_row_)});
}

void RuleBrowser::verify_shown() {
  std::vector<std::size_t> which;
  for (int row = 0; row < filter_->rowCount(); ++row)
    which.push_back(static_cast<std::size_t>(filter_->mapToSource(filter_->index(row, 0)).row()));
  start_verification(std::move(which));
}

void RuleBrowser::start_verification(std::vector<std::size_t> which) {
  if (which.empty() || !source_.library || job_.running()) return;
  // The worker gets its own copy of the rules it proves; results come back by index.
  std::vector<pcg::Rule> rules;
  for (std::size_t i : which) rules.push_back(source_.rules.rules[i]);
  VerifyRun run;
  for (std::size_t i = 0; i < rules.size(); ++i) run.which.push_back(i);
  run.cache_path = verifier::ResultCache::default_path();
  progress_->setRange(0, static_cast<int>(which.size()));
  progress_->setValue(0);
  progress_->setFormat("%v/%m rules");
  verify_selected_->setEnabled(false);
  verify_all_->setEnabled(false);
  cancel_->setEnabled(true);
  emit status_message(QString("verifying %1 rules (checking the axioms first)…").arg(which.size()));
  const int generation = generation_;
  auto apply = [this, generation, which](std::size_t first, std::vector<pcg::Verification> results) {
    if (generation != generation_) return;
    for (std::size_t k = 0; k < results.size(); ++k) {
      const std::size_t index = which[first + k];
      source_.rules.rules[index].verification = std::move(results[k]);
      model_->rules_changed(static_cast<int>(index), static_cast<int>(index));
    }
    progress_->setValue(static_cast<int>(first + results.size()));
    filter_->invalidate();
    update_count();
  };
  job_.start(
      [this, library = source_.library, rules = std::move(rules), run = std::move(run), apply](const std::atomic<bool>& cancelled) mutable {
        std::size_t sent = 0;
        try {
          verify_rules(*library, rules, run, cancelled, [&](const VerifyCounts& counts) {
            std::vector<pcg::Verification> fresh(run.results.begin() + static_cast<std::ptrdiff_t>(sent), run.results.end());
            const std::size_t first = sent;
            sent = run.results.size();
            job_.post([this, apply, first, fresh = std::move(fresh), counts]() mutable {
              apply(first, std::move(fresh));
              emit status_message(QString("verified %1/%2: %3 proved, %4 refuted, %5 unknown")
                                      .arg(counts.done)
                                      .arg(counts.total)
                                      .arg(counts.proved)
                                      .arg(counts.refuted)
                                      .arg(counts.unknown));
            });
          });
          if (cancelled) job_.post([this] { emit status_message("verification cancelled"); });
        } catch (const LoomError& e) {
          const QString message = qstr(e.what());
          job_.post([this, message] {
            emit status_message("verification failed: " + message);
            proof_->setPlainText("verification failed:\n" + message);
          });
        }
      });
}

void RuleBrowser::open_dialog() {
  const QString path = QFileDialog::getOpenFileName(this, "Open rule library", QString(), "Rule libraries (*.json *.loom);;All files (*)");
  if (path.isEmpty()) return;
  try {
    load_file(path);
  } catch (const LoomError& e) {
    QMessageBox::warning(this, "Open rule library", qstr(e.what()));
  }
}

void RuleBrowser::save_dialog() {
  const QString path = QFileDialog::getSaveFileName(this, "Save rule library", QString(), "Rule libraries (*.json)");
  if (path.isEmpty()) return;
  try {
    save_file(path);
  } catch (const LoomError& e) {
    QMessageBox::warning(this, "Save rule library", qstr(e.what()));
  }
}

}  // namespace loom::gui
