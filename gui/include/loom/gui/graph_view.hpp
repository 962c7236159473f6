#pragma once
// A PCG drawn from its Graphviz layout on a QGraphicsScene: compute operators as rounded boxes,
// parallelization operators as dashed violet boxes, inputs and weights apart, edges labelled with
// the parallel shape (D, V, R degrees) they carry. Wheel zooms, dragging pans.
#include <functional>
#include <set>
#include <string>

#include <QGraphicsView>

#include "loom/gui/graph_layout.hpp"
#include "loom/pcg/graph.hpp"

namespace loom::gui {

struct GraphStyle {
  // Whether an op moves data (a parallel or fused form) rather than computing.
  std::function<bool(const std::string& op)> is_parallel;
  std::set<int> highlighted;  // node ids drawn with the highlight color
  QColor highlight_color = QColor(0xe6, 0x55, 0x0d);
  bool color_by_device = false;  // fill nodes with a machine view by their first device
  bool edge_labels = true;
};

class GraphView : public QGraphicsView {
  Q_OBJECT

 public:
  explicit GraphView(QWidget* parent = nullptr);

  // Lays the graph out and draws it, replacing what was shown. Throws LoomError when layout fails.
  void show_graph(const pcg::Graph& graph, const GraphStyle& style = {});
  // Clears the view and shows one line of text instead of a graph.
  void show_message(const QString& text);
  // Fits the whole graph, or, when nodes are highlighted, the neighbourhood of the highlighted ones.
  void fit_graph();

  int drawn_nodes() const { return drawn_nodes_; }  // PCG nodes, not output markers
  int drawn_highlighted() const { return drawn_highlighted_; }
  int drawn_edges() const { return drawn_edges_; }
  double zoom() const;

 protected:
  void wheelEvent(QWheelEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;

 private:
  void draw(const GraphLayout& layout, const GraphStyle& style);

  int drawn_nodes_ = 0;
  int drawn_highlighted_ = 0;
  int drawn_edges_ = 0;
  bool fitted_ = true;  // keep fitting on resize until the user zooms
  QRectF focus_;        // the highlighted nodes' bounds, empty when none
};

}  // namespace loom::gui
