// Which input element each element of a rearranging operator's output copies, worked out from the
// spec alone: the test a weight must pass to be folded.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "loom/interpreter/element_sources.hpp"
#include "test_support.hpp"

namespace loom::spec {
namespace {

// The sources, after checking that the question the rewrite engine asks (whether there are any,
// with a bit per element) gets the same answer.
std::optional<std::vector<std::int64_t>> sources(const std::string& op, const pcg::AttrMap& attrs,
                                                 const std::vector<std::vector<std::int64_t>>& dims) {
  const Program& program = *test::bundled().compiled(*test::bundled().find_op(op), attrs, dims);
  std::optional<std::vector<std::int64_t>> got = element_sources(program, dims);
  EXPECT_EQ(moves_each_element_once(program, dims), got.has_value()) << op;
  return got;
}

TEST(ElementSources, AConcatenationAlongRowsTakesTheFirstInputThenTheSecond) {
  const auto got = sources("concat", {{"axis", 0}}, {{2, 2}, {1, 2}});
  ASSERT_TRUE(got);
  EXPECT_EQ(*got, (std::vector<std::int64_t>{0, 1, 2, 3, 4, 5}));
}

TEST(ElementSources, AConcatenationAlongColumnsInterleavesTheRows) {
  // out[i] = [a[i, 0], b[i, 0], b[i, 1]]; a holds elements 0-1, b elements 2-5.
  const auto got = sources("concat", {{"axis", 1}}, {{2, 1}, {2, 2}});
  ASSERT_TRUE(got);
  EXPECT_EQ(*got, (std::vector<std::int64_t>{0, 2, 3, 1, 4, 5}));
}

TEST(ElementSources, ATransposeTakesEachColumnAsARow) {
  // out[j, i] = x[i, j] for x of [2, 3]: out's element 2j + i copies x's element 3i + j.
  const auto got = sources("transpose", {}, {{2, 3}});
  ASSERT_TRUE(got);
  EXPECT_EQ(*got, (std::vector<std::int64_t>{0, 3, 1, 4, 2, 5}));
}

TEST(ElementSources, AnOperatorThatComputesOrCopiesTwiceHasNone) {
  EXPECT_FALSE(sources("relu", {}, {{2, 3}}));
  EXPECT_FALSE(sources("matmul", {}, {{2, 3}, {3, 1}}));
  EXPECT_FALSE(sources("split", {{"axis", 0}, {"at", 1}}, {{2, 3}}));  // two outputs
  EXPECT_FALSE(test::bundled().moves_each_element_once(
      "ewadd", {}, {pcg::ParallelShape::unpartitioned({2, 2}), pcg::ParallelShape::unpartitioned({2, 2})}));
  EXPECT_TRUE(test::bundled().moves_each_element_once(
      "concat", {{"axis", 1}}, {pcg::ParallelShape::unpartitioned({2, 2}), pcg::ParallelShape::unpartitioned({2, 3})}));
}

// Indices computed by division and remainder: merging two axes keeps the row-major order.
TEST(ElementSources, MergingTwoAxesKeepsTheOrder) {
  const auto got = sources("merge_axes", {{"axis", 0}}, {{2, 3}});
  ASSERT_TRUE(got);
  EXPECT_EQ(*got, (std::vector<std::int64_t>{0, 1, 2, 3, 4, 5}));
  const auto padded_by_nothing = sources("pad_axis", {{"axis", 0}, {"before", 0}, {"after", 0}}, {{2, 3}});
  ASSERT_TRUE(padded_by_nothing);
  EXPECT_EQ(*padded_by_nothing, (std::vector<std::int64_t>{0, 1, 2, 3, 4, 5}));
}

// Picks of input elements that are not each element once: outputs of another size than the
// inputs (padding, enlarging a kernel, a slice, an expansion); of the same size, a read outside the
// input (a shift) or one element taken twice.
TEST(ElementSources, PaddingSlicingOrRepeatingHasNone) {
  EXPECT_FALSE(sources("pad_axis", {{"axis", 0}, {"before", 1}, {"after", 0}}, {{2, 3}}));
  EXPECT_FALSE(sources("enlarge", {{"kh", 3}, {"kw", 3}}, {{1, 1, 1, 1}}));
  EXPECT_FALSE(sources("slice_axis", {{"axis", 0}, {"start", 0}, {"size", 1}}, {{2, 3}}));
  EXPECT_FALSE(sources("expand_axis", {{"axis", 0}, {"size", 2}}, {{1, 3}}));
  const Library lib = Library::from_text(
      "op first_row_twice(x: [m, n]) -> [m, n] {\n  out[i, j] = x[i / m, j];\n}\n"
      "op shift_up(x: [m, n]) -> [m, n] {\n  out[i, j] = x[i + 1, j];\n}\n");
  const std::vector<std::vector<std::int64_t>> dims = {{2, 3}};
  for (const char* op : {"first_row_twice", "shift_up"}) {
    const Program& program = *lib.compiled(*lib.find_op(op), {}, dims);
    EXPECT_FALSE(element_sources(program, dims)) << op;
    EXPECT_FALSE(moves_each_element_once(program, dims)) << op;
  }
}

}  // namespace
}  // namespace loom::spec
