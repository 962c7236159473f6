#pragma once
// The plan viewer: a model and a plan; the plan's substitutions replayed step by step (the matched
// nodes highlighted before, the inserted ones after); the final PCG colored by device; the simulated
// iteration as a Gantt chart per device; memory per device; the plan's soundness chain: each step's
// rule, its proof status and the axioms the proof used, and the audit's verdict.
#include <memory>
#include <optional>
#include <vector>

#include <QWidget>

#include "loom/audit/plan_audit.hpp"
#include "loom/gui/plan_analysis.hpp"
#include "loom/interpreter/library.hpp"
#include "loom/search/plan.hpp"
#include "loom/search/replay.hpp"

class QLabel;
class QLineEdit;
class QListWidget;
class QPushButton;
class QTableWidget;
class QTabWidget;

namespace loom::gui {

class GanttChart;
class GraphView;

class PlanViewer : public QWidget {
  Q_OBJECT

 public:
  explicit PlanViewer(QWidget* parent = nullptr);

  // Loads a plan file, and the model it was made for: `model` (a zoo name or .onnx file), or the
  // model the plan names when `model` is empty. Throws LoomError naming the file or model.
  void load(const QString& plan_path, const QString& model = {});
  // Shows a model alone, without a plan.
  void load_model(const QString& model);
  void set_plan(std::shared_ptr<const spec::Library> library, search::Plan plan, const QString& title);

  int step_count() const { return static_cast<int>(steps_.size()); }
  int current_step() const { return step_; }
  void show_step(int step);  // 0-based; clamped
  void next_step() { show_step(step_ + 1); }
  void previous_step() { show_step(step_ - 1); }
  QString replay_message() const;
  // The line above the views: the plan's model, machine, pipeline, schedule and simulated time.
  QString title_text() const;
  // The audit's one-line verdict, and the shown step's rule, proof status and axioms.
  QString chain_verdict() const;
  QString step_proof() const;
  // How the graph's operators run on the CPU: hand-written kernels, compiled from their specs,
  // interpreted.
  QString kernels_text() const;

  const GraphView& before_view() const { return *before_; }
  const GraphView& after_view() const { return *after_; }
  const GraphView& final_view() const { return *final_; }
  const GanttChart& gantt() const { return *gantt_; }
  int memory_rows() const;

 signals:
  void status_message(QString text);
  void file_changed(QString path);

 private:
  void show_analysis();
  void open_dialog();
  bool is_parallel(const std::string& op) const;
  void show_kernel_routes(const pcg::Graph& graph);

  std::shared_ptr<const spec::Library> library_;
  std::optional<search::Plan> plan_;
  std::optional<PlanAnalysis> analysis_;
  std::vector<search::ReplayStep> steps_;
  std::optional<audit::PlanAudit> audit_;
  int step_ = -1;

  QLabel* title_;
  QLineEdit* model_;
  QTabWidget* graphs_;
  QListWidget* step_list_;
  QLabel* replay_note_;
  QLabel* chain_;
  QLabel* kernels_;
  QLabel* step_proof_;
  QPushButton* previous_;
  QPushButton* next_;
  GraphView* before_;
  GraphView* after_;
  GraphView* final_;
  GanttChart* gantt_;
  QTableWidget* memory_;
};

}  // namespace loom::gui
