#include <gtest/gtest.h>

#include "loom/pcg/piece_moves.hpp"

namespace loom::pcg {
namespace {

ParallelShape layout(std::vector<std::int64_t> dims, std::vector<std::int64_t> D, std::int64_t V = 1, std::int64_t R = 1) {
  return ParallelShape::partitioned(std::move(dims), std::move(D), V, R);
}

TEST(PieceMoves, RegionsOfAPartitionedTensor) {
  const ParallelShape s = layout({8, 6}, {2, 3});
  EXPECT_EQ(piece_region(s, 0), (Region{{0, 0}, {4, 2}}));
  EXPECT_EQ(piece_region(s, 5), (Region{{4, 4}, {8, 6}}));
  EXPECT_EQ(intersect(piece_region(s, 0), piece_region(s, 1)).elements(), 0);
}

TEST(PieceMoves, CombineGathersEveryBlock) {
  const std::vector<PieceMove> moves =
      piece_moves(layout({8, 4}, {4, 1}), MachineView{{0, 1, 2, 3}}, layout({8, 4}, {1, 1}), MachineView{{0}});
  ASSERT_EQ(moves.size(), 4u);
  std::int64_t total = 0;
  for (std::size_t i = 0; i < moves.size(); ++i) {
    EXPECT_EQ(moves[i].from, static_cast<std::int64_t>(i));
    EXPECT_EQ(moves[i].to, 0);
    total += moves[i].region.elements();
  }
  EXPECT_EQ(total, 32);
}

TEST(PieceMoves, ReduceSumsEveryPartialIntoEachPiece) {
  // [4, 4]{V2} on devices 0, 1 to [4/2, 4] on devices 0, 1: each new row block sums both partials' rows.
  const std::vector<PieceMove> moves =
      piece_moves(layout({4, 4}, {1, 1}, 2), MachineView{{0, 1}}, layout({4, 4}, {2, 1}), MachineView{{0, 1}});
  ASSERT_EQ(moves.size(), 4u);
  EXPECT_EQ(moves[0], (PieceMove{0, 0, Region{{0, 0}, {2, 4}}}));
  EXPECT_EQ(moves[1], (PieceMove{1, 0, Region{{0, 0}, {2, 4}}}));
  EXPECT_EQ(moves[3], (PieceMove{1, 1, Region{{2, 0}, {4, 4}}}));
}

TEST(PieceMoves, ReadsTheReplicaOnItsOwnDevice) {
  // Two replicas on devices 4 and 7; a piece wanted on device 7 reads the second.
  const std::vector<PieceMove> moves = piece_moves(layout({4}, {1}, 1, 2), MachineView{{4, 7}}, layout({4}, {2}), MachineView{{3, 7}});
  ASSERT_EQ(moves.size(), 2u);
  EXPECT_EQ(moves[0].from, 0);
  EXPECT_EQ(moves[1].from, 1);
}

}  // namespace
}  // namespace loom::pcg

namespace loom::pcg {
namespace {

TEST(PieceMoves, WholeRegionsAndOverlaps) {
  const Region all = whole_region({4, 6});
  EXPECT_EQ(all.elements(), 24);
  const Region top{{0, 0}, {2, 6}}, bottom{{2, 0}, {4, 6}}, middle{{1, 0}, {3, 6}};
  EXPECT_FALSE(any_overlap({top, bottom}));
  EXPECT_TRUE(any_overlap({top, bottom, middle}));
  EXPECT_TRUE(any_overlap({all, all}));
  EXPECT_TRUE(top < bottom || bottom < top);  // regions order as map keys
}

}  // namespace
}  // namespace loom::pcg
