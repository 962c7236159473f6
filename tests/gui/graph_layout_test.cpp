#include "loom/gui/graph_layout.hpp"

#include <chrono>
#include <set>

#include <gtest/gtest.h>

#include "loom/gui/graph_view.hpp"
#include "loom/gui/rule_sources.hpp"
#include "loom/models/registry.hpp"

namespace loom::gui {
namespace {

TEST(GraphLayout, PlacesEveryNodeAndEdgeOfASmallModel) {
  const pcg::Graph graph = models::build_model(*base_library(), "mlp_fig1");
  const GraphLayout layout = layout_graph(graph);
  EXPECT_EQ(layout.operator_count(), graph.size());
  std::size_t edges = graph.outputs().size();
  for (const pcg::Node& n : graph.nodes()) edges += n.inputs.size();
  EXPECT_EQ(layout.edges.size(), edges);
  std::set<std::pair<long, long>> centers;
  for (const LayoutNode& n : layout.nodes) {
    EXPECT_GT(n.width, 0);
    EXPECT_GT(n.height, 0);
    EXPECT_FALSE(n.label.empty());
    centers.insert({std::lround(n.center.x), std::lround(n.center.y)});
  }
  EXPECT_EQ(centers.size(), layout.nodes.size()) << "two nodes share a position";
  for (const LayoutEdge& e : layout.edges) {
    EXPECT_GE(e.spline.size(), 4u);
    EXPECT_FALSE(e.label.empty()) << "edges carry their parallel shape";
    // dot lays out top to bottom: an edge goes down the page
    EXPECT_LT(layout.nodes[static_cast<std::size_t>(e.from)].center.y, layout.nodes[static_cast<std::size_t>(e.to)].center.y);
  }
}

TEST(GraphLayout, EdgeLabelsCanBeLeftOut) {
  const pcg::Graph graph = models::build_model(*base_library(), "mlp_fig1");
  LayoutOptions options;
  options.edge_labels = false;
  for (const LayoutEdge& e : layout_graph(graph, options).edges) EXPECT_TRUE(e.label.empty());
}

TEST(GraphView, DrawsA400OperatorModelQuickly) {
  const pcg::Graph graph = models::build_model(*base_library(), "bert_large");
  ASSERT_GT(graph.size(), 300u);
  GraphView view;
  view.resize(800, 600);
  GraphStyle style;
  style.edge_labels = false;
  const auto start = std::chrono::steady_clock::now();
  view.show_graph(graph, style);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(view.drawn_nodes(), static_cast<int>(graph.size()));
  EXPECT_LT(seconds, 20.0);
  EXPECT_LT(view.zoom(), 1.0) << "a large graph is fitted into the view";
}

}  // namespace
}  // namespace loom::gui
