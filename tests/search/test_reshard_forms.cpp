// Moves between parallel shapes are built from whatever parallel forms the library declares,
// recognised by their degree updates, not by their names.
#include <gtest/gtest.h>

#include "loom/pcg/diagnostic.hpp"
#include "loom/search/materialize.hpp"
#include "loom/search/reshard.hpp"
#include "search_support.hpp"

namespace loom::search {
namespace {

using test_support::library;

constexpr const char* kRenamedForms = R"(
parallel cut<axis: int in 0..7, ways: int in 2..64>(x) {
  require axis < rank;
  require shape[axis] % (D[axis] * P[axis] * ways) == 0;
  D[axis] *= ways;
  values split;
  backward glue<axis, ways>;
  lowers_to scatter;
}
parallel glue<axis: int in 0..7, ways: int in 2..64>(x) {
  require axis < rank;
  require D[axis] % ways == 0;
  D[axis] /= ways;
  values concat;
  backward cut<axis, ways>;
  lowers_to gather;
}
parallel copies<n: int in 2..64>(x) {
  R *= n;
  values copy;
  backward add_up<n>;
  lowers_to broadcast;
}
parallel add_up<n: int in 2..64>(x) {
  require V % n == 0;
  V /= n;
  values sum;
  backward copies<n>;
  lowers_to reduce;
}
fused move_split<a: int in 0..7, b: int in 0..7, k: int in 2..64>(x) = cut<b, k>(glue<a, k>(x)) lowers_to all_to_all;
)";

pcg::ParallelShape held(std::vector<std::int64_t> D, std::int64_t V, std::int64_t R) {
  return pcg::ParallelShape::partitioned({8, 12}, std::move(D), V, R);
}

std::vector<pcg::ParallelShape> every_small_shape() {
  std::vector<pcg::ParallelShape> out;
  for (std::int64_t d0 : {1, 2, 4})
    for (std::int64_t d1 : {1, 2, 4})
      for (std::int64_t V : {1, 2})
        for (std::int64_t R : {1, 2}) out.push_back(held({d0, d1}, V, R));
  return out;
}

// Runs the steps through the library's own shape rules and checks they arrive at `to`.
void expect_steps_arrive(const spec::Library& lib, const ReshardForms& forms) {
  int moves = 0;
  for (const pcg::ParallelShape& from : every_small_shape())
    for (const pcg::ParallelShape& to : every_small_shape()) {
      const auto steps = reshard_steps(forms, from, to);
      ASSERT_EQ(steps.has_value(), reshardable(from, to)) << from.to_string() << " -> " << to.to_string();
      if (!steps) continue;
      pcg::ParallelShape at = from;
      for (const ReshardStep& s : *steps) at = lib.infer(s.op, s.attrs, {at}).at(0);
      EXPECT_EQ(at, to) << from.to_string() << " -> " << to.to_string();
      ++moves;
    }
  EXPECT_GT(moves, 100);
}

TEST(ReshardForms, TheBundledFormsAreFoundByWhatTheyDo) {
  const ReshardForms forms = reshard_forms(library());
  EXPECT_EQ(forms.sum.op, "reduce");
  EXPECT_EQ(forms.join.op, "combine");
  EXPECT_EQ(forms.copy.op, "replicate");
  EXPECT_EQ(forms.split.op, "partition");
  ASSERT_TRUE(forms.swap);
  EXPECT_EQ(forms.swap->op, "all_to_all");
  expect_steps_arrive(library(), forms);
}

TEST(ReshardForms, FormsOfOtherNamesAndAttributesMoveValuesAlike) {
  const spec::Library lib = spec::Library::from_text(kRenamedForms);
  const ReshardForms forms = reshard_forms(lib);
  EXPECT_EQ(forms.split.op, "cut");
  EXPECT_EQ(forms.split.dim_attr, "axis");
  EXPECT_EQ(forms.split.degree_attr, "ways");
  EXPECT_EQ(forms.sum.op, "add_up");
  ASSERT_TRUE(forms.swap);
  EXPECT_EQ(forms.swap->from_attr, "a");
  EXPECT_EQ(forms.swap->to_attr, "b");
  expect_steps_arrive(lib, forms);

  const auto swap = reshard_steps(forms, held({2, 1}, 1, 1), held({1, 2}, 1, 1));
  ASSERT_TRUE(swap);
  ASSERT_EQ(swap->size(), 1u);
  EXPECT_EQ(swap->front().op, "move_split");
  EXPECT_EQ(swap->front().attrs, (pcg::AttrMap{{"a", 0}, {"b", 1}, {"k", 2}}));
}

TEST(ReshardForms, WithoutASwapFormASplitMovesByJoiningThenCutting) {
  std::string text = kRenamedForms;
  text.resize(text.find("fused move_split"));
  const spec::Library lib = spec::Library::from_text(text);
  const ReshardForms forms = reshard_forms(lib);
  EXPECT_FALSE(forms.swap);
  const auto steps = reshard_steps(forms, held({2, 1}, 1, 1), held({1, 2}, 1, 1));
  ASSERT_TRUE(steps);
  ASSERT_EQ(steps->size(), 2u);
  EXPECT_EQ((*steps)[0].op, "glue");
  EXPECT_EQ((*steps)[1].op, "cut");
  expect_steps_arrive(lib, forms);
}

TEST(ReshardForms, ALibraryWithoutACopyFormByAnAttributeIsRefusedSayingWhatIsMissing) {
  std::string text = kRenamedForms;
  text.resize(text.find("fused move_split"));
  const std::string by_attribute = "R *= n;";
  text.replace(text.find(by_attribute), by_attribute.size(), "R *= 2;");
  const spec::Library lib = spec::Library::from_text(text);
  try {
    reshard_forms(lib);
    FAIL() << "a library whose only copy form copies twice was accepted";
  } catch (const LoomError& e) {
    EXPECT_NE(std::string(e.what()).find("R *= degree"), std::string::npos) << e.what();
  }
}

// A plan that moves nothing needs no parallel forms; one that must move a value names the form
// the library lacks.
TEST(ReshardForms, OnlyAPlanThatMovesValuesNeedsTheForms) {
  const spec::Library lib = spec::Library::from_text("op twice(x: [n]) -> [n] { out[i] = x[i] * 2; }");
  pcg::Graph g;
  const pcg::PortRef x{g.add_input("x", pcg::ParallelShape::unpartitioned({4}), false), 0};
  const int node = g.add_node(lib, "twice", {}, {x});
  g.mark_output({node, 0});
  EXPECT_EQ(materialize(g, unsplit_placements(g), lib).size(), g.size());

  std::vector<Placement> split = unsplit_placements(g);
  pcg::ParallelShape halves = pcg::ParallelShape::unpartitioned({4});
  halves.D = {2};
  split[static_cast<std::size_t>(node)].config = {{halves}, {halves}, "input 0 dim 0 / 2"};
  try {
    materialize(g, split, lib);
    FAIL() << "a split was made without a form that cuts";
  } catch (const LoomError& e) {
    EXPECT_NE(std::string(e.what()).find("no parallel form whose only degree update is"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace loom::search
