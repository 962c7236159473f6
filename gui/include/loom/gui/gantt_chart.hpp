#pragma once
// A simulated training iteration as a Gantt chart: one row per device, its compute tasks (forward
// and backward, a recomputed forward marked at the start of its backward) above and the transfers
// it sends below, its memory over the iteration in a third lane, against a time axis in
// milliseconds; the plan's orders drawn as links.
#include <QGraphicsView>

#include <vector>

#include "loom/search/plan_simulation.hpp"
#include "loom/search/simulator.hpp"
#include "loom/search/task_graph.hpp"

namespace loom::gui {

class GanttChart : public QGraphicsView {
  Q_OBJECT

 public:
  explicit GanttChart(QWidget* parent = nullptr);

  // Keeps a copy of all three, to redraw at the view's width. `memory`, per device (may be empty),
  // is drawn in a lane of each device's row, on one scale for all devices.
  void show_timeline(const search::TaskGraph& tasks, const search::Timeline& timeline,
                     const std::vector<std::vector<search::MemoryPoint>>& memory = {});
  void clear_chart(const QString& message);
  int drawn_tasks() const { return drawn_tasks_; }
  // Backward tasks drawn with the forward they compute again, and links drawn for the plan's orders.
  int drawn_recomputations() const { return drawn_recomputations_; }
  int drawn_order_links() const { return drawn_order_links_; }
  int drawn_memory_curves() const { return drawn_memory_curves_; }

 protected:
  void wheelEvent(QWheelEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;

 private:
  void draw();

  search::TaskGraph tasks_;
  search::Timeline timeline_;
  int drawn_tasks_ = 0;
  int drawn_recomputations_ = 0;
  int drawn_order_links_ = 0;
  int drawn_memory_curves_ = 0;
  std::vector<std::vector<search::MemoryPoint>> memory_;
  bool zoomed_ = false;
};

}  // namespace loom::gui
