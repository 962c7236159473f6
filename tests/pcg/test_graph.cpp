#include <gtest/gtest.h>

#include "error_text.hpp"
#include "fake_catalog.hpp"
#include "loom/pcg/diagnostic.hpp"
#include "loom/pcg/graph.hpp"

namespace loom::pcg {
namespace {

using test_support::contains;
using test_support::error_of;
using test_support::FakeCatalog;

ParallelShape shape(std::vector<std::int64_t> dims) { return ParallelShape::unpartitioned(std::move(dims)); }

// x[8, 4] -> matmul with w[4, 16] ("fc1") -> relu ("act") -> output.
struct Mlp {
  Graph graph;
  int x = 0, w = 0, fc1 = 0, act = 0;

  explicit Mlp(const OpCatalog& catalog) {
    x = graph.add_input("x", shape({8, 4}));
    w = graph.add_input("w", shape({4, 16}), /*is_weight=*/true);
    fc1 = graph.add_node(catalog, "matmul", {}, {{x, 0}, {w, 0}}, "fc1");
    act = graph.add_node(catalog, "relu", {}, {{fc1, 0}}, "act");
    graph.mark_output({act, 0});
  }
};

TEST(Graph, NodesGetIdsInCreationOrder) {
  const FakeCatalog catalog;
  const Mlp mlp(catalog);
  EXPECT_EQ(mlp.x, 0);
  EXPECT_EQ(mlp.w, 1);
  EXPECT_EQ(mlp.fc1, 2);
  EXPECT_EQ(mlp.act, 3);
  ASSERT_EQ(mlp.graph.size(), 4u);
  for (std::size_t i = 0; i < mlp.graph.size(); ++i) {
    EXPECT_EQ(mlp.graph.nodes()[i].id, static_cast<int>(i));
  }
}

TEST(Graph, OperatorCountLeavesOutInputsAndWeights) {
  const FakeCatalog catalog;
  Mlp mlp(catalog);
  EXPECT_EQ(mlp.graph.operator_count(), 2u);
  mlp.graph.add_input("y", shape({8, 4}));
  EXPECT_EQ(mlp.graph.operator_count(), 2u);
  mlp.graph.add_node(catalog, "relu", {}, {{mlp.act, 0}});
  EXPECT_EQ(mlp.graph.operator_count(), 3u);
  EXPECT_EQ(Graph().operator_count(), 0u);
}

TEST(Graph, InputsAndWeightsArePseudoOps) {
  const FakeCatalog catalog;
  const Mlp mlp(catalog);
  const Node& x = mlp.graph.node(mlp.x);
  EXPECT_EQ(x.op, "input");
  EXPECT_EQ(x.name, "x");
  EXPECT_TRUE(x.inputs.empty());
  EXPECT_EQ(x.output_shapes, std::vector<ParallelShape>{shape({8, 4})});
  EXPECT_TRUE(x.is_graph_input());
  EXPECT_EQ(mlp.graph.node(mlp.w).op, "weight");
  EXPECT_TRUE(mlp.graph.node(mlp.w).is_graph_input());
  EXPECT_FALSE(mlp.graph.node(mlp.fc1).is_graph_input());
}

TEST(Graph, AddNodeInfersOutputShapes) {
  const FakeCatalog catalog;
  const Mlp mlp(catalog);
  const Node& fc1 = mlp.graph.node(mlp.fc1);
  EXPECT_EQ(fc1.op, "matmul");
  EXPECT_EQ(fc1.name, "fc1");
  EXPECT_EQ(fc1.inputs, (std::vector<PortRef>{{mlp.x, 0}, {mlp.w, 0}}));
  EXPECT_EQ(fc1.output_shapes, std::vector<ParallelShape>{shape({8, 16})});
  EXPECT_EQ(mlp.graph.shape_of({mlp.act, 0}), shape({8, 16}));
}

TEST(Graph, AddNodeInfersParallelDegrees) {
  const FakeCatalog catalog;
  Graph g;
  ParallelShape a = shape({8, 4});
  a.D = {2, 2};
  ParallelShape b = shape({4, 6});
  b.D = {2, 1};
  b.R = 2;
  const int mm = g.add_node(catalog, "matmul", {}, {{g.add_input("a", a), 0}, {g.add_input("b", b), 0}});
  EXPECT_EQ(g.shape_of({mm, 0}).to_string(), "[8/2, 6]{V2}");
}

TEST(Graph, AddNodeKeepsAttributesAndSeveralOutputs) {
  const FakeCatalog catalog;
  Graph g;
  const int x = g.add_input("x", shape({8, 4}));
  const int s = g.add_node(catalog, "split", {{"axis", 1}}, {{x, 0}}, "halves");
  EXPECT_EQ(g.node(s).attrs, (AttrMap{{"axis", 1}}));
  ASSERT_EQ(g.node(s).output_shapes.size(), 2u);
  EXPECT_EQ(g.shape_of({s, 1}), shape({8, 2}));
}

// Adding `op` (called `name`) over one input of `dims` is refused with a message naming the node
// (`who`) and the cause (`why`), and leaves the graph as it was.
void expect_one_input_node_refused(const std::string& op, std::vector<std::int64_t> dims, const std::string& name, const std::string& who,
                                   const std::string& why) {
  const FakeCatalog catalog;
  Graph g;
  const NodeId x = g.add_input("x", shape(std::move(dims)));
  const std::string message = error_of([&] { g.add_node(catalog, op, {}, {{x, 0}}, name); });
  EXPECT_TRUE(contains(message, who)) << message;
  EXPECT_TRUE(contains(message, why)) << message;
  EXPECT_EQ(g.size(), 1u);
}

TEST(Graph, UnknownOpNamesNodeAndOp) {
  expect_one_input_node_refused("softmax", {8}, "probs", "node 1 \"probs\" (op softmax)", "unknown operator");
}

TEST(Graph, WrongInputCountIsRejected) {
  expect_one_input_node_refused("matmul", {8, 4}, "", "node 1 (op matmul)", "takes 2 input(s), got 1");
}

TEST(Graph, DanglingPortsAreRejected) {
  const FakeCatalog catalog;
  Graph g;
  const int x = g.add_input("x", shape({8}));
  const std::string missing_node = error_of([&] { g.add_node(catalog, "relu", {}, {{7, 0}}); });
  EXPECT_TRUE(contains(missing_node, "(op relu): input 0: node 7 does not exist"));
  const std::string missing_port = error_of([&] { g.add_node(catalog, "relu", {}, {{x, 1}}); });
  EXPECT_TRUE(contains(missing_port, "has 1 output(s), so it has no port 1"));
  EXPECT_TRUE(contains(error_of([&] { g.add_node(catalog, "relu", {}, {{x, -1}}); }), "port -1"));
  EXPECT_EQ(g.size(), 1u);
}

TEST(Graph, CatalogRejectionIsPrefixedWithTheNode) {
  const FakeCatalog catalog;
  Graph g;
  const int a = g.add_input("a", shape({8, 4}));
  const int b = g.add_input("b", shape({5, 2}));
  const std::string message = error_of([&] { g.add_node(catalog, "matmul", {}, {{a, 0}, {b, 0}}, "bad"); });
  EXPECT_TRUE(contains(message, "node 2 \"bad\" (op matmul): matmul: inner sizes differ (4 vs 5)"));
  EXPECT_EQ(g.size(), 2u);
}

TEST(Graph, NamesMustBeUniqueAndInputsNamed) {
  const FakeCatalog catalog;
  Graph g;
  const int x = g.add_input("x", shape({8}));
  EXPECT_TRUE(contains(error_of([&] { g.add_input("x", shape({4})); }), "already used by node 0"));
  EXPECT_TRUE(contains(error_of([&] { g.add_node(catalog, "relu", {}, {{x, 0}}, "x"); }), "already used"));
  EXPECT_TRUE(contains(error_of([&] { g.add_input("", shape({4})); }), "need a name"));
  g.add_node(catalog, "relu", {}, {{x, 0}});
  g.add_node(catalog, "relu", {}, {{x, 0}});  // several unnamed nodes are fine
  EXPECT_EQ(g.size(), 3u);
  EXPECT_EQ(g.find("x"), 0);
  EXPECT_EQ(g.find("nope"), std::nullopt);
  EXPECT_EQ(g.find(""), std::nullopt);
}

// A node renamed is found by its new name only, and its old name is free again; graphs built
// with the same names in the same places are equal.
TEST(Graph, ARenamedNodeIsFoundByItsNewName) {
  const FakeCatalog catalog;
  Graph g;
  const int x = g.add_input("x", shape({8}));
  const int r = g.add_node(catalog, "relu", {}, {{x, 0}}, "r");
  const int s = g.add_node(catalog, "relu", {}, {{r, 0}});
  g.set_name(r, "hidden");
  EXPECT_EQ(g.find("hidden"), r);
  EXPECT_EQ(g.find("r"), std::nullopt);
  g.set_name(s, "r");
  EXPECT_EQ(g.find("r"), s);
  EXPECT_TRUE(contains(error_of([&] { g.set_name(s, "hidden"); }), "already used by node 1"));
  g.set_name(r, "");
  EXPECT_EQ(g.find("hidden"), std::nullopt);
  EXPECT_TRUE(contains(error_of([&] { g.add_node(catalog, "relu", {}, {{s, 0}}, "r"); }), "already used by node 2"));
  EXPECT_TRUE(contains(error_of([&] { g.add_node(catalog, "relu", {}, {{7, 0}}, "t"); }), "input 0: node 7 does not exist"));

  Graph same;
  same.add_input("x", shape({8}));
  same.add_node(catalog, "relu", {}, {{x, 0}});
  same.add_node(catalog, "relu", {}, {{r, 0}}, "r");
  EXPECT_EQ(same, g);
}

TEST(Graph, InputShapesAreValidated) {
  Graph g;
  ParallelShape bad = shape({6});
  bad.D = {4};
  const std::string message = error_of([&] { g.add_input("x", bad); });
  EXPECT_TRUE(contains(message, "node 0 \"x\" (op input): invalid shape"));
  EXPECT_EQ(g.size(), 0u);
}

TEST(Graph, InputOpsCannotBeAddedAsOperators) {
  const FakeCatalog catalog;
  Graph g;
  EXPECT_TRUE(contains(error_of([&] { g.add_node(catalog, "input", {}, {}, "x"); }), "add_input"));
  EXPECT_TRUE(contains(error_of([&] { g.add_node(catalog, "weight", {}, {}, "w"); }), "add_input"));
}

TEST(Graph, MarkOutputChecksThePort) {
  const FakeCatalog catalog;
  Mlp mlp(catalog);
  EXPECT_EQ(mlp.graph.outputs(), (std::vector<PortRef>{{mlp.act, 0}}));
  EXPECT_TRUE(contains(error_of([&] { mlp.graph.mark_output({mlp.act, 0}); }), "already"));
  EXPECT_TRUE(contains(error_of([&] { mlp.graph.mark_output({9, 0}); }), "node 9 does not exist"));
  EXPECT_TRUE(contains(error_of([&] { mlp.graph.mark_output({mlp.fc1, 3}); }), "no port 3"));
  mlp.graph.mark_output({mlp.fc1, 0});
  EXPECT_EQ(mlp.graph.outputs().size(), 2u);
}

TEST(Graph, AccessorsRejectUnknownIds) {
  const FakeCatalog catalog;
  const Mlp mlp(catalog);
  EXPECT_THROW(mlp.graph.node(4), LoomError);
  EXPECT_THROW(mlp.graph.node(-1), LoomError);
  EXPECT_THROW(mlp.graph.shape_of({mlp.fc1, 1}), LoomError);
  EXPECT_THROW(mlp.graph.consumers(10), LoomError);
}

TEST(Graph, TopologicalOrderPutsProducersFirst) {
  const FakeCatalog catalog;
  const Mlp mlp(catalog);
  const std::vector<NodeId> order = mlp.graph.topological_order();
  ASSERT_EQ(order.size(), mlp.graph.size());
  std::vector<int> position(order.size());
  for (std::size_t i = 0; i < order.size(); ++i) position[order[i].index()] = static_cast<int>(i);
  for (const Node& n : mlp.graph.nodes()) {
    for (PortRef in : n.inputs) EXPECT_LT(position[in.node.index()], position[n.id.index()]);
  }
}

TEST(Graph, ConsumersAndUses) {
  const FakeCatalog catalog;
  Graph g;
  const NodeId x = g.add_input("x", shape({4, 4}));
  const NodeId sq = g.add_node(catalog, "matmul", {}, {{x, 0}, {x, 0}}, "square");
  const NodeId r = g.add_node(catalog, "relu", {}, {{x, 0}});
  const NodeId s = g.add_node(catalog, "split", {{"axis", 0}}, {{sq, 0}});
  const NodeId r1 = g.add_node(catalog, "relu", {}, {{s, 1}});
  EXPECT_EQ(g.consumers(x), (std::vector<NodeId>{sq, r}));  // once each, though sq reads x twice
  EXPECT_EQ(g.consumers(sq), (std::vector<NodeId>{s}));
  EXPECT_EQ(g.consumers(r), std::vector<NodeId>{});
  const std::vector<std::vector<NodeId>> all = g.all_consumers();
  ASSERT_EQ(all.size(), g.size());
  for (const Node& n : g.nodes()) EXPECT_EQ(all[n.id.index()], g.consumers(n.id)) << n.id;
  EXPECT_EQ(g.uses({x, 0}), (std::vector<Use>{{sq, 0}, {sq, 1}, {r, 0}}));
  EXPECT_EQ(g.uses({s, 0}), std::vector<Use>{});
  EXPECT_EQ(g.uses({s, 1}), (std::vector<Use>{{r1, 0}}));
  EXPECT_TRUE(g.read_only_by(sq, s));
  EXPECT_FALSE(g.read_only_by(x, sq));  // r reads it too
  EXPECT_FALSE(g.read_only_by(sq, r));
  g.mark_output({sq, 0});
  EXPECT_FALSE(g.read_only_by(sq, s));  // the loss reads a graph output too
}

TEST(Graph, SetViewNeedsOneDevicePerTask) {
  const FakeCatalog catalog;
  Graph g;
  ParallelShape split_rows = shape({8, 4});
  split_rows.D = {4, 1};
  const int x = g.add_input("x", split_rows);
  g.set_view(x, MachineView::contiguous(2, 4));
  EXPECT_EQ(g.node(x).view, MachineView::contiguous(2, 4));
  const std::string message = error_of([&] { g.set_view(x, MachineView::contiguous(0, 2)); });
  EXPECT_TRUE(contains(message, "places 2 task(s), but the node runs as 4"));
  EXPECT_EQ(g.node(x).view, MachineView::contiguous(2, 4));
  EXPECT_THROW(g.set_view(5, MachineView{}), LoomError);
}

TEST(Graph, ValidateAcceptsAGraphBuiltWithTheSameCatalog) {
  const FakeCatalog catalog;
  Mlp mlp(catalog);
  mlp.graph.set_view(mlp.fc1, MachineView::contiguous(0, 1));
  EXPECT_NO_THROW(mlp.graph.validate(catalog));
}

TEST(Graph, ValidateReportsEveryNodeThatNoLongerInfers) {
  const FakeCatalog catalog;
  Graph g;
  const int x = g.add_input("x", shape({4}));
  g.add_node(catalog, "relu", {}, {{x, 0}}, "first");
  g.add_node(catalog, "relu", {}, {{x, 0}}, "second");
  const FakeCatalog changed(/*relu_scale=*/2);
  try {
    g.validate(changed);
    FAIL() << "validate accepted shapes the catalog no longer infers";
  } catch (const LoomError& e) {
    ASSERT_EQ(e.diagnostics().size(), 2u) << e.what();
    EXPECT_TRUE(contains(e.diagnostics()[0].message, "node 1 \"first\" (op relu)"));
    EXPECT_TRUE(contains(e.diagnostics()[0].message, "([4]) differ from the inferred ([8])"));
    EXPECT_TRUE(contains(e.diagnostics()[1].message, "node 2 \"second\""));
  }
}

// A catalog that knows no operators, as after a spec was removed.
class EmptyCatalog : public FakeCatalog {
 public:
  bool has_op(const std::string&) const override { return false; }
};

TEST(Graph, ValidateReportsOperatorsTheCatalogLacks) {
  const FakeCatalog catalog;
  const Mlp mlp(catalog);
  const std::string message = error_of([&] { mlp.graph.validate(EmptyCatalog()); });
  EXPECT_TRUE(contains(message, "node 2 \"fc1\" (op matmul): unknown operator"));
  EXPECT_TRUE(contains(message, "node 3 \"act\" (op relu): unknown operator"));
  EXPECT_FALSE(contains(message, "(op input)"));
}

TEST(Graph, EqualityComparesStructure) {
  const FakeCatalog catalog;
  const Mlp a(catalog);
  Mlp b(catalog);
  EXPECT_EQ(a.graph, b.graph);
  b.graph.set_view(b.act, MachineView::contiguous(1, 1));
  EXPECT_NE(a.graph, b.graph);
}

}  // namespace
}  // namespace loom::pcg
