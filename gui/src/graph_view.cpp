#include "loom/gui/graph_view.hpp"

#include <algorithm>
#include <cmath>

#include <QGraphicsPathItem>
#include <QGraphicsSimpleTextItem>
#include <QPainterPath>
#include <QWheelEvent>

namespace loom::gui {
namespace {

const QColor kComputeFill(0xe8, 0xf1, 0xfb);
const QColor kComputeBorder(0x2b, 0x5d, 0x9b);
const QColor kParallelFill(0xf1, 0xe6, 0xf8);
const QColor kParallelBorder(0x7b, 0x3f, 0xa0);
const QColor kInputFill(0xee, 0xee, 0xee);
const QColor kEdgeColor(0x55, 0x55, 0x55);

QPointF point(const LayoutPoint& p) { return {p.x, p.y}; }

QPainterPath node_outline(const LayoutNode& node) {
  const QRectF box(node.center.x - node.width / 2, node.center.y - node.height / 2, node.width, node.height);
  QPainterPath path;
  switch (node.kind) {
    case LayoutNodeKind::Input: path.addEllipse(box); break;
    case LayoutNodeKind::Weight: {
      // a cylinder, as DOT draws weights
      const double rim = std::min(8.0, box.height() / 4);
      path.addRoundedRect(box, box.width() / 2, rim, Qt::AbsoluteSize);
      path.moveTo(box.left(), box.top() + rim);
      path.quadTo(box.center().x(), box.top() + 2 * rim, box.right(), box.top() + rim);
      break;
    }
    case LayoutNodeKind::Operator: path.addRoundedRect(box, 6, 6); break;
    case LayoutNodeKind::Output: break;
  }
  return path;
}

// Graphviz's B-spline (start point, then three points per segment) as a Qt path.
QPainterPath edge_path(const LayoutEdge& edge) {
  QPainterPath path;
  if (edge.spline.empty()) return path;
  path.moveTo(point(edge.spline[0]));
  for (std::size_t i = 1; i + 2 < edge.spline.size(); i += 3)
    path.cubicTo(point(edge.spline[i]), point(edge.spline[i + 1]), point(edge.spline[i + 2]));
  if (edge.has_arrow) path.lineTo(point(edge.arrow_tip));
  return path;
}

QPolygonF arrow_head(const QPointF& from, const QPointF& tip) {
  const QPointF d = tip - from;
  const double length = std::hypot(d.x(), d.y());
  if (length < 1e-6) return {};
  const QPointF u = d / length, n(-u.y(), u.x());
  const double size = 7;
  return QPolygonF({tip, tip - u * size + n * size * 0.45, tip - u * size - n * size * 0.45});
}

}  // namespace

GraphView::GraphView(QWidget* parent) : QGraphicsView(parent) {
  setScene(new QGraphicsScene(this));
  setDragMode(QGraphicsView::ScrollHandDrag);
  setRenderHint(QPainter::Antialiasing);
  setRenderHint(QPainter::TextAntialiasing);
  setTransformationAnchor(QGraphicsView::AnchorUnderMouse);
  setOptimizationFlag(QGraphicsView::DontSavePainterState);
  setViewportUpdateMode(QGraphicsView::SmartViewportUpdate);
  setBackgroundBrush(Qt::white);
}

void GraphView::show_graph(const pcg::Graph& graph, const GraphStyle& style) {
  LayoutOptions options;
  options.edge_labels = style.edge_labels;
  draw(layout_graph(graph, options), style);
}

void GraphView::show_message(const QString& text) {
  scene()->clear();
  drawn_nodes_ = drawn_highlighted_ = drawn_edges_ = 0;
  focus_ = QRectF();
  auto* item = scene()->addSimpleText(text);
  item->setBrush(QColor(0x66, 0x66, 0x66));
  scene()->setSceneRect(item->boundingRect().adjusted(-20, -20, 20, 20));
  resetTransform();
  fitted_ = false;
}

void GraphView::draw(const GraphLayout& layout, const GraphStyle& style) {
  QGraphicsScene* s = scene();
  s->clear();
  drawn_nodes_ = drawn_highlighted_ = drawn_edges_ = 0;
  focus_ = QRectF();
  QFont node_font = font();
  node_font.setPointSizeF(8);
  QFont edge_font = node_font;
  edge_font.setPointSizeF(7);

  for (const LayoutEdge& edge : layout.edges) {
    const bool highlighted = style.highlighted.count(layout.nodes[static_cast<std::size_t>(edge.from)].id) &&
                             style.highlighted.count(layout.nodes[static_cast<std::size_t>(edge.to)].id) &&
                             layout.nodes[static_cast<std::size_t>(edge.to)].kind != LayoutNodeKind::Output;
    const QColor color = highlighted ? style.highlight_color : kEdgeColor;
    auto* path = s->addPath(edge_path(edge), QPen(color, highlighted ? 2.0 : 1.0));
    path->setZValue(0);
    if (edge.has_arrow && !edge.spline.empty()) {
      auto* head = s->addPolygon(arrow_head(point(edge.spline.back()), point(edge.arrow_tip)), QPen(color), QBrush(color));
      head->setZValue(0);
    }
    if (!edge.label.empty()) {
      auto* text = s->addSimpleText(QString::fromStdString(edge.label), edge_font);
      text->setBrush(QColor(0x33, 0x33, 0x99));
      const QRectF r = text->boundingRect();
      text->setPos(edge.label_center.x - r.width() / 2, edge.label_center.y - r.height() / 2);
      text->setZValue(1);
    }
    ++drawn_edges_;
  }

  for (const LayoutNode& node : layout.nodes) {
    const bool parallel = node.kind == LayoutNodeKind::Operator && style.is_parallel && style.is_parallel(node.op);
    const bool highlighted = node.kind != LayoutNodeKind::Output && style.highlighted.count(node.id) > 0;
    QColor fill = node.kind == LayoutNodeKind::Operator ? (parallel ? kParallelFill : kComputeFill) : kInputFill;
    if (style.color_by_device && !node.fill_color.empty()) fill = QColor(QString::fromStdString(node.fill_color));
    QPen pen(parallel                                ? kParallelBorder
             : node.kind == LayoutNodeKind::Operator ? kComputeBorder
                                                     : QColor(0x77, 0x77, 0x77),
             parallel ? 1.6 : 1.2);
    if (parallel) pen.setStyle(Qt::DashLine);
    if (highlighted) {
      pen = QPen(style.highlight_color, 3.0);
      ++drawn_highlighted_;
    }
    if (node.kind != LayoutNodeKind::Output) {
      auto* shape = s->addPath(node_outline(node), pen, QBrush(fill));
      shape->setZValue(2);
      shape->setToolTip(QString::fromStdString(node.label));
      ++drawn_nodes_;
      if (highlighted) focus_ = focus_.united(shape->boundingRect());
    }
    QFont f = node_font;
    f.setItalic(parallel);
    auto* text = s->addSimpleText(QString::fromStdString(node.label), f);
    const QRectF r = text->boundingRect();
    text->setPos(node.center.x - r.width() / 2, node.center.y - r.height() / 2);
    text->setZValue(3);
  }
  s->setSceneRect(s->itemsBoundingRect().adjusted(-20, -20, 20, 20));
  fitted_ = true;
  fit_graph();
}

void GraphView::fit_graph() {
  resetTransform();
  const QRectF whole = sceneRect();
  if (whole.isEmpty()) return;
  fitInView(whole, Qt::KeepAspectRatio);
  // A large graph with highlighted nodes is shown around them, at a zoom where labels can be read.
  const QRectF r = !focus_.isEmpty() && transform().m11() < 0.6 ? focus_.adjusted(-250, -250, 250, 250) & whole : whole;
  resetTransform();
  fitInView(r, Qt::KeepAspectRatio);
  // Small graphs are not blown up past their natural size.
  if (transform().m11() > 1.0) resetTransform();
  centerOn(r.center());
}

double GraphView::zoom() const { return transform().m11(); }

void GraphView::wheelEvent(QWheelEvent* event) {
  const double steps = event->angleDelta().y() / 120.0;
  if (steps == 0) return;
  const double factor = std::pow(1.2, steps);
  const double next = zoom() * factor;
  if (next < 0.02 || next > 8) return;
  scale(factor, factor);
  fitted_ = false;
  event->accept();
}

void GraphView::resizeEvent(QResizeEvent* event) {
  QGraphicsView::resizeEvent(event);
  if (fitted_) fit_graph();
}

}  // namespace loom::gui
