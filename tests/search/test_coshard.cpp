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

}  // namespace
}  // namespace loom::search
