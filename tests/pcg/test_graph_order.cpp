// Renumbering a graph so that its creation order also runs some nodes ahead of others that do not
// read them (a schedule's order): the data still flows forward, everything else is kept.
#include <gtest/gtest.h>

#include "error_text.hpp"
#include "fake_catalog.hpp"
#include "loom/pcg/diagnostic.hpp"
#include "loom/pcg/graph_order.hpp"

namespace loom::pcg {
namespace {

using test_support::contains;
using test_support::error_of;
using test_support::FakeCatalog;

ParallelShape shape(std::vector<std::int64_t> dims) { return ParallelShape::unpartitioned(std::move(dims)); }

// Two branches over x: a = relu(x), b = relu(a); c = relu(x), placed on device 3. Outputs b and c.
struct Branches {
  Graph graph;
  NodeId x, a, b, c;

  explicit Branches(const OpCatalog& catalog) {
    x = graph.add_input("x", shape({8, 4}));
    a = graph.add_node(catalog, "relu", {}, {{x, 0}}, "a");
    b = graph.add_node(catalog, "relu", {}, {{a, 0}}, "b");
    c = graph.add_node(catalog, "relu", {}, {{x, 0}});
    graph.set_view(c, MachineView{{3}});
    graph.mark_output({b, 0});
    graph.mark_output({c, 0});
  }
};

TEST(GraphOrder, AGraphThatHonorsTheConstraintsComesBackUnchanged) {
  const FakeCatalog catalog;
  const Branches g(catalog);
  std::vector<NodeId> ids;
  EXPECT_EQ(ordered_by(g.graph, {}, &ids), g.graph);
  EXPECT_EQ(ids, (std::vector<NodeId>{0, 1, 2, 3}));
  EXPECT_EQ(ordered_by(g.graph, {{g.a, g.c}, {g.x, g.b}}), g.graph);
}

TEST(GraphOrder, AConstraintMovesANodeAheadAsLittleAsItMust) {
  const FakeCatalog catalog;
  const Branches g(catalog);
  std::vector<NodeId> ids;
  const Graph out = ordered_by(g.graph, {{g.c, g.b}}, &ids);
  // c now runs ahead of b, but a keeps its place ahead of both.
  EXPECT_EQ(ids, (std::vector<NodeId>{0, 1, 3, 2}));
  ASSERT_EQ(out.size(), g.graph.size());
  for (const Node& n : g.graph.nodes()) {
    const Node& moved = out.node(ids[n.id.index()]);
    EXPECT_EQ(moved.op, n.op);
    EXPECT_EQ(moved.name, n.name);
    EXPECT_EQ(moved.view, n.view);
    EXPECT_EQ(moved.output_shapes, n.output_shapes);
    ASSERT_EQ(moved.inputs.size(), n.inputs.size());
    for (std::size_t i = 0; i < n.inputs.size(); ++i) {
      EXPECT_EQ(moved.inputs[i].node, ids[n.inputs[i].node.index()]);
      EXPECT_LT(moved.inputs[i].node, moved.id);
    }
  }
  EXPECT_EQ(out.outputs(), (std::vector<PortRef>{{ids[g.b.index()], 0}, {ids[g.c.index()], 0}}));
  EXPECT_EQ(out.node(ids[g.x.index()]).op, std::string(kInputOp));
}

TEST(GraphOrder, AWeightStaysAWeight) {
  const FakeCatalog catalog;
  Graph g;
  const NodeId x = g.add_input("x", shape({8, 4}));
  const NodeId w = g.add_input("w", shape({4, 16}), true);
  const NodeId mm = g.add_node(catalog, "matmul", {}, {{x, 0}, {w, 0}}, "mm");
  const NodeId r = g.add_node(catalog, "relu", {}, {{x, 0}}, "r");
  g.mark_output({mm, 0});
  g.mark_output({r, 0});
  std::vector<NodeId> ids;
  const Graph out = ordered_by(g, {{r, mm}}, &ids);
  EXPECT_EQ(out.node(ids[w.index()]).op, std::string(kWeightOp));
  EXPECT_LT(ids[r.index()], ids[mm.index()]);
  EXPECT_EQ(out.outputs()[1], (PortRef{ids[r.index()], 0}));
}

TEST(GraphOrder, AConstraintAgainstTheDataIsACycleNamedByItsNodes) {
  const FakeCatalog catalog;
  const Branches g(catalog);
  const std::string message = error_of([&] { ordered_by(g.graph, {{g.b, g.a}}); });
  EXPECT_TRUE(contains(message, "close a cycle: node 2 \"b\" (op relu) -> node 1 \"a\" (op relu) -> node 2 \"b\" (op relu)"));
  EXPECT_FALSE(contains(message, "op input"));  // x, behind the cycle, is no part of it
  EXPECT_FALSE(contains(message, "node 3"));    // nor is c
  EXPECT_TRUE(contains(error_of([&] { ordered_by(g.graph, {{g.c, g.c}}); }), "node 3 (op relu) is ordered ahead of itself"));
  EXPECT_THROW(ordered_by(g.graph, {{g.a, NodeId(99)}}), LoomError);
}

}  // namespace
}  // namespace loom::pcg
