#include "loom/gui/plan_viewer.hpp"

#include <algorithm>

#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QSplitter>
#include <QTabWidget>
#include <QTableWidget>
#include <QVBoxLayout>

#include "loom/gui/gantt_chart.hpp"
#include "loom/gui/graph_view.hpp"
#include "loom/gui/rule_sources.hpp"
#include "loom/gui/titled.hpp"
#include "loom/interpreter/native_program.hpp"
#include "loom/models/load.hpp"
#include "loom/runtime/kernel_routes.hpp"
#include "loom/search/plan_model.hpp"
#include "loom/verifier/rule_selection.hpp"

namespace loom::gui {
namespace {

// Graphs larger than this are drawn without edge labels, which would dominate dot's layout time.
constexpr std::size_t kEdgeLabelLimit = 150;

QString qstr(const std::string& s) { return QString::fromStdString(s); }

// The step's status is the audit's (a record that no longer holds reads stale), not the one the
// plan was written with.
QString step_title(const search::AppliedSubstitution& s, int index, const std::optional<audit::PlanAudit>& audit) {
  const std::size_t i = static_cast<std::size_t>(index);
  const std::string status = audit && i < audit->substitutions.size() ? audit->substitutions[i].status : s.status;
  return QString("%1. %2  (%3, %4)").arg(index + 1).arg(qstr(s.rule)).arg(qstr(s.category)).arg(qstr(status));
}

QString proof_text(const audit::SubstitutionAudit& s) {
  QString text = QString("<b>%1</b>: %2").arg(qstr(s.rule).toHtmlEscaped()).arg(qstr(s.status).toHtmlEscaped());
  if (!s.text.empty()) text += QString("<br><code>%1</code>").arg(qstr(s.text).toHtmlEscaped());
  if (!s.holds()) text += QString("<br><span style='color:#c0392b'>%1</span>").arg(qstr(s.problem).toHtmlEscaped());
  if (!s.axioms.empty()) {
    QStringList axioms;
    for (const pcg::AxiomUse& a : s.axioms)
      axioms << QString("%1 (hash %2, sound on %3 instances)").arg(qstr(a.name).toHtmlEscaped()).arg(qstr(a.hash)).arg(a.checked_instances);
    text += "<br>axioms: " + axioms.join(", ");
  }
  return text;
}

// The library models need: the base one, with the files of those written in the spec language.
std::shared_ptr<const spec::Library> library_for(const std::vector<std::string>& model_names) {
  std::vector<std::string> files;
  for (const std::string& model : model_names) files = models::spec_paths_for(std::move(files), model);
  return base_library_with(files);
}

}  // namespace

PlanViewer::PlanViewer(QWidget* parent)
    : QWidget(parent),
      title_(new QLabel("no plan loaded")),
      model_(new QLineEdit),
      graphs_(new QTabWidget),
      step_list_(new QListWidget),
      replay_note_(new QLabel),
      chain_(new QLabel),
      kernels_(new QLabel),
      step_proof_(new QLabel),
      previous_(new QPushButton("◀ Previous")),
      next_(new QPushButton("Next ▶")),
      before_(new GraphView),
      after_(new GraphView),
      final_(new GraphView),
      gantt_(new GanttChart),
      memory_(new QTableWidget) {
  auto* open = new QPushButton("Open plan…");
  model_->setPlaceholderText(
      "the plan's own model, or a zoo name (mlp, bert_large, …), FILE.loom:NAME or .onnx file; Enter shows it alone");
  auto* top = new QHBoxLayout;
  top->addWidget(open);
  top->addWidget(new QLabel("Model"));
  top->addWidget(model_, 1);

  // Replay: the step list beside the graph before and after the selected step.
  auto* replay = new QWidget;
  auto* replay_layout = new QVBoxLayout(replay);
  replay_layout->setContentsMargins(0, 0, 0, 0);
  auto* steps_bar = new QHBoxLayout;
  steps_bar->addWidget(previous_);
  steps_bar->addWidget(next_);
  steps_bar->addWidget(replay_note_, 1);
  replay_layout->addLayout(steps_bar);
  step_proof_->setWordWrap(true);
  step_proof_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  replay_layout->addWidget(step_proof_);
  auto* replay_split = new QSplitter(Qt::Horizontal);
  replay_split->addWidget(step_list_);
  replay_split->addWidget(titled("before", before_, "(matched nodes highlighted)"));
  replay_split->addWidget(titled("after", after_, "(inserted nodes highlighted)"));
  replay_split->setStretchFactor(0, 1);
  replay_split->setStretchFactor(1, 3);
  replay_split->setStretchFactor(2, 3);
  replay_layout->addWidget(replay_split, 1);
  graphs_->addTab(final_, "Final PCG (colored by device)");
  graphs_->addTab(replay, "Replay");

  memory_->setColumnCount(4);
  memory_->setHorizontalHeaderLabels({"device", "memory", "of capacity", "busy"});
  memory_->verticalHeader()->setVisible(false);
  memory_->horizontalHeader()->setStretchLastSection(true);
  memory_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  auto* lower = new QSplitter(Qt::Horizontal);
  lower->addWidget(titled("simulated iteration", gantt_, "(per device: compute above, transfers sent below)"));
  lower->addWidget(titled("memory per device", memory_));
  lower->setStretchFactor(0, 3);
  lower->setStretchFactor(1, 1);
  lower->setSizes({900, 420});

  auto* main = new QSplitter(Qt::Vertical);
  main->addWidget(graphs_);
  main->addWidget(lower);
  main->setStretchFactor(0, 3);
  main->setStretchFactor(1, 2);
  main->setSizes({500, 340});
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(title_);
  chain_->setWordWrap(true);
  layout->addWidget(chain_);
  kernels_->setWordWrap(true);
  layout->addWidget(kernels_);
  layout->addLayout(top);
  layout->addWidget(main, 1);

  connect(open, &QPushButton::clicked, this, &PlanViewer::open_dialog);
  connect(model_, &QLineEdit::returnPressed, this, [this] {
    if (plan_ || model_->text().trimmed().isEmpty()) return;
    try {
      load_model(model_->text().trimmed());
    } catch (const LoomError& e) {
      emit status_message(qstr(e.what()));
    }
  });
  connect(previous_, &QPushButton::clicked, this, &PlanViewer::previous_step);
  connect(next_, &QPushButton::clicked, this, &PlanViewer::next_step);
  connect(step_list_, &QListWidget::currentRowChanged, this, [this](int row) {
    if (row >= 0 && row != step_) show_step(row);
  });
  final_->show_message("open a plan (loom optimize --out plan.json)");
  before_->show_message("");
  after_->show_message("");
  gantt_->clear_chart("no plan loaded");
  show_step(-1);
}

bool PlanViewer::is_parallel(const std::string& op) const { return library_ && (library_->find_parallel(op) || library_->find_fused(op)); }

void PlanViewer::load(const QString& plan_path, const QString& model) {
  const std::string planned = search::model_of_plan(plan_path.toStdString());
  const std::string model_name = model.isEmpty() ? planned : model.toStdString();
  auto library = library_for({planned, model_name});
  search::Plan plan = search::load_plan(plan_path.toStdString(), *library);
  // A plan without its source graph replays from the model it names, built afresh.
  if (plan.source.size() == 0 && !plan.substitutions.empty() && !model_name.empty()) {
    models::ModelRequest request;
    request.model = model_name;
    if (models::is_onnx_path(model_name)) request.onnx.fusion_rules = verifier::import_rules(*library).rules;
    plan.source = models::load_model(*library, request).graph;
  }
  if (!model.isEmpty()) plan.model = model.toStdString();
  set_plan(std::move(library), std::move(plan), plan_path);
  emit file_changed(plan_path);
}

void PlanViewer::load_model(const QString& model) {
  auto library = library_for({model.toStdString()});
  models::ModelRequest request;
  request.model = model.toStdString();
  if (models::is_onnx_path(request.model)) request.onnx.fusion_rules = verifier::import_rules(*library).rules;
  search::Plan plan;
  plan.model = request.model;
  plan.graph = models::load_model(*library, request).graph;
  library_ = library;
  plan_.reset();
  analysis_.reset();
  audit_.reset();
  chain_->clear();
  step_proof_->clear();
  steps_.clear();
  model_->setText(model);
  title_->setText(QString("<b>%1</b>: %2 nodes, no plan").arg(model.toHtmlEscaped()).arg(plan.graph.size()));
  show_kernel_routes(plan.graph);
  GraphStyle style;
  style.is_parallel = [this](const std::string& op) { return is_parallel(op); };
  style.edge_labels = plan.graph.size() <= kEdgeLabelLimit;
  final_->show_graph(plan.graph, style);
  gantt_->clear_chart("no plan loaded: the model alone is shown");
  memory_->setRowCount(0);
  graphs_->setCurrentIndex(0);
  show_step(-1);
}

void PlanViewer::set_plan(std::shared_ptr<const spec::Library> library, search::Plan plan, const QString& title) {
  library_ = std::move(library);
  plan_ = std::move(plan);
  analysis_.reset();
  steps_.clear();
  model_->setText(qstr(plan_->model));
  QString replay_problem;
  if (!plan_->substitutions.empty()) {
    try {
      steps_ = search::replay_plan(*plan_, *library_);
    } catch (const LoomError& e) {
      replay_problem = qstr(e.what());
    }
  }
  audit_.reset();
  try {
    // Records are checked, not proved again: the viewer never waits on Z3 (`loom verify PLAN` does).
    audit::AuditOptions quick;
    quick.reprove = false;
    audit_ = audit::audit_plan(*plan_, *library_, quick);
    const bool holds = audit_->holds();
    chain_->setText(QString("<span style='color:%1'>soundness %2</span>")
                        .arg(holds ? "#1e8449" : "#c0392b")
                        .arg(qstr(audit_->verdict()).toHtmlEscaped()));
  } catch (const std::exception& e) {
    chain_->setText("soundness chain not audited: " + qstr(e.what()).toHtmlEscaped());
  }
  try {
    analysis_ = analyze_plan(*plan_, *library_);
  } catch (const LoomError& e) {
    emit status_message(qstr(e.what()));
  }
  const search::Machine& m = plan_->machine;
  QString pipeline = plan_->pipeline.enabled() ? QString(", pipelined: %1 stages, %2 micro-batches%3")
                                                     .arg(plan_->pipeline.stages)
                                                     .arg(plan_->pipeline.microbatches)
                                                     .arg(plan_->pipeline.order == search::PipelineOrder::GPipe ? " (GPipe)" : "")
                                               : QString();
  if (!plan_->schedule.empty())
    pipeline += QString(", written as schedule %1, %2 order edges, %3 operators recomputed")
                    .arg(qstr(plan_->schedule).toHtmlEscaped())
                    .arg(plan_->order.size())
                    .arg(plan_->recompute.size());
  title_->setText(QString("<b>%1</b>: %2 on %3 (%4 devices), %5 nodes, %6 substitutions%7, simulated iteration %8 ms")
                      .arg(title.toHtmlEscaped())
                      .arg(qstr(plan_->model.empty() ? "plan" : plan_->model).toHtmlEscaped())
                      .arg(qstr(m.name).toHtmlEscaped())
                      .arg(m.devices())
                      .arg(plan_->graph.size())
                      .arg(plan_->substitutions.size())
                      .arg(pipeline)
                      .arg(analysis_ ? analysis_->timeline.makespan * 1e3 : plan_->iteration_seconds * 1e3, 0, 'f', 3));

  show_kernel_routes(plan_->graph);
  GraphStyle style;
  style.is_parallel = [this](const std::string& op) { return is_parallel(op); };
  style.color_by_device = true;
  style.edge_labels = plan_->graph.size() <= kEdgeLabelLimit;
  final_->show_graph(plan_->graph, style);
  show_analysis();

  step_list_->clear();
  for (std::size_t i = 0; i < plan_->substitutions.size(); ++i)
    step_list_->addItem(step_title(plan_->substitutions[i], static_cast<int>(i), audit_));
  if (plan_->substitutions.empty()) {
    replay_note_->setText("no substitutions: the plan runs the model's graph as it is");
  } else if (!replay_problem.isEmpty()) {
    replay_note_->setText("cannot replay: " + replay_problem);
  }
  step_ = -1;
  show_step(0);
  graphs_->setCurrentIndex(steps_.empty() ? 0 : 1);
}

void PlanViewer::show_analysis() {
  memory_->setRowCount(0);
  if (!analysis_ || !plan_) {
    gantt_->clear_chart("the plan could not be simulated");
    return;
  }
  gantt_->show_timeline(analysis_->tasks, analysis_->timeline, analysis_->memory_over_time);
  const double capacity = plan_->machine.device.memory_bytes;
  const int devices = plan_->machine.devices();
  memory_->setRowCount(devices);
  for (int d = 0; d < devices; ++d) {
    const double bytes = analysis_->memory_bytes[static_cast<std::size_t>(d)];
    memory_->setItem(d, 0, new QTableWidgetItem(QString::number(d)));
    memory_->setItem(d, 1, new QTableWidgetItem(QString("%1 MiB").arg(bytes / (1024.0 * 1024.0), 0, 'f', 1)));
    auto* bar = new QProgressBar;
    bar->setRange(0, 1000);
    bar->setValue(capacity > 0 ? static_cast<int>(std::min(1.0, bytes / capacity) * 1000) : 0);
    bar->setFormat(QString("%1 %").arg(capacity > 0 ? 100 * bytes / capacity : 0, 0, 'f', 1));
    if (d == analysis_->overfull_device) bar->setStyleSheet("QProgressBar::chunk { background: #c0392b; }");
    memory_->setCellWidget(d, 2, bar);
    memory_->setItem(d, 3,
                     new QTableWidgetItem(QString("%1 ms").arg(analysis_->busy_seconds[static_cast<std::size_t>(d)] * 1e3, 0, 'f', 3)));
  }
  memory_->resizeColumnsToContents();
}

void PlanViewer::show_step(int step) {
  if (steps_.empty()) {
    step_ = -1;
    previous_->setEnabled(false);
    next_->setEnabled(false);
    before_->show_message(plan_ && plan_->substitutions.empty() ? "no substitutions" : "nothing to replay");
    after_->show_message("");
    step_proof_->setText(audit_ && !audit_->substitutions.empty() ? proof_text(audit_->substitutions.front()) : QString());
    return;
  }
  step = std::clamp(step, 0, step_count() - 1);
  if (step == step_) return;
  step_ = step;
  const search::ReplayStep& s = steps_[static_cast<std::size_t>(step)];
  GraphStyle before;
  before.is_parallel = [this](const std::string& op) { return is_parallel(op); };
  before.edge_labels = s.before.size() <= kEdgeLabelLimit;
  GraphStyle after = before;
  before.highlighted = {s.matched.begin(), s.matched.end()};
  after.highlighted = {s.inserted.begin(), s.inserted.end()};
  after.edge_labels = s.after.size() <= kEdgeLabelLimit;
  before_->show_graph(s.before, before);
  after_->show_graph(s.after, after);
  previous_->setEnabled(step > 0);
  next_->setEnabled(step + 1 < step_count());
  replay_note_->setText(QString("step %1 of %2: %3 matched %4 nodes, inserted %5")
                            .arg(step + 1)
                            .arg(step_count())
                            .arg(qstr(s.substitution.rule))
                            .arg(s.matched.size())
                            .arg(s.inserted.size()));
  if (step_list_->currentRow() != step) step_list_->setCurrentRow(step);
  step_proof_->setText(audit_ && static_cast<std::size_t>(step) < audit_->substitutions.size()
                           ? proof_text(audit_->substitutions[static_cast<std::size_t>(step)])
                           : QString());
}

void PlanViewer::show_kernel_routes(const pcg::Graph& graph) {
  const runtime::KernelRoutes routes = runtime::kernel_routes(*library_, graph);
  const auto names = [](const std::vector<std::string>& ops) {
    QStringList list;
    for (const std::string& op : ops) list << qstr(op).toHtmlEscaped();
    return list.isEmpty() ? QString("none") : list.join(", ");
  };
  QString text = QString("kernels on the CPU: hand-written for %1 operator%2; compiled from their specs: %3")
                     .arg(routes.native.size())
                     .arg(routes.native.size() == 1 ? "" : "s")
                     .arg(names(routes.compiled));
  if (!routes.interpreted.empty())
    text += QString("; <span style='color:#c0392b'>interpreted: %1 (%2)</span>")
                .arg(names(routes.interpreted))
                .arg(qstr(spec::NativeToolchain::from_environment().why_none).toHtmlEscaped());
  kernels_->setText(text);
}

QString PlanViewer::kernels_text() const { return kernels_->text(); }

QString PlanViewer::chain_verdict() const { return audit_ ? qstr(audit_->verdict()) : QString(); }

QString PlanViewer::step_proof() const { return step_proof_->text(); }

QString PlanViewer::title_text() const { return title_->text(); }

QString PlanViewer::replay_message() const { return replay_note_->text(); }

int PlanViewer::memory_rows() const { return memory_->rowCount(); }

void PlanViewer::open_dialog() {
  const QString path = QFileDialog::getOpenFileName(this, "Open plan", QString(), "Plans (*.json);;All files (*)");
  if (path.isEmpty()) return;
  try {
    load(path, model_->text().trimmed());
  } catch (const LoomError& e) {
    QMessageBox::warning(this, "Open plan", qstr(e.what()));
  }
}

}  // namespace loom::gui
