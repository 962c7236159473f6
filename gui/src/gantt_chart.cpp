#include "loom/gui/gantt_chart.hpp"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include <QGraphicsPathItem>
#include <QGraphicsRectItem>
#include <QGraphicsSimpleTextItem>
#include <QPainterPath>
#include <QWheelEvent>

namespace loom::gui {
namespace {

constexpr double kMinWidth = 400;  // scene units for the whole iteration, at least
constexpr double kLane = 14;       // height of one lane
constexpr double kRowGap = 8;
constexpr double kLeft = 70;  // room for the device names
constexpr double kTop = 24;   // room for the time axis

const QColor kForward(0x3b, 0x7d, 0xd8);
const QColor kBackward(0x1f, 0x4e, 0x96);
const QColor kTransfer(0xf0, 0x8c, 0x2e);
const QColor kTransferBackward(0xc2, 0x62, 0x0f);
const QColor kRecompute(0x8e, 0x44, 0xad);
const QColor kOrder(0xc0, 0x39, 0x2b);
const QColor kMemory(0x27, 0xae, 0x60);

// A round step for the axis: 1, 2 or 5 times a power of ten, giving about `ticks` ticks.
double tick_step(double span, int ticks) {
  const double raw = span / ticks;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0})
    if (raw <= m * power) return m * power;
  return 10 * power;
}

}  // namespace

GanttChart::GanttChart(QWidget* parent) : QGraphicsView(parent) {
  setScene(new QGraphicsScene(this));
  setDragMode(QGraphicsView::ScrollHandDrag);
  setRenderHint(QPainter::Antialiasing, false);
  setTransformationAnchor(QGraphicsView::AnchorUnderMouse);
  setBackgroundBrush(Qt::white);
  setAlignment(Qt::AlignLeft | Qt::AlignTop);
}

void GanttChart::clear_chart(const QString& message) {
  tasks_ = {};
  timeline_ = {};
  memory_ = {};
  scene()->clear();
  drawn_tasks_ = drawn_recomputations_ = drawn_order_links_ = drawn_memory_curves_ = 0;
  auto* text = scene()->addSimpleText(message);
  scene()->setSceneRect(text->boundingRect().adjusted(-20, -20, 20, 20));
  resetTransform();
}

void GanttChart::show_timeline(const search::TaskGraph& tasks, const search::Timeline& timeline,
                               const std::vector<std::vector<search::MemoryPoint>>& memory) {
  tasks_ = tasks;
  timeline_ = timeline;
  memory_ = memory;
  zoomed_ = false;
  resetTransform();
  draw();
}

void GanttChart::draw() {
  const search::TaskGraph& tasks = tasks_;
  const search::Timeline& timeline = timeline_;
  QGraphicsScene* s = scene();
  s->clear();
  drawn_tasks_ = 0;
  const double width = std::max(kMinWidth, viewport()->width() - kLeft - 24.0);
  const double makespan = timeline.makespan > 0 ? timeline.makespan : 1e-9;
  const double ms = makespan * 1e3;
  const double scale = width / makespan;
  // A third lane per device for its memory, when there is a curve to draw.
  double most_bytes = 0;
  for (const auto& curve : memory_)
    for (const search::MemoryPoint& p : curve) most_bytes = std::max(most_bytes, p.bytes);
  const int lanes = most_bytes > 0 ? 3 : 2;
  const double row_height = lanes * kLane + kRowGap;
  QFont small = font();
  small.setPointSizeF(7.5);

  // Axis and grid.
  const double step = tick_step(ms, 8);
  const double bottom = kTop + tasks.devices * row_height;
  for (double t = 0; t <= ms * 1.0001; t += step) {
    const double x = kLeft + t / ms * width;
    s->addLine(x, kTop - 4, x, bottom, QPen(QColor(0xe3, 0xe3, 0xe3)));
    auto* label = s->addSimpleText(QString::number(t, 'g', 4) + " ms", small);
    label->setPos(x - label->boundingRect().width() / 2, 2);
  }
  for (int d = 0; d < tasks.devices; ++d) {
    const double y = kTop + d * row_height;
    s->addRect(kLeft, y, width, lanes * kLane, QPen(Qt::NoPen), QBrush(d % 2 ? QColor(0xf7, 0xf7, 0xf7) : QColor(0xfc, 0xfc, 0xfc)));
    auto* name = s->addSimpleText(QString("device %1").arg(d), small);
    name->setPos(4, y + kLane - name->boundingRect().height() / 2);
  }

  // Tasks: compute in the device's upper lane, transfers in the sender's lower lane.
  drawn_recomputations_ = 0;
  drawn_order_links_ = 0;
  const auto lane_middle = [&](const search::SimTask& task) {
    return kTop + task.device * row_height + (task.kind == search::TaskKind::Compute ? 0 : kLane) + kLane / 2;
  };
  for (std::size_t i = 0; i < tasks.tasks.size(); ++i) {
    const search::SimTask& task = tasks.tasks[i];
    if (task.kind == search::TaskKind::Join || task.device < 0 || task.device >= tasks.devices) continue;
    const bool compute = task.kind == search::TaskKind::Compute;
    const double x = kLeft + timeline.start[i] * scale;
    const double w = std::max(0.6, (timeline.finish[i] - timeline.start[i]) * scale);
    const double y = kTop + task.device * row_height + (compute ? 0 : kLane) + 1;
    const QColor color = compute ? (task.backward ? kBackward : kForward) : (task.backward ? kTransferBackward : kTransfer);
    auto* rect = s->addRect(x, y, w, kLane - 2, QPen(color.darker(130), 0), QBrush(color));
    rect->setToolTip(QString("%1\n%2 – %3 ms%4")
                         .arg(QString::fromStdString(tasks.label_of(i)))
                         .arg(timeline.start[i] * 1e3, 0, 'f', 4)
                         .arg(timeline.finish[i] * 1e3, 0, 'f', 4)
                         .arg(compute ? QString() : QString("\n%1 bytes to device %2").arg(task.bytes, 0, 'g', 6).arg(task.peer)));
    ++drawn_tasks_;
    if (compute && task.recompute_seconds > 0) {
      // The forward computed again opens the backward task.
      auto* again =
          s->addRect(x, y, std::min(w, std::max(0.6, task.recompute_seconds * scale)), kLane - 2, QPen(Qt::NoPen), QBrush(kRecompute));
      again->setToolTip(rect->toolTip() + QString("\nrecomputes its forward first: %1 ms").arg(task.recompute_seconds * 1e3, 0, 'f', 4));
      ++drawn_recomputations_;
    }
  }

  // Memory: each device's bytes as a step curve in its third lane, one scale for every device.
  drawn_memory_curves_ = 0;
  QPen memory_pen(kMemory, 1.2);
  memory_pen.setCosmetic(true);
  for (int d = 0; d < tasks.devices && most_bytes > 0 && static_cast<std::size_t>(d) < memory_.size(); ++d) {
    const std::vector<search::MemoryPoint>& curve = memory_[static_cast<std::size_t>(d)];
    double peak = 0;
    for (const search::MemoryPoint& p : curve) peak = std::max(peak, p.bytes);
    if (peak <= 0) continue;  // a device the plan leaves idle
    const double base = kTop + d * row_height + 3 * kLane - 1;
    const auto height = [&](double bytes) { return base - (kLane - 3) * bytes / most_bytes; };
    QPainterPath path(QPointF(kLeft, height(curve.front().bytes)));
    for (const search::MemoryPoint& p : curve) {
      const double x = kLeft + p.seconds * scale;
      path.lineTo(x, path.currentPosition().y());
      path.lineTo(x, height(p.bytes));
    }
    path.lineTo(kLeft + width, path.currentPosition().y());
    auto* line = s->addPath(path, memory_pen);
    line->setToolTip(QString("device %1: memory over the iteration, at most %2 MiB").arg(d).arg(peak / (1024.0 * 1024.0), 0, 'f', 2));
    ++drawn_memory_curves_;
  }

  // Orders: a dashed link from the last task an order puts ahead to the task it holds back.
  QPen order_pen(kOrder, 1, Qt::DashLine);
  order_pen.setCosmetic(true);
  for (std::size_t i = 0; i < tasks.tasks.size(); ++i) {
    const search::SimTask& task = tasks.tasks[i];
    if (task.ordered_after.empty() || task.device < 0 || task.device >= tasks.devices) continue;
    int last = -1;
    for (int d : task.ordered_after)
      if (d >= 0 && static_cast<std::size_t>(d) < tasks.tasks.size() && (last < 0 || timeline.finish[d] > timeline.finish[last])) last = d;
    if (last < 0 || tasks.tasks[last].device < 0 || tasks.tasks[last].device >= tasks.devices) continue;
    const double x0 = kLeft + timeline.finish[last] * scale, y0 = lane_middle(tasks.tasks[last]);
    const double x1 = kLeft + timeline.start[i] * scale, y1 = lane_middle(task);
    auto* link = s->addLine(x0, y0, x1, y1, order_pen);
    link->setToolTip(QString("order: %1 runs after %2")
                         .arg(QString::fromStdString(tasks.label_of(i)))
                         .arg(QString::fromStdString(tasks.label_of(static_cast<std::size_t>(last)))));
    s->addEllipse(x1 - 2, y1 - 2, 4, 4, QPen(Qt::NoPen), QBrush(kOrder));
    ++drawn_order_links_;
  }

  // Legend.
  double lx = kLeft;
  const double ly = bottom + 8;
  std::vector<std::pair<QColor, QString>> legend{
      {kForward, "forward compute"}, {kBackward, "backward compute"}, {kTransfer, "transfer"}, {kTransferBackward, "backward transfer"}};
  if (drawn_recomputations_ > 0) legend.emplace_back(kRecompute, "forward recomputed");
  if (drawn_order_links_ > 0) legend.emplace_back(kOrder, "order");
  if (drawn_memory_curves_ > 0)
    legend.emplace_back(kMemory, QString("memory (lane height: %1 MiB)").arg(most_bytes / (1024.0 * 1024.0), 0, 'f', 2));
  for (const auto& [color, text] : legend) {
    s->addRect(lx, ly, 12, 10, QPen(Qt::NoPen), QBrush(color));
    auto* label = s->addSimpleText(text, small);
    label->setPos(lx + 16, ly - 2);
    lx += 30 + label->boundingRect().width();
  }
  auto* total = s->addSimpleText(QString("iteration: %1 ms").arg(ms, 0, 'f', 3), small);
  total->setPos(lx + 10, ly - 2);
  s->setSceneRect(s->itemsBoundingRect().adjusted(-6, -6, 6, 6));
}

void GanttChart::wheelEvent(QWheelEvent* event) {
  const double steps = event->angleDelta().y() / 120.0;
  if (steps == 0) return;
  // Zooming stretches time only, so that rows stay readable.
  const double factor = std::pow(1.25, steps);
  scale(factor, 1.0);
  zoomed_ = true;
  event->accept();
}

void GanttChart::resizeEvent(QResizeEvent* event) {
  QGraphicsView::resizeEvent(event);
  if (!zoomed_ && drawn_tasks_ > 0) draw();
}

}  // namespace loom::gui
