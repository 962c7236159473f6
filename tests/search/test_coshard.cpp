// Co-shard placements: each operator cut finer along the dimension its placement splits, the
// pieces of a former piece in turn on its device; the plan computes the same values.
#include <gtest/gtest.h>

#include "loom/models/registry.hpp"
#include "loom/search/baselines.hpp"
#include "loom/search/coshard.hpp"
#include "search_support.hpp"

namespace loom::search {
namespace {

using namespace test_support;

TEST(Coshard, CutsEachOperatorFinerAlongItsSplitOnTheSameDevices) {
  const pcg::Graph g = models::build_model(library(), "mlp_fig1", {{"batch", 8}, {"in", 12}, {"hidden", 16}, {"out", 4}});
  const Machine machine = load_machine("summit").with_devices_per_node(2);
  const std::vector<Placement> data = data_parallel(library(), g, machine);
  std::size_t cut = 0;
  const std::vector<Placement> co = coshard_placements(library(), g, data, 2, &cut);
  ASSERT_EQ(co.size(), data.size());
  std::size_t operators = 0;
  for (const pcg::Node& n : g.nodes()) {
    if (n.is_graph_input()) {
      EXPECT_EQ(co[n.id.index()], data[n.id.index()]);
      continue;
    }
    ++operators;
    SCOPED_TRACE(n.describe());
    const Placement& before = data[n.id.index()];
    const Placement& after = co[n.id.index()];
    ASSERT_EQ(before.config.tasks(), 2);
    EXPECT_EQ(after.config.tasks(), 4);
    // The same dimension, twice as finely, each device running the two halves of its former piece.
    EXPECT_EQ(after.config.split.substr(0, after.config.split.rfind('/')), before.config.split.substr(0, before.config.split.rfind('/')));
    const std::vector<int> was = before.view().devices;
    EXPECT_EQ(after.view().devices, (std::vector<int>{was[0], was[0], was[1], was[1]}));
  }
  EXPECT_EQ(cut, operators);
  const auto [expected, actual] = outputs_on_random_inputs(g, materialize(g, co, library()), 3);
  ASSERT_EQ(expected.size(), actual.size());
  for (std::size_t i = 0; i < expected[0].data.size(); ++i) EXPECT_NEAR(expected[0].data[i], actual[0].data[i], 1e-12);
}

TEST(Coshard, AnOperatorThatCannotBeCutFinerKeepsItsPlacement) {
  // A batch of 2 split in two: its pieces have one row, and nothing else of mlp_fig1's first matmul
  // is split, so it cannot be cut along the rows again.
  const pcg::Graph g = models::build_model(library(), "mlp_fig1", {{"batch", 2}});
  const Machine machine = load_machine("summit").with_devices_per_node(2);
  const std::vector<Placement> data = data_parallel(library(), g, machine);
  std::size_t cut = 0;
  const std::vector<Placement> co = coshard_placements(library(), g, data, 2, &cut);
  EXPECT_EQ(cut, 0u);
  EXPECT_EQ(co, data);
}

TEST(Coshard, OnlyTheOperatorsWithTheLargestPiecesAreCutWhenAsked) {
  const pcg::Graph g = models::build_model(library(), "mlp_fig1", {{"batch", 8}, {"in", 12}, {"hidden", 16}, {"out", 4}});
  const Machine machine = load_machine("summit").with_devices_per_node(2);
  const std::vector<Placement> data = data_parallel(library(), g, machine);
  // Its operators in order: the first product, its ReLU and the second product.
  std::vector<std::size_t> ops;
  std::size_t input = 0;
  for (const pcg::Node& n : g.nodes()) {
    if (n.is_graph_input())
      input = n.id.index();
    else
      ops.push_back(n.id.index());
  }
  ASSERT_EQ(ops.size(), 3u);
  const std::size_t fc1 = ops[0], h = ops[1], y = ops[2];
  // Split by the batch on two devices, fc1 and h give pieces of 4 x 16 values, y of 4 x 4: a quarter.
  const std::vector<bool> half = largest_pieces(g, data, 0.5);
  EXPECT_TRUE(half[fc1]);
  EXPECT_TRUE(half[h]);
  EXPECT_FALSE(half[y]);
  EXPECT_FALSE(half[input]);  // a graph input is no operator
  EXPECT_TRUE(largest_pieces(g, data, 0.25)[y]);
  std::size_t cut = 0;
  const std::vector<Placement> co = coshard_placements(library(), g, data, 2, &cut, half);
  EXPECT_EQ(cut, 2u);
  EXPECT_EQ(co[y], data[y]);
  EXPECT_EQ(co[fc1].config.tasks(), 4);
  EXPECT_EQ(co[h].config.tasks(), 4);
  const auto [expected, actual] = outputs_on_random_inputs(g, materialize(g, co, library()), 3);
  ASSERT_EQ(expected.size(), actual.size());
  for (std::size_t i = 0; i < expected[0].data.size(); ++i) EXPECT_NEAR(expected[0].data[i], actual[0].data[i], 1e-12);
}

}  // namespace
}  // namespace loom::search
