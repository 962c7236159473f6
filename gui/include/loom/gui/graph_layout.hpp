#pragma once
// A PCG laid out by Graphviz's layered `dot` layout: node boxes and edge curves in scene
// coordinates (points, y growing downwards). Nothing else in the GUI sees Graphviz.
#include <string>
#include <vector>

#include "loom/pcg/graph.hpp"

namespace loom::gui {

struct LayoutPoint {
  double x = 0;
  double y = 0;
};

enum class LayoutNodeKind { Operator, Input, Weight, Output };

struct LayoutNode {
  LayoutNodeKind kind = LayoutNodeKind::Operator;
  int id = 0;              // the PCG node id; for an Output, the index of the graph output
  std::string op;          // empty for an Output
  std::string label;       // lines separated by '\n'
  std::string fill_color;  // "#rrggbb" for a node with a machine view (by its first device), else empty
  LayoutPoint center;
  double width = 0, height = 0;
};

struct LayoutEdge {
  int from = 0, to = 0;  // indices into GraphLayout::nodes
  // A cubic B-spline as Graphviz gives it: the first point, then three points per segment.
  std::vector<LayoutPoint> spline;
  bool has_arrow = false;
  LayoutPoint arrow_tip;  // where the arrow head points, when has_arrow
  std::string label;      // the parallel shape the edge carries, e.g. "[8, 4/2]{V2}"
  LayoutPoint label_center;
};

struct GraphLayout {
  std::vector<LayoutNode> nodes;
  std::vector<LayoutEdge> edges;
  double width = 0, height = 0;

  std::size_t operator_count() const;  // nodes that are PCG nodes (not output markers)
};

struct LayoutOptions {
  bool edge_labels = true;
};

// The graph as pcg::graph_to_dot draws it, laid out top to bottom. Throws LoomError when Graphviz fails.
GraphLayout layout_graph(const pcg::Graph& graph, const LayoutOptions& options = {});

}  // namespace loom::gui
