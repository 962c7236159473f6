// Which input element each element of a rearranging operator's output copies, worked out from the
// spec alone: the test a weight must pass to be folded.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "loom/interpreter/element_sources.hpp"
#include "test_support.hpp"

namespace loom::spec {
namespace {

std::optional<std::vector<std::int64_t>> sources(const std::string& op, const pcg::AttrMap& attrs,
                                                 const std::vector<std::vector<std::int64_t>>& dims) {
  return element_sources(*test::bundled().compiled(*test::bundled().find_op(op), attrs, dims), dims);
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

}  // namespace
}  // namespace loom::spec
