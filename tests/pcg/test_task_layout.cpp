#include <gtest/gtest.h>

#include "loom/pcg/diagnostic.hpp"
#include "loom/pcg/piece_moves.hpp"
#include "loom/pcg/task_layout.hpp"

namespace loom::pcg {
namespace {

ParallelShape shape(std::vector<std::int64_t> dims, std::vector<std::int64_t> D, std::int64_t V, std::int64_t R) {
  return ParallelShape::partitioned(std::move(dims), std::move(D), V, R);
}

TEST(TaskLayout, ReplicasOutermostThenPartialsThenBlocksLastFastest) {
  const ParallelShape s = shape({8, 6}, {2, 3}, 2, 2);  // 24 tasks
  EXPECT_EQ(task_piece(s, 0), (TaskPiece{0, 0, {0, 0}}));
  EXPECT_EQ(task_piece(s, 1), (TaskPiece{0, 0, {0, 1}}));
  EXPECT_EQ(task_piece(s, 3), (TaskPiece{0, 0, {1, 0}}));
  EXPECT_EQ(task_piece(s, 6), (TaskPiece{0, 1, {0, 0}}));
  EXPECT_EQ(task_piece(s, 23), (TaskPiece{1, 1, {1, 2}}));
  for (std::int64_t t = 0; t < s.tasks(); ++t) EXPECT_EQ(task_of(s, task_piece(s, t)), t);
  EXPECT_THROW(task_piece(s, 24), LoomError);
  EXPECT_EQ(piece_elements(s), 4 * 2);
}

TEST(TaskLayout, OverlapOfPiecesOfTwoLayouts) {
  const ParallelShape rows = shape({8, 4}, {2, 1}, 1, 1), quarters = shape({8, 4}, {4, 1}, 1, 1), cols = shape({8, 4}, {1, 2}, 1, 1);
  EXPECT_EQ(intersect(piece_region(rows, 0), piece_region(quarters, 1)).elements(), 2 * 4);
  EXPECT_EQ(intersect(piece_region(rows, 0), piece_region(quarters, 2)).elements(), 0);
  EXPECT_EQ(intersect(piece_region(rows, 1), piece_region(cols, 0)).elements(), 4 * 2);
  EXPECT_THROW(piece_moves(rows, MachineView{{0, 1}}, shape({4, 4}, {1, 1}, 1, 1), MachineView{{0}}), LoomError);
}

}  // namespace
}  // namespace loom::pcg
