// Which input each chain of layout changes runs from, with a collective test given by the test.
#include <gtest/gtest.h>

#include <set>
#include <utility>

#include "loom/pcg/layout_fusion.hpp"

namespace loom::pcg {
namespace {

// A producer on device 0, then `changes` layout changes, change i on device i + 1: each node's one
// device names it for the collective test.
struct Chain {
  Graph graph;
  NodeId producer;
  std::vector<NodeId> changes;
};

Chain chain_of(int changes) {
  Chain c;
  const ParallelShape shape = ParallelShape::unpartitioned({4, 4});
  const NodeId x = c.graph.add_input("x", shape);
  c.producer = c.graph.add_node_with_shapes("producer", {}, {{x, 0}}, {shape});
  NodeId at = c.producer;
  for (int i = 0; i < changes; ++i) {
    at = c.graph.add_node_with_shapes("change", {}, {{at, 0}}, {shape});
    c.changes.push_back(at);
  }
  c.graph.mark_output({at, 0});
  return c;
}

// The chain fused where the change from device a's value to device b's is one collective, for
// each pair (a, b) in `one`.
LayoutChangeSources fused(const Chain& c, const std::set<std::pair<int, int>>& one) {
  return fuse_layout_changes(
      c.graph, [](const Node& n) { return n.op == "change"; },
      [&c](const Node& n) { return MachineView{{static_cast<int>(n.id.index() - c.producer.index())}}; }, true,
      [&one](const ParallelShape&, const MachineView& a, const ParallelShape&, const MachineView& b) {
        return one.count({a.devices.front(), b.devices.front()}) > 0;
      });
}

PortRef output_of(NodeId n) { return {n, 0}; }

TEST(LayoutFusion, AChainRunsAsOneChangeFromItsFirstInput) {
  const Chain c = chain_of(2);
  const LayoutChangeSources f = fused(c, {{0, 2}});
  EXPECT_EQ(f.source[c.changes[1].index()], output_of(c.producer));
  EXPECT_TRUE(f.fused_away[c.changes[0].index()]);
  EXPECT_FALSE(f.fused_away[c.changes[1].index()]);
}

TEST(LayoutFusion, NothingFusesWhereNoChainIsOneCollective) {
  const Chain c = chain_of(3);
  const LayoutChangeSources f = fused(c, {});
  for (std::size_t i = 0; i < c.changes.size(); ++i) {
    EXPECT_EQ(f.source[c.changes[i].index()], (PortRef{i == 0 ? c.producer : c.changes[i - 1], 0}));
    EXPECT_FALSE(f.fused_away[c.changes[i].index()]);
  }
}

// The last change may run from the first change or from the producer: the farthest is
// taken, and the walk goes on past the first fusion it finds.
TEST(LayoutFusion, TheWalkGoesOnPastAFusionToTheFarthestInput) {
  const Chain c = chain_of(3);
  const LayoutChangeSources f = fused(c, {{1, 3}, {0, 3}});
  EXPECT_EQ(f.source[c.changes[2].index()], output_of(c.producer));
  EXPECT_TRUE(f.fused_away[c.changes[0].index()]);
  EXPECT_TRUE(f.fused_away[c.changes[1].index()]);
  EXPECT_FALSE(f.fused_away[c.changes[2].index()]);
}

// The third change already runs from the first (the second fused away); the fourth walks back
// past both to the producer.
TEST(LayoutFusion, TheWalkGoesOnPastTheChangesAnEarlierChangeFused) {
  const Chain c = chain_of(4);
  const LayoutChangeSources f = fused(c, {{1, 3}, {0, 4}});
  EXPECT_EQ(f.source[c.changes[3].index()], output_of(c.producer));
  for (std::size_t i = 0; i < 3; ++i) EXPECT_TRUE(f.fused_away[c.changes[i].index()]) << i;
}

// A change whose value is also read elsewhere, or is an output, must run: nothing fuses past it.
TEST(LayoutFusion, AChangeReadTwiceOrAnOutputRuns) {
  Chain c = chain_of(3);
  c.graph.mark_output({c.changes[0], 0});
  const LayoutChangeSources f = fused(c, {{0, 3}, {1, 3}});
  EXPECT_EQ(f.source[c.changes[2].index()], output_of(c.changes[0]));
  EXPECT_FALSE(f.fused_away[c.changes[0].index()]);
  EXPECT_TRUE(f.fused_away[c.changes[1].index()]);
}

TEST(LayoutFusion, AChangeReadByAnotherOperatorToo) {
  Chain c = chain_of(3);
  c.graph.add_node_with_shapes("operator", {}, {{c.changes[0], 0}}, {c.graph.node(c.changes[0]).output_shapes[0]});
  const LayoutChangeSources f = fused(c, {{0, 3}, {1, 3}});
  EXPECT_EQ(f.source[c.changes[2].index()], output_of(c.changes[0]));
  EXPECT_FALSE(f.fused_away[c.changes[0].index()]);
  EXPECT_TRUE(f.fused_away[c.changes[1].index()]);
}

TEST(LayoutFusion, WithoutFusionEachChangeRunsFromItsInput) {
  const Chain c = chain_of(3);
  const LayoutChangeSources f = fuse_layout_changes(
      c.graph, [](const Node& n) { return n.op == "change"; }, [](const Node&) { return MachineView{{0}}; }, false,
      [](const ParallelShape&, const MachineView&, const ParallelShape&, const MachineView&) { return true; });
  for (std::size_t i = 0; i < c.changes.size(); ++i) {
    EXPECT_EQ(f.source[c.changes[i].index()], (PortRef{i == 0 ? c.producer : c.changes[i - 1], 0}));
    EXPECT_FALSE(f.fused_away[c.changes[i].index()]);
  }
}

// A change that only makes an output nobody reads is left out where an operator computed what it
// moves, and runs where it moves a graph input, which is held whole rather than in pieces.
TEST(LayoutFusion, AnUnreadOutputOfAComputedValueIsLeftOut) {
  const Chain c = chain_of(1);
  EXPECT_TRUE(is_unread_output(c.graph, c.changes[0], output_of(c.producer)));
  Graph g;
  const NodeId x = g.add_input("x", ParallelShape::unpartitioned({4, 4}));
  const NodeId change = g.add_node_with_shapes("change", {}, {{x, 0}}, {ParallelShape::unpartitioned({4, 4})});
  g.mark_output({change, 0});
  EXPECT_FALSE(is_unread_output(g, change, {x, 0}));
  Chain read = chain_of(1);
  read.graph.add_node_with_shapes("reader", {}, {{read.changes[0], 0}}, {ParallelShape::unpartitioned({4, 4})});
  EXPECT_FALSE(is_unread_output(read.graph, read.changes[0], output_of(read.producer)));
}

}  // namespace
}  // namespace loom::pcg
