// Which devices share their rows' statistics for cross-entropy over logits split along their classes.
#include <gtest/gtest.h>

#include "loom/pcg/diagnostic.hpp"
#include "loom/search/output_loss.hpp"

namespace loom::search {
namespace {

TEST(OutputLoss, OnlyCrossEntropyOverLogitsSplitAlongTheClassesSharesRowStatistics) {
  const pcg::ParallelShape classes_split = pcg::ParallelShape::partitioned({8, 6}, {1, 2});
  const pcg::ParallelShape rows_split = pcg::ParallelShape::partitioned({8, 6}, {2, 1});
  EXPECT_TRUE(shares_row_statistics(LossKind::CrossEntropy, classes_split, false));
  EXPECT_FALSE(shares_row_statistics(LossKind::CrossEntropy, classes_split, true));
  EXPECT_FALSE(shares_row_statistics(LossKind::MeanSquaredError, classes_split, false));
  EXPECT_FALSE(shares_row_statistics(LossKind::CrossEntropy, rows_split, false));
  EXPECT_EQ(output_rows({4, 3, 6}), 12);
  EXPECT_EQ(output_rows({}), 1);
}

// [8, 6] in 2 x 3 blocks, twice (R = 2): tasks 0-2 hold rows 0-3, tasks 3-5 rows 4-7, each a third of
// the classes; tasks 6-11 are the copies.
TEST(OutputLoss, DevicesHoldingTheSameRowsGatherTogetherAndCopiesTakeNoPart) {
  const pcg::ParallelShape held = pcg::ParallelShape::partitioned({8, 6}, {2, 3}, 1, 2);
  const std::vector<RowStatisticsGroup> groups = row_statistics_groups(held, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].devices, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(groups[0].rows, (pcg::Region{{0}, {4}}));
  EXPECT_EQ(groups[1].devices, (std::vector<int>{3, 4, 5}));
  EXPECT_EQ(groups[1].rows, (pcg::Region{{4}, {8}}));
  // A device holding every class of some rows gathers nothing for them.
  const std::vector<RowStatisticsGroup> one_alone = row_statistics_groups(held, {0, 0, 0, 3, 4, 3, 6, 7, 8, 9, 10, 11});
  ASSERT_EQ(one_alone.size(), 1u);
  EXPECT_EQ(one_alone[0].devices, (std::vector<int>{3, 4}));
  EXPECT_TRUE(row_statistics_groups(held, std::vector<int>(12, 0)).empty());
  try {
    row_statistics_groups(held, {0, 1});
    FAIL() << "two devices were taken for twelve tasks";
  } catch (const LoomError& e) {
    EXPECT_NE(std::string(e.what()).find("2 devices for the 12 tasks"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace loom::search
