// The audit's replay check: a graph computes what another does up to parallel forms and machine views.
#include <gtest/gtest.h>

#include <algorithm>

#include "loom/interpreter/rule_files.hpp"
#include "loom/pcg/graph_json.hpp"
#include "loom/pcg/match.hpp"
#include "loom/pcg/rewrite.hpp"
#include "loom/pcg/weight_folding.hpp"
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

// x · a and x · b merged into one product of a weight folded from a and b.
pcg::Graph merged_products() {
  pcg::Graph g;
  const int x = g.add_input("x", shape({8, 4}));
  const int a = g.add_input("a", shape({4, 3}), true);
  const int b = g.add_input("b", shape({4, 5}), true);
  g.mark_output({g.add_node(library(), "matmul", {}, {{x, 0}, {a, 0}}), 0});
  g.mark_output({g.add_node(library(), "matmul", {}, {{x, 0}, {b, 0}}), 0});
  const auto& rules = test_support::unity_rules();
  const auto rule = std::find_if(rules.begin(), rules.end(), [](const pcg::Rule& r) { return r.id == "merge_matmuls"; });
  for (const pcg::Match& m : pcg::find_matches(pcg::GraphIndex(g), *rule))
    if (auto outcome = pcg::apply_match(g, *rule, m, library()); outcome.rewrite) return std::move(outcome.rewrite->graph);
  throw LoomError("merge_matmuls applies nowhere");
}

TEST(ValueDifference, AFoldedWeightIsComparedByWhatItIsMadeOf) {
  const pcg::Graph folded = merged_products();
  ASSERT_TRUE(pcg::has_folded_weights(folded));
  EXPECT_FALSE(value_difference(folded, pcg::unfolded(folded), library()).has_value());
  EXPECT_FALSE(value_difference(pcg::unfolded(folded), folded, library()).has_value());

  // The same plan with its recipe's parts swapped: the same names, shapes and operators elsewhere.
  nlohmann::json j = pcg::graph_to_json(folded);
  bool swapped = false;
  for (auto& node : j["nodes"])
    if (node.contains("folded_from"))
      for (auto& made : node["folded_from"]["nodes"])
        if (made["op"] == "concat") {
          std::swap(made["inputs"][0], made["inputs"][1]);
          made.erase("output_shapes");
          swapped = true;
        }
  ASSERT_TRUE(swapped);
  const pcg::Graph tampered = pcg::graph_from_json(j, library());
  const auto difference = value_difference(folded, tampered, library());
  ASSERT_TRUE(difference.has_value());
  EXPECT_NE(difference->find("(op concat) computes a value that no operator of the replayed graph computes"), std::string::npos)
      << *difference;
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
