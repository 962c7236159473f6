// The audit's replay check: a graph computes what another does up to parallel forms and machine views.
#include <gtest/gtest.h>

#include "loom/search/replay.hpp"
#include "search_support.hpp"

namespace loom::search {
namespace {

using test_support::library;
using test_support::shape;

// x · w, then `activation`; with `split`, the product's rows are partitioned over two devices and
// (with `combined`) combined again after the activation.
pcg::Graph product(const std::string& activation, bool split, const std::string& weight = "w", bool combined = true) {
  pcg::Graph g;
  const int x = g.add_input("x", shape({8, 4}));
  const int w = g.add_input(weight, shape({4, 6}), true);
  pcg::PortRef in{x, 0}, wp{w, 0};
  if (split) {
    in = {g.add_node(library(), "partition", {{"dim", 0}, {"degree", 2}}, {in}), 0};
    wp = {g.add_node(library(), "replicate", {{"degree", 2}}, {wp}), 0};
  }
  int y = g.add_node(library(), "matmul", {}, {in, wp});
  y = g.add_node(library(), activation, {}, {{y, 0}}, "act");
  if (split && combined) y = g.add_node(library(), "combine", {{"dim", 0}, {"degree", 2}}, {{y, 0}});
  g.mark_output({y, 0});
  return g;
}

TEST(ValueDifference, ParallelFormsAndMachineViewsChangeNothing) {
  pcg::Graph mapped = product("relu", true);
  for (const pcg::Node& n : mapped.nodes()) mapped.set_view(n.id, pcg::MachineView::contiguous(0, n.tasks()));
  EXPECT_FALSE(value_difference(product("relu", false), mapped, library()).has_value());
  EXPECT_FALSE(value_difference(product("relu", true), product("relu", false), library()).has_value());
}

TEST(ValueDifference, AnOutputLeftSplitIsNamed) {
  const auto difference = value_difference(product("relu", false), product("relu", true, "w", false), library());
  ASSERT_TRUE(difference.has_value());
  EXPECT_NE(difference->find("output 0 is delivered as [8/2, 6], the replayed graph's as [8, 6]"), std::string::npos) << *difference;
}

TEST(ValueDifference, AnEditedOperatorIsNamed) {
  const auto difference = value_difference(product("relu", false), product("tanh", true), library());
  ASSERT_TRUE(difference.has_value());
  EXPECT_NE(difference->find("\"act\" (op tanh) computes a value that no operator of the replayed graph computes"), std::string::npos)
      << *difference;
}

TEST(ValueDifference, ARenamedInputIsNamed) {
  const auto difference = value_difference(product("relu", false), product("relu", false, "v"), library());
  ASSERT_TRUE(difference.has_value());
  EXPECT_NE(difference->find("weight v [4, 6]"), std::string::npos) << *difference;
}

TEST(ValueDifference, AnExtraOperatorIsNamedEvenWhereNoOutputReadsIt) {
  pcg::Graph extra = product("relu", false);
  extra.add_node(library(), "relu", {}, {{0, 0}}, "dead");
  const auto difference = value_difference(product("relu", false), extra, library());
  ASSERT_TRUE(difference.has_value());
  EXPECT_NE(difference->find("\"dead\""), std::string::npos) << *difference;
}

}  // namespace
}  // namespace loom::search
